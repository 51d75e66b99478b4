import { asc, eq, sql } from 'drizzle-orm'
import { auditKeyCreated, insertKey } from '../api-keys/service'
import { recordChange } from '../audit/record'
import type { Database, Tx } from '../db'
import { inTransaction, type Deps, type RootDeps } from '../deps'
import { accounts, memberships, people, settings } from '../db/tables'
import { AppError } from '../errors/app-error'
import { systemActor, type Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { randomBase62 } from '../lib/crypto'
import { hashPassword, normalEmail, type PersonRow } from '../sessions/service'
import { takeInvite, toMember } from '../team/service'
import { billingRow, planInForce } from '../billing/ledger'
import { standingOf, startStanding } from '../trust/standing'
import type { SignUp, UpdateAccount } from './schema'

type AccountRow = typeof accounts.$inferSelect

/**
 * On an empty database: the owner account and its first full_access key. The
 * token is the operator's MAILROOM_BOOTSTRAP_KEY, or a new one returned so the
 * caller can print it once. Returns null when the database already has an account.
 */
export function ensureFirstAccount(root: RootDeps): Promise<{ accountId: string; token: string; generated: boolean } | null> {
  return inTransaction(root, async (deps) => {
    // Counted inside the write transaction: two instances starting on one database create one owner.
    await deps.db.write(async () => undefined)
    const [{ n }] = await deps.db.q.select({ n: sql<number>`count(*)` }).from(accounts)
    if (Number(n) > 0) return null
    const now = iso(deps.clock.now())
    const row: AccountRow = { id: deps.ids.uuid(), name: 'Default account', requireMfa: false, createdAt: now, updatedAt: now }
    await deps.db.write((tx) => tx.insert(accounts).values(row))
    const actor = systemActor(row.id)
    await recordChange(deps, actor, { resource: 'account', resourceId: row.id, action: 'created', before: null, after: toAccount(row) })
    const { row: key, token } = await insertKey(deps, { accountId: row.id, name: 'Bootstrap key', system: true, token: deps.config.bootstrapKey })
    await auditKeyCreated(deps, actor, key)
    const accountId = row.id
    return { accountId, token, generated: !deps.config.bootstrapKey }
  })
}

/** The deployment's signing secret: made once, kept in the database so every instance and restart shares it. */
export async function deploymentSecret(db: Database): Promise<string> {
  const candidate = randomBase62(48)
  await db.write((tx) => tx.insert(settings).values({ key: 'secret', value: candidate }).onConflictDoNothing())
  const [row] = await db.q.select().from(settings).where(eq(settings.key, 'secret'))
  return row.value
}

export function toAccount(row: AccountRow) {
  return { object: 'account' as const, id: row.id, name: row.name, require_mfa: row.requireMfa, created_at: row.createdAt, updated_at: row.updatedAt }
}

async function accountById(q: Deps['db']['q'], id: string): Promise<AccountRow> {
  const [row] = await q.select().from(accounts).where(eq(accounts.id, id))
  return row
}

async function newAccount(tx: Tx, deps: Deps, name: string) {
  const now = iso(deps.clock.now())
  const row: AccountRow = { id: deps.ids.uuid(), name, requireMfa: false, createdAt: now, updatedAt: now }
  await tx.insert(accounts).values(row)
  await recordChange(deps, systemActor(row.id), { resource: 'account', resourceId: row.id, action: 'created', before: null, after: toAccount(row) })
  return row.id
}

/**
 * Sign-up. With an invitation: the person joins its account. Otherwise the first
 * person on the install becomes owner of the first account (the one the boot
 * made, with its API key); after that, only with MAILROOM_OPEN_SIGNUP does a
 * sign-up get an account of its own. The password is hashed (argon2id) before
 * the write lock is taken.
 */
export async function signUp(deps: Deps, input: SignUp) {
  const email = normalEmail(input.email)
  const passwordHash = await hashPassword(input.password)
  const now = iso(deps.clock.now())
  const person: PersonRow = {
    id: deps.ids.uuid(),
    email,
    name: input.name ?? null,
    passwordHash,
    totpSecret: null,
    totpPendingSecret: null,
    totpLastCounter: null,
    mfaEnabledAt: null,
    createdAt: now,
    updatedAt: now,
  }
  const member = await deps.db.write(async (tx) => {
    const [taken] = await tx.select({ id: people.id }).from(people).where(eq(people.email, email)).limit(1)
    if (taken) throw new AppError('already_in_account', { message: `${email} already has a login here: sign in (POST /auth/sign-in), then accept invitations with POST /invite/{token}/accept.` })
    const [anyone] = await tx.select({ id: people.id }).from(people).limit(1)
    await tx.insert(people).values(person)
    if (input.invite_token !== undefined) return takeInvite(tx, deps, input.invite_token, person)
    let accountId: string
    if (!anyone) {
      const [first] = await tx.select().from(accounts).orderBy(asc(accounts.createdAt), asc(accounts.id)).limit(1)
      accountId = first?.id ?? (await newAccount(tx, deps, input.account_name ?? 'Default account'))
      if (first && input.account_name !== undefined) await tx.update(accounts).set({ name: input.account_name, updatedAt: now }).where(eq(accounts.id, first.id))
    } else if (deps.config.openSignup) {
      accountId = await newAccount(tx, deps, input.account_name ?? input.name ?? email)
      await startStanding(tx, deps, accountId)
    } else {
      throw new AppError('invite_not_valid', { message: 'Sign-up on this server is by invitation: send the `invite_token` of an invitation to this address.' })
    }
    const membership = { id: deps.ids.uuid(), accountId, personId: person.id, role: 'owner' as const, createdAt: now, updatedAt: now }
    await tx.insert(memberships).values(membership)
    const view = toMember({ m: membership, email, name: person.name, mfaEnabledAt: null })
    await recordChange(deps, systemActor(accountId), { resource: 'member', resourceId: membership.id, action: 'created', before: null, after: view })
    return view
  })
  return { object: 'sign_up' as const, account: toAccount(await accountById(deps.db.q, member.account_id)), member }
}

/** The account with what governs its sending: the plan in force (billing on) and the trust standing's level and state. */
export async function getAccount(deps: Deps, actor: Actor) {
  const now = deps.clock.now()
  const billing = deps.config.billing
  const plan = billing ? planInForce(await billingRow(deps.db.q, billing, actor.accountId, now), now) : null
  const standing = await standingOf(deps, actor.accountId)
  return { ...toAccount(await accountById(deps.db.q, actor.accountId)), plan, standing: { level: standing.level, state: standing.state } }
}

/** Renames the account or changes whether two-factor is required; owners and admins only (see team/roles.ts). */
export async function updateAccount(deps: Deps, actor: Actor, input: UpdateAccount) {
  if (input.require_mfa && actor.person && !actor.person.mfaVerified) {
    throw new AppError('mfa_required', { message: 'Enrol in two-factor authentication and verify this session before requiring it of everyone.' })
  }
  const before = await accountById(deps.db.q, actor.accountId)
  const patch: Partial<AccountRow> = { updatedAt: iso(deps.clock.now()) }
  if (input.name !== undefined) patch.name = input.name
  if (input.require_mfa !== undefined) patch.requireMfa = input.require_mfa
  await deps.db.write((tx) => tx.update(accounts).set(patch).where(eq(accounts.id, actor.accountId)))
  const after = toAccount({ ...before, ...patch })
  await recordChange(deps, actor, { resource: 'account', resourceId: actor.accountId, action: 'updated', before: toAccount(before), after })
  return after
}
