import { and, asc, desc, eq, gt, ne, sql } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import type { Executor, Tx } from '../db'
import { pageOf } from '../db/paging'
import { accounts, consoleSessions, domains, invites, memberships, people, recoveryCodes } from '../db/tables'
import type { Deps } from '../deps'
import { sendEmail } from '../emails/send'
import { AppError, notFound } from '../errors/app-error'
import { systemActor, type Actor, type Role } from '../lib/actor'
import { DAY, iso } from '../lib/clock'
import { randomBase62, sha256 } from '../lib/crypto'
import { listKey, type PageQuery } from '../lib/paging'
import { normalEmail } from '../sessions/service'
import { requireRole } from './roles'
import type { CreateInvite, UpdateMember } from './schema'

type InviteRow = typeof invites.$inferSelect
type MembershipRow = typeof memberships.$inferSelect

const INVITE_DAYS = 7
/** GET /team shows this many members and invitations; the lists page through the rest. */
const TEAM_PAGE = 500

const memberColumns = { m: memberships, email: people.email, name: people.name, mfaEnabledAt: people.mfaEnabledAt }
const membersOf = (q: Executor) => q.select(memberColumns).from(memberships).innerJoin(people, eq(people.id, memberships.personId))
type MemberRow = { m: MembershipRow; email: string; name: string | null; mfaEnabledAt: string | null }

export function toMember(r: MemberRow) {
  return {
    object: 'member' as const,
    id: r.m.id,
    account_id: r.m.accountId,
    person_id: r.m.personId,
    email: r.email,
    name: r.name,
    role: r.m.role,
    two_factor_enabled: r.mfaEnabledAt !== null,
    joined_at: r.m.createdAt,
    updated_at: r.m.updatedAt,
  }
}

export function toInvite(row: InviteRow, now: number) {
  return {
    object: 'invite' as const,
    id: row.id,
    email: row.email,
    role: row.role,
    status: row.status === 'pending' && Date.parse(row.expiresAt) <= now ? ('expired' as const) : row.status,
    invited_by: row.invitedBy,
    expires_at: row.expiresAt,
    created_at: row.createdAt,
  }
}

const pendingIn = (accountId: string, now: number) => and(eq(invites.accountId, accountId), eq(invites.status, 'pending'), gt(invites.expiresAt, iso(now)))

const count = async (q: Executor, table: typeof memberships | typeof invites, where: ReturnType<typeof and>) => {
  const [{ n }] = await q.select({ n: sql<number>`count(*)` }).from(table).where(where)
  return Number(n)
}

/**
 * Seats are held by members and by pending invitations. `replacing` names the
 * address whose pending invitation a new one replaces; without it (accepting),
 * only members count, since the invitation being taken up held its seat.
 */
async function assertSeat(q: Executor, deps: Deps, accountId: string, now: number, replacing?: string) {
  const limit = deps.config.seatLimit
  if (limit === undefined) return
  const members = await count(q, memberships, eq(memberships.accountId, accountId))
  const pending = replacing === undefined ? 0 : await count(q, invites, and(pendingIn(accountId, now), ne(invites.email, replacing)))
  if (members + pending >= limit) {
    throw new AppError('seat_limit_reached', { message: `This account has ${limit} seats: ${members} members${replacing === undefined ? '' : ` and ${pending} pending invitations`} hold them all.` })
  }
}

async function assertAnotherOwner(q: Executor, accountId: string) {
  if ((await count(q, memberships, and(eq(memberships.accountId, accountId), eq(memberships.role, 'owner')))) <= 1) {
    throw new AppError('last_owner_required', { message: 'This is the account’s only owner: make another member owner first.' })
  }
}

async function findMember(q: Executor, actor: Actor, id: string) {
  const [row] = await membersOf(q).where(and(eq(memberships.id, id.toLowerCase()), eq(memberships.accountId, actor.accountId)))
  if (!row) throw notFound(`Member ${id}`)
  return row
}

