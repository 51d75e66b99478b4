import { and, asc, eq, isNull, lte, sql } from 'drizzle-orm'
import { Secret, TOTP } from 'otpauth'
import { randomBytes } from 'node:crypto'
import type { Database, Executor } from '../db'
import { prepared } from '../db/prepared'
import { accounts, consoleSessions, memberships, people, recoveryCodes } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor, SessionPerson } from '../lib/actor'
import { HOUR, iso } from '../lib/clock'
import { randomBase62, sha256 } from '../lib/crypto'
import type { SignIn, VerifyMfa } from './schema'

export type PersonRow = typeof people.$inferSelect
type SessionRow = typeof consoleSessions.$inferSelect

const TOTP_SHAPE = { algorithm: 'SHA1', digits: 6, period: 30 } as const
const RECOVERY_CODES = 10
/** Failures free of any wait: per address, per client address, per person's second factor. */
const FREE = { email: 5, client: 20, mfa: 5 }

export const normalEmail = (email: string) => email.trim().toLowerCase()

/** argon2id at OWASP's baseline (19 MiB, 2 passes): costly to guess at, yet a sign-in stays well under a second on a small machine. */
export const hashPassword = (password: string) => Bun.password.hash(password, { algorithm: 'argon2id', memoryCost: 19_456, timeCost: 2 })

/** Checked against when no person has the address, so a wrong address costs the same time as a wrong password. */
let decoy: Promise<string> | undefined

/** Refuses while a check is due under any of the keys, saying how long to wait. */
function checkDue(deps: Deps, keys: [key: string, free: number][], now: number) {
  const wait = Math.max(...keys.map(([k, free]) => deps.signIns.wait(k, free, now)))
  if (wait > 0) {
    throw new AppError('sign_in_check_required', {
      message: `Too many failed attempts: the next one may come in ${wait} seconds. Each further failure doubles the wait, up to 15 minutes.`,
      retryAfter: wait,
    })
  }
}

/** Starts a session in `accountId`; the token goes into the cookie and is never stored. */
export async function startSession(deps: Deps, personId: string, accountId: string, mfaVerified: boolean) {
  const token = randomBase62(43)
  const now = deps.clock.now()
  const row: SessionRow = {
    id: deps.ids.uuid(),
    tokenHash: sha256(token),
    personId,
    accountId,
    mfaVerifiedAt: mfaVerified ? iso(now) : null,
    createdAt: iso(now),
    expiresAt: iso(now + deps.config.sessionHours * HOUR),
  }
  await deps.db.write((tx) => tx.insert(consoleSessions).values(row))
  return { row, token }
}

/** Every request with the cookie runs it: prepared once. */
const sessionByToken = prepared((q) =>
  q
    .select({
      session: consoleSessions,
      email: people.email,
      mfaEnabled: sql<boolean>`${people.mfaEnabledAt} is not null`.mapWith(Boolean),
      role: memberships.role,
      requireMfa: accounts.requireMfa,
    })
    .from(consoleSessions)
    .innerJoin(people, eq(people.id, consoleSessions.personId))
    .innerJoin(memberships, and(eq(memberships.personId, consoleSessions.personId), eq(memberships.accountId, consoleSessions.accountId)))
    .innerJoin(accounts, eq(accounts.id, consoleSessions.accountId))
    .where(eq(consoleSessions.tokenHash, sql.placeholder('hash')))
    .limit(1)
    .prepare(),
)

export type ResolvedSession = NonNullable<Awaited<ReturnType<typeof resolveSession>>>

/** The live session behind a cookie's token, with what auth decides on; null when unknown, ended or expired. */
export async function resolveSession(deps: Deps, token: string) {
  const [found] = await sessionByToken(deps.db.q).all({ hash: sha256(token) })
  if (!found || Date.parse(found.session.expiresAt) <= deps.clock.now()) return null
  const person: SessionPerson = { id: found.session.personId, email: found.email, role: found.role, sessionId: found.session.id, mfaVerified: found.session.mfaVerifiedAt !== null }
  return { person, accountId: found.session.accountId, expiresAt: found.session.expiresAt, mfaEnabled: found.mfaEnabled, requireMfa: found.requireMfa }
}

