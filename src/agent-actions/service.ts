import { and, eq, gt, lte, or, type SQL } from 'drizzle-orm'
import { getLimits, updateLimits } from '../api-keys/service'
import { recordChange } from '../audit/record'
import { sendBroadcast } from '../broadcasts/service'
import type { SendBroadcast } from '../broadcasts/schema'
import { pageOf } from '../db/paging'
import { agentActions, apiKeys, type AgentActionKind } from '../db/tables'
import type { Deps, RootDeps } from '../deps'
import type { SendEmail } from '../emails/schema'
import { sendBatch, sendEmail, type BatchMode } from '../emails/send'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { listKey } from '../lib/paging'
import { replyTo } from '../receiving/service'
import type { Reply } from '../receiving/schema'
import type { UpdateKeyLimits } from '../api-keys/schema'
import type { ListAgentActionsQuery } from './schema'

type ActionRow = typeof agentActions.$inferSelect

/** A pending action past its time reads as expired before the expiry job has marked it. */
const statusOf = (row: ActionRow, now: number) => (row.status === 'pending' && Date.parse(row.expiresAt) <= now ? 'expired' : row.status)

export function toAgentAction(row: ActionRow, now: number) {
  return {
    object: 'agent_action' as const,
    id: row.id,
    status: statusOf(row, now),
    kind: row.kind,
    reason: row.reason,
    detail: row.detail,
    api_key_id: row.keyId,
    request: row.request,
    result: row.result ?? null,
    decided_by: row.decidedBy,
    decided_at: row.decidedAt,
    expires_at: row.expiresAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

/** Each held kind replays through the service that held it, acting as the key that asked. */
const RUNNERS: Record<AgentActionKind, (deps: Deps, actor: Actor, req: Record<string, unknown>) => Promise<unknown>> = {
  send_email: (deps, actor, req) => sendEmail(deps, actor, req.input as SendEmail),
  send_batch: (deps, actor, req) => sendBatch(deps, actor, req.items as SendEmail[], req.mode as BatchMode),
  reply: (deps, actor, req) => replyTo(deps, actor, req.inbound_id as string, req.body as Reply),
  send_broadcast: (deps, actor, req) => sendBroadcast(deps, actor, req.broadcast_id as string, req.input as SendBroadcast),
  raise_key_limits: async (deps, actor, req) => {
    await updateLimits(deps, actor, req.key_id as string, req.input as UpdateKeyLimits)
    return getLimits(deps, actor, req.key_id as string)
  },
}

async function findAction(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(agentActions)
    .where(and(eq(agentActions.id, id.toLowerCase()), eq(agentActions.accountId, actor.accountId)))
  if (!row) throw notFound(`Agent action ${id}`)
  return row
}

const STATUS_FILTER = (status: NonNullable<ListAgentActionsQuery['status']>, now: string): SQL | undefined => {
  if (status === 'pending') return and(eq(agentActions.status, 'pending'), gt(agentActions.expiresAt, now))
  if (status === 'expired') return or(eq(agentActions.status, 'expired'), and(eq(agentActions.status, 'pending'), lte(agentActions.expiresAt, now)))
  return eq(agentActions.status, status)
}

export async function listActions(deps: Deps, actor: Actor, q: ListAgentActionsQuery) {
  const now = deps.clock.now()
  return pageOf(
    deps.secret,
    { list: listKey('agent_actions', { status: q.status }), query: q, id: agentActions.id },
    async (ks) =>
      deps.db.q
        .select()
        .from(agentActions)
        .where(and(eq(agentActions.accountId, actor.accountId), q.status ? STATUS_FILTER(q.status, iso(now)) : undefined, ks.where))
        .orderBy(ks.orderBy)
        .limit(ks.limit),
    (r) => toAgentAction(r, now),
  )
}

export async function getAction(deps: Deps, actor: Actor, id: string) {
  return toAgentAction(await findAction(deps, actor, id), deps.clock.now())
}

/** Only a pending action within its window can be decided; an expired one is marked so even though the call fails. */
function assertOpen(deps: Deps, row: ActionRow) {
  const now = deps.clock.now()
  const status = statusOf(row, now)
  if (status === 'expired') {
    throw new AppError('approval_expired', {
      message: `Agent action ${row.id} expired at ${row.expiresAt} without a decision; the key must make the request again.`,
      keep: (tx) => tx.update(agentActions).set({ status: 'expired', updatedAt: iso(now) }).where(and(eq(agentActions.id, row.id), eq(agentActions.status, 'pending'))),
    })
  }
  if (status !== 'pending') {
    throw new AppError('agent_action_decided', { message: `Agent action ${row.id} was already ${status}${row.decidedAt ? ` at ${row.decidedAt}` : ''}.` })
  }
}

/**
 * Marks the action decided, guarded on it still being pending: of two decisions
 * at once only one finds it so, which is what makes an approved action run once.
 */
async function settle(deps: Deps, actor: Actor, row: ActionRow, status: 'approved' | 'rejected') {
  const at = iso(deps.clock.now())
  const patch = { status, decidedBy: actor.person?.email ?? null, decidedAt: at, updatedAt: at }
  const done = await deps.db.write((tx) =>
    tx
      .update(agentActions)
      .set(patch)
      .where(and(eq(agentActions.id, row.id), eq(agentActions.status, 'pending')))
      .returning({ id: agentActions.id }),
  )
  if (!done.length) throw new AppError('agent_action_decided', { message: `Agent action ${row.id} was decided by someone else a moment ago.` })
  return { ...row, ...patch }
}

/** The key that asked, as it stands now: its permission and domain scope still bound the replay. */
async function askingKey(deps: Deps, row: ActionRow): Promise<Actor> {
  const [key] = await deps.db.q.select().from(apiKeys).where(eq(apiKeys.id, row.keyId))
  if (!key || key.revokedAt) throw new AppError('invalid_api_key', { message: `The key that asked for agent action ${row.id} was revoked; reject the action instead.` })
  return { accountId: key.accountId, kind: 'key', keyId: key.id, permission: key.permission, domainScope: key.domainScope, approvedAction: row.id }
}

/**
 * Approves and runs the held request, in this call's transaction: if the replay
 * is refused now (a budget spent meanwhile), nothing is kept and the action
 * stays pending for a later decision or a rejection.
 */
export async function approveAction(deps: Deps, actor: Actor, id: string) {
  const row = await findAction(deps, actor, id)
  assertOpen(deps, row)
  const asKey = await askingKey(deps, row)
  const decided = await settle(deps, actor, row, 'approved')
  const result = (await RUNNERS[row.kind](deps, asKey, row.request)) ?? null
  await deps.db.write((tx) => tx.update(agentActions).set({ result }).where(eq(agentActions.id, row.id)))
  const after = toAgentAction({ ...decided, result }, deps.clock.now())
  await recordChange(deps, actor, { resource: 'agent_action', resourceId: row.id, action: 'approved', before: toAgentAction(row, deps.clock.now()), after })
  return after
}

export async function rejectAction(deps: Deps, actor: Actor, id: string) {
  const row = await findAction(deps, actor, id)
  assertOpen(deps, row)
  const decided = await settle(deps, actor, row, 'rejected')
  const after = toAgentAction(decided, deps.clock.now())
  await recordChange(deps, actor, { resource: 'agent_action', resourceId: row.id, action: 'rejected', before: toAgentAction(row, deps.clock.now()), after })
  return after
}

/** The scheduler's sweep: pending actions past their window become expired. */
export async function expireActions(root: RootDeps) {
  const now = iso(root.clock.now())
  await root.db.write((tx) =>
    tx.update(agentActions).set({ status: 'expired', updatedAt: now }).where(and(eq(agentActions.status, 'pending'), lte(agentActions.expiresAt, now))),
  )
}