export async function getTeam(deps: Deps, actor: Actor) {
  const now = deps.clock.now()
  const q = deps.db.q
  const members = await membersOf(q).where(eq(memberships.accountId, actor.accountId)).orderBy(asc(memberships.id)).limit(TEAM_PAGE)
  const pending = await q.select().from(invites).where(pendingIn(actor.accountId, now)).orderBy(desc(invites.id)).limit(TEAM_PAGE)
  const memberCount = await count(q, memberships, eq(memberships.accountId, actor.accountId))
  const pendingCount = await count(q, invites, pendingIn(actor.accountId, now))
  const limit = deps.config.seatLimit ?? null
  return {
    object: 'team' as const,
    account_id: actor.accountId,
    members: members.map(toMember),
    invites: pending.map((i) => toInvite(i, now)),
    seats: { members: memberCount, pending: pendingCount, limit, available: limit === null ? null : Math.max(0, limit - memberCount - pendingCount) },
  }
}

export function listMembers(deps: Deps, actor: Actor, q: PageQuery) {
  return pageOf<MemberRow & { id: string }, ReturnType<typeof toMember>>(
    deps.secret,
    { list: listKey('members'), query: q, id: memberships.id, oldestFirst: true },
    async (ks) => (await membersOf(deps.db.q).where(and(eq(memberships.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit)).map((r) => ({ ...r, id: r.m.id })),
    toMember,
  )
}

export function listInvites(deps: Deps, actor: Actor, q: PageQuery) {
  const now = deps.clock.now()
  return pageOf(
    deps.secret,
    { list: listKey('invites'), query: q, id: invites.id },
    (ks) => deps.db.q.select().from(invites).where(and(pendingIn(actor.accountId, now), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    (row) => toInvite(row, now),
  )
}

/**
 * Changes a member's role. Owners and admins change roles; only an owner grants
 * or takes away the owner role; the last owner keeps it. The member's sessions
 * act with the new role from their next request.
 */
export async function updateMember(deps: Deps, actor: Actor, id: string, input: UpdateMember) {
  requireRole(actor, 'admin', 'change roles')
  const now = iso(deps.clock.now())
  return deps.db.write(async (tx) => {
    const target = await findMember(tx, actor, id)
    if (target.m.role === 'owner' || input.role === 'owner') requireRole(actor, 'owner', 'grant or take away the owner role')
    if (target.m.role === 'owner' && input.role !== 'owner') await assertAnotherOwner(tx, actor.accountId)
    await tx.update(memberships).set({ role: input.role, updatedAt: now }).where(eq(memberships.id, target.m.id))
    const after = toMember({ ...target, m: { ...target.m, role: input.role, updatedAt: now } })
    await recordChange(deps, actor, { resource: 'member', resourceId: target.m.id, action: 'updated', before: toMember(target), after })
    return after
  })
}

/**
 * Removes a member and ends their sessions in this account. Anyone may leave;
 * removing someone else takes an owner or admin, and an owner takes an owner.
 * A person left in no account has no login any more: they can be invited again.
 */
export async function removeMember(deps: Deps, actor: Actor, id: string) {
  return deps.db.write(async (tx) => {
    const target = await findMember(tx, actor, id)
    const self = target.m.personId === actor.person?.id
    if (!self) requireRole(actor, target.m.role === 'owner' ? 'owner' : 'admin', target.m.role === 'owner' ? 'remove an owner' : 'remove members')
    if (target.m.role === 'owner') await assertAnotherOwner(tx, actor.accountId)
    const personId = target.m.personId
    await tx.delete(memberships).where(eq(memberships.id, target.m.id))
    await tx.delete(consoleSessions).where(and(eq(consoleSessions.personId, personId), eq(consoleSessions.accountId, actor.accountId)))
    const [elsewhere] = await tx.select({ id: memberships.id }).from(memberships).where(eq(memberships.personId, personId)).limit(1)
    if (!elsewhere) {
      await tx.delete(recoveryCodes).where(eq(recoveryCodes.personId, personId))
      await tx.delete(people).where(eq(people.id, personId))
    }
    await recordChange(deps, actor, { resource: 'member', resourceId: target.m.id, action: 'deleted', before: toMember(target), after: null })
    return { object: 'member' as const, id: target.m.id, deleted: true }
  })
}

/**
 * Invites an address, replacing a pending invitation to it. Owners and admins
 * invite; only owners invite owners. At most MAILROOM_INVITE_LIMIT a day per
 * account; with MAILROOM_SEAT_LIMIT, members and pending invitations together
 * stay within it.
 */
export async function createInvite(deps: Deps, actor: Actor, input: CreateInvite) {
  const role: Role = input.role ?? 'developer'
  requireRole(actor, role === 'owner' ? 'owner' : 'admin', role === 'owner' ? 'invite an owner' : 'invite people')
  const email = normalEmail(input.email)
  const now = deps.clock.now()
  const token = randomBase62(32)
  const row: InviteRow = {
    id: deps.ids.uuid(),
    accountId: actor.accountId,
    email,
    role,
    tokenHash: sha256(token),
    status: 'pending',
    invitedBy: actor.person?.id ?? null,
    expiresAt: iso(now + INVITE_DAYS * DAY),
    acceptedBy: null,
    createdAt: iso(now),
    updatedAt: iso(now),
  }
  await deps.db.write(async (tx) => {
    const [member] = await membersOf(tx).where(and(eq(memberships.accountId, actor.accountId), eq(people.email, email))).limit(1)
    if (member) throw new AppError('already_in_account', { message: `${email} is already a member of this account (${member.m.id}).` })
    const limit = deps.config.invitesPerDay
    const recent = await tx
      .select({ createdAt: invites.createdAt })
      .from(invites)
      .where(and(eq(invites.accountId, actor.accountId), gt(invites.createdAt, iso(now - DAY))))
      .orderBy(asc(invites.id))
      .limit(limit)
    if (recent.length >= limit) {
      throw new AppError('invite_limit_reached', {
        message: `This account sent ${limit} invitations in the last 24 hours, the most it may.`,
        retryAfter: Math.ceil((Date.parse(recent[0].createdAt) + DAY - now) / 1000),
      })
    }
    await assertSeat(tx, deps, actor.accountId, now, email)
    await tx.update(invites).set({ status: 'cancelled', updatedAt: iso(now) }).where(and(eq(invites.accountId, actor.accountId), eq(invites.email, email), eq(invites.status, 'pending')))
    await tx.insert(invites).values(row)
  })
  const view = toInvite(row, now)
  await recordChange(deps, actor, { resource: 'invite', resourceId: row.id, action: 'created', before: null, after: view })
  return { ...view, ...(await deliverInvite(deps, actor, row, token)) }
}

/**
 * Sends the invitation through the normal sending pipeline, from a verified
 * domain of the account that may send; with none, or when the send is refused,
 * the token and link go back to the inviter instead.
 */
async function deliverInvite(deps: Deps, actor: Actor, invite: InviteRow, token: string) {
  const url = `${deps.config.baseUrl}/invite/${token}/accept`
  const [domain] = await deps.db.q
    .select({ name: domains.name })
    .from(domains)
    .where(and(eq(domains.accountId, actor.accountId), eq(domains.status, 'verified'), eq(domains.sendingEnabled, true)))
    .orderBy(asc(domains.name))
    .limit(1)
  let emailError: string | undefined
  if (domain) {
    const [account] = await deps.db.q.select({ name: accounts.name }).from(accounts).where(eq(accounts.id, actor.accountId))
    const text = [
      `${actor.person?.email ?? 'Someone'} invited you to join ${account.name} on Mailroom as ${invite.role}.`,
      '',
      'No login on this server yet? Sign up with the invitation:',
      `  POST ${deps.config.baseUrl}/accounts  {"email": "${invite.email}", "password": "…", "invite_token": "${token}"}`,
      'Signed in already? Accept it:',
      `  POST ${url}`,
      '',
      `The invitation expires at ${invite.expiresAt}.`,
    ].join('\n')
    try {
      const sent = await sendEmail(deps, systemActor(actor.accountId), { from: `Mailroom <no-reply@${domain.name}>`, to: invite.email, subject: `Join ${account.name} on Mailroom`, text })
      return { delivery: 'email' as const, email_id: sent.id }
    } catch (e) {
      if (!(e instanceof AppError)) throw e
      emailError = e.code
    }
  }
  return { delivery: 'link' as const, email_id: null, ...(emailError ? { email_error: emailError } : {}), token, url }
}

export async function cancelInvite(deps: Deps, actor: Actor, id: string) {
  requireRole(actor, 'admin', 'cancel invitations')
  const now = deps.clock.now()
  return deps.db.write(async (tx) => {
    const [row] = await tx.select().from(invites).where(and(eq(invites.id, id.toLowerCase()), pendingIn(actor.accountId, now)))
    if (!row) throw notFound(`Pending invitation ${id}`)
    await tx.update(invites).set({ status: 'cancelled', updatedAt: iso(now) }).where(eq(invites.id, row.id))
    await recordChange(deps, actor, { resource: 'invite', resourceId: row.id, action: 'cancelled', before: toInvite(row, now), after: { ...toInvite(row, now), status: 'cancelled' } })
    return { object: 'invite' as const, id: row.id, deleted: true }
  })
}

const INVALID_BECAUSE = { accepted: 'was already used', cancelled: 'was cancelled' }

/**
 * Takes up an invitation for a person, in the caller's transaction: checks the
 * invitation, the address and the seat, adds the membership and marks the
 * invitation accepted. Audited in the invitation's account, as the signed-in
 * `session` when there is one (sign-up has none: the service acts).
 */
export async function takeInvite(tx: Tx, deps: Deps, token: string, person: { id: string; email: string }, session?: Actor) {
  const now = deps.clock.now()
  const [invite] = await tx.select().from(invites).where(eq(invites.tokenHash, sha256(token)))
  if (!invite) throw new AppError('invite_not_valid', { message: 'No invitation has this token.' })
  if (invite.status !== 'pending') throw new AppError('invite_not_valid', { message: `This invitation ${INVALID_BECAUSE[invite.status]}.` })
  if (Date.parse(invite.expiresAt) <= now) throw new AppError('invite_not_valid', { message: `This invitation expired at ${invite.expiresAt}.` })
  if (invite.email !== person.email) {
    throw new AppError('invite_email_mismatch', { message: `This invitation is for ${invite.email}; you are ${person.email}. Sign in (or sign up) with the invited address.` })
  }
  const [already] = await tx.select({ id: memberships.id }).from(memberships).where(and(eq(memberships.accountId, invite.accountId), eq(memberships.personId, person.id)))
  if (already) throw new AppError('already_in_account', { message: `You are already a member of that account (${already.id}).` })
  await assertSeat(tx, deps, invite.accountId, now)
  const membership: MembershipRow = { id: deps.ids.uuid(), accountId: invite.accountId, personId: person.id, role: invite.role, createdAt: iso(now), updatedAt: iso(now) }
  await tx.insert(memberships).values(membership)
  await tx.update(invites).set({ status: 'accepted', acceptedBy: person.id, updatedAt: iso(now) }).where(eq(invites.id, invite.id))
  const [member] = await membersOf(tx).where(eq(memberships.id, membership.id))
  const inviteActor: Actor = session ? { ...session, accountId: invite.accountId } : systemActor(invite.accountId)
  await recordChange(deps, inviteActor, { resource: 'invite', resourceId: invite.id, action: 'accepted', before: toInvite(invite, now), after: { ...toInvite(invite, now), status: 'accepted' } })
  await recordChange(deps, inviteActor, { resource: 'member', resourceId: membership.id, action: 'created', before: null, after: toMember(member) })
  return toMember(member)
}

/** Joins the invitation's account as the signed-in person; this session moves to that account. */
export async function acceptInvite(deps: Deps, actor: Actor, token: string) {
  const me = actor.person!
  return deps.db.write(async (tx) => {
    const member = await takeInvite(tx, deps, token, me, actor)
    await tx.update(consoleSessions).set({ accountId: member.account_id }).where(eq(consoleSessions.id, me.sessionId))
    return member
  })
}