/** The accounts a person belongs to, the first joined first. */
export function membershipsOf(q: Executor, personId: string) {
  return q
    .select({ accountId: memberships.accountId, name: accounts.name, role: memberships.role, requireMfa: accounts.requireMfa })
    .from(memberships)
    .innerJoin(accounts, eq(accounts.id, memberships.accountId))
    .where(eq(memberships.personId, personId))
    .orderBy(asc(memberships.id))
}

export async function personById(q: Executor, id: string): Promise<PersonRow> {
  const [row] = await q.select().from(people).where(eq(people.id, id))
  return row
}

function twoFactor(mfaEnabled: boolean, mfaVerified: boolean, requireMfa: boolean) {
  if (mfaVerified) return 'complete' as const
  if (mfaEnabled) return 'pending' as const
  return requireMfa ? ('enrolment_required' as const) : ('not_enrolled' as const)
}

async function sessionView(deps: Deps, person: PersonRow, session: Pick<SessionRow, 'id' | 'accountId' | 'mfaVerifiedAt' | 'expiresAt'>) {
  const mine = await membershipsOf(deps.db.q, person.id)
  const current = mine.find((m) => m.accountId === session.accountId)!
  return {
    object: 'session' as const,
    id: session.id,
    account_id: session.accountId,
    role: current.role,
    two_factor: twoFactor(person.mfaEnabledAt !== null, session.mfaVerifiedAt !== null, current.requireMfa),
    person: { id: person.id, email: person.email, name: person.name },
    accounts: mine.map((m) => ({ id: m.accountId, name: m.name, role: m.role })),
    expires_at: session.expiresAt,
  }
}

/**
 * Password sign-in. A check is due after 5 failures for one address or 20 from
 * one client address (see SignInGuard); it is applied before the password is
 * read, so a right password during the wait teaches an attacker nothing.
 */
export async function signIn(deps: Deps, input: SignIn, client: string) {
  const email = normalEmail(input.email)
  const now = deps.clock.now()
  const keys: [string, number][] = [[`email:${email}`, FREE.email], [`client:${client}`, FREE.client]]
  checkDue(deps, keys, now)
  const [person] = await deps.db.q.select().from(people).where(eq(people.email, email))
  const ok = await Bun.password.verify(input.password, person?.passwordHash ?? (await (decoy ??= hashPassword(randomBase62(20)))))
  if (!person || !ok) {
    for (const [k] of keys) deps.signIns.fail(k, now)
    throw new AppError('invalid_credentials', { message: 'The email address or the password is wrong.' })
  }
  deps.signIns.clear(keys[0][0])
  const mine = await membershipsOf(deps.db.q, person.id)
  const current = input.account_id === undefined ? mine[0] : mine.find((m) => m.accountId === input.account_id)
  if (!current) throw new AppError('invalid_parameter', { message: `You are not a member of account ${input.account_id}; your accounts: ${mine.map((m) => m.accountId).join(', ')}.` })
  const { row, token } = await startSession(deps, person.id, current.accountId, false)
  return { token, maxAge: deps.config.sessionHours * 3600, session: await sessionView(deps, person, row) }
}

export async function signOut(deps: Deps, actor: Actor) {
  const id = actor.person!.sessionId
  await deps.db.write((tx) => tx.delete(consoleSessions).where(eq(consoleSessions.id, id)))
  return { object: 'session' as const, id, deleted: true }
}

/**
 * Hands out a new TOTP secret to confirm with POST /auth/mfa/verify. A person
 * already enrolled must have passed the second factor in this session: the
 * password alone never replaces an authenticator.
 */
export async function enrollMfa(deps: Deps, actor: Actor) {
  const me = actor.person!
  const person = await personById(deps.db.q, me.id)
  if (person.mfaEnabledAt && !me.mfaVerified) {
    throw new AppError('mfa_required', { message: 'You are enrolled already: verify this session with your current authenticator (POST /auth/mfa/verify) before enrolling a new one.' })
  }
  const secret = new Secret({ size: 20 })
  await deps.db.write((tx) => tx.update(people).set({ totpPendingSecret: secret.base32, updatedAt: iso(deps.clock.now()) }).where(eq(people.id, me.id)))
  const totp = new TOTP({ issuer: 'Mailroom', label: person.email, secret, ...TOTP_SHAPE })
  return { object: 'mfa_enrollment' as const, secret: secret.base32, otpauth_uri: totp.toString(), ...TOTP_SHAPE }
}

