import { and, eq, gt } from 'drizzle-orm'
import { agentActions, type AgentActionKind } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { HOUR, iso } from '../lib/clock'
import { sha256 } from '../lib/crypto'

export interface Hold {
  kind: AgentActionKind
  reason: 'batch_threshold' | 'broadcast_threshold' | 'loop_guard' | 'key_limit_raise'
  /** One sentence on why, shown to the agent and to the person deciding. */
  detail: string
  /** The exact service input, replayed on approval. */
  request: Record<string, unknown>
}

/** A key's call is held when it must be, and never when it carries out an action a person approved. */
export const mayHold = (actor: Actor) => actor.kind === 'key' && actor.keyId !== null && !actor.approvedAction

/**
 * Refuses the call with `approval_required`, naming the pending agent action that
 * keeps its exact request. The action is written after the call's own
 * transaction is undone, so nothing else of the call remains; the same request
 * again finds the action still pending instead of opening a second one.
 */
export async function holdForApproval(deps: Deps, actor: Actor, hold: Hold): Promise<never> {
  const keyId = actor.keyId!
  const requestHash = sha256(JSON.stringify([hold.kind, hold.request]))
  const now = deps.clock.now()
  const [open] = await deps.db.q
    .select({ id: agentActions.id, expiresAt: agentActions.expiresAt })
    .from(agentActions)
    .where(and(eq(agentActions.keyId, keyId), eq(agentActions.requestHash, requestHash), eq(agentActions.status, 'pending'), gt(agentActions.expiresAt, iso(now))))
    .limit(1)
  const id = open?.id ?? deps.ids.uuid()
  const expiresAt = open?.expiresAt ?? iso(now + deps.config.controls.approvalHours * HOUR)
  const at = iso(now)
  throw new AppError('approval_required', {
    message: `${hold.detail} A person must approve agent action ${id} (POST /agent-actions/${id}/approve, signed in to the console) before it runs; undecided, it expires at ${expiresAt}.`,
    extra: { agent_action_id: id, expires_at: expiresAt },
    keep: open
      ? undefined
      : (tx) =>
          tx.insert(agentActions).values({
            id,
            accountId: actor.accountId,
            keyId,
            kind: hold.kind,
            reason: hold.reason,
            detail: hold.detail,
            request: hold.request,
            requestHash,
            status: 'pending',
            result: null,
            decidedBy: null,
            decidedAt: null,
            expiresAt,
            createdAt: at,
            updatedAt: at,
          }),
  })
}