/** The time step a six-digit code matches (one step of drift either way), or null. */
function totpStep(secret: string, code: string, now: number): number | null {
  if (!/^\d{6}$/.test(code)) return null
  const delta = TOTP.validate({ token: code, secret: Secret.fromBase32(secret), timestamp: now, window: 1, ...TOTP_SHAPE })
  return delta === null ? null : TOTP.counter({ period: TOTP_SHAPE.period, timestamp: now }) + delta
}

const newRecoveryCode = () => randomBytes(5).toString('hex').replace(/^(.{5})/, '$1-')
const recoveryHash = (code: string) => sha256(code.replace(/-/g, ''))

/**
 * A code from the authenticator (or a recovery code) for this session. With an
 * enrolment pending, the new secret's code completes it and answers ten fresh
 * recovery codes, once. Each TOTP step and each recovery code works once; five
 * wrong codes make the sign-in check due for this person.
 */
export async function verifyMfa(deps: Deps, actor: Actor, input: VerifyMfa) {
  const me = actor.person!
  const now = deps.clock.now()
  const guardKey = `mfa:${me.id}`
  checkDue(deps, [[guardKey, FREE.mfa]], now)
  const person = await personById(deps.db.q, me.id)
  if (!person.totpSecret && !person.totpPendingSecret) {
    throw new AppError('invalid_parameter', { message: 'There is no two-factor enrolment to confirm: start one with POST /auth/mfa/enroll.' })
  }
  const code = input.code.replace(/\s/g, '').toLowerCase()
  const at = iso(now)
  const verified = async (personPatch: Partial<PersonRow>) => {
    deps.signIns.clear(guardKey)
    await deps.db.write(async (tx) => {
      await tx.update(people).set({ ...personPatch, updatedAt: at }).where(eq(people.id, me.id))
      await tx.update(consoleSessions).set({ mfaVerifiedAt: at }).where(eq(consoleSessions.id, me.sessionId))
    })
    const [session] = await deps.db.q.select().from(consoleSessions).where(eq(consoleSessions.id, me.sessionId))
    return sessionView(deps, { ...person, ...personPatch }, session)
  }

  const enrolling = person.totpPendingSecret ? totpStep(person.totpPendingSecret, code, now) : null
  if (enrolling !== null) {
    const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode)
    await deps.db.write(async (tx) => {
      await tx.delete(recoveryCodes).where(eq(recoveryCodes.personId, me.id))
      await tx.insert(recoveryCodes).values(codes.map((c) => ({ id: deps.ids.uuid(), personId: me.id, codeHash: recoveryHash(c), usedAt: null, createdAt: at })))
    })
    const view = await verified({ totpSecret: person.totpPendingSecret, totpPendingSecret: null, totpLastCounter: enrolling, mfaEnabledAt: person.mfaEnabledAt ?? at })
    return { ...view, recovery_codes: codes }
  }
  if (person.totpSecret) {
    const step = totpStep(person.totpSecret, code, now)
    if (step !== null && step > (person.totpLastCounter ?? -1)) return verified({ totpLastCounter: step })
    if (/^[0-9a-f]{5}-?[0-9a-f]{5}$/.test(code)) {
      const used = await deps.db.write((tx) =>
        tx
          .update(recoveryCodes)
          .set({ usedAt: at })
          .where(and(eq(recoveryCodes.personId, me.id), eq(recoveryCodes.codeHash, recoveryHash(code)), isNull(recoveryCodes.usedAt)))
          .returning({ id: recoveryCodes.id }),
      )
      if (used.length) return verified({})
    }
  }
  deps.signIns.fail(guardKey, now)
  throw new AppError('invalid_credentials', { message: 'The two-factor code is wrong, expired or already used.' })
}

/** Expired sessions no longer authenticate anything; the hourly job deletes their rows. */
export function purgeSessions(db: Database, now: number) {
  return db.write((tx) => tx.delete(consoleSessions).where(lte(consoleSessions.expiresAt, iso(now))))
}

