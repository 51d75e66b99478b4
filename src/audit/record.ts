import { eq } from 'drizzle-orm'
import type { Tx } from '../db'
import { auditEntries, segmentContacts } from '../db/tables'
import type { Deps } from '../deps'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import type { Ids } from '../lib/ids'
import { queueWebhookEvents } from '../webhooks/outbox'
import { redact } from './redact'

export interface Change {
  /** Singular snake_case: 'api_key', 'domain', 'topic', 'contact', 'suppression', 'webhook', 'key_limit', ... */
  resource: string
  resourceId: string
  /** 'created', 'updated', 'deleted', 'rotated', 'verified', ... */
  action: string
  /** The public shape, as the API answers it; secrets are redacted here. */
  before: Record<string, unknown> | null
  after: Record<string, unknown> | null
}

/**
 * Resource changes that also go out as webhook events, by resource and action.
 * A domain's verification and DKIM rotation change what GET /domains/{id}
 * answers, so receivers hear of them as `domain.updated`; a contact's topic
 * answers change nothing in the contact's event data, so they send nothing.
 */
const WEBHOOK_KINDS: Record<string, Record<string, string>> = {
  contact: { created: 'contact.created', updated: 'contact.updated', deleted: 'contact.deleted', segment_added: 'contact.updated', segment_removed: 'contact.updated', resubscribed: 'contact.updated' },
  domain: { created: 'domain.created', updated: 'domain.updated', deleted: 'domain.deleted', verified: 'domain.updated', dkim_rotated: 'domain.updated' },
  topic: { created: 'topic.created', updated: 'topic.updated', deleted: 'topic.deleted' },
  suppression: { created: 'suppression.added', deleted: 'suppression.removed' },
}

const pick = (shape: Record<string, unknown>, fields: string[]) => Object.fromEntries(fields.filter((f) => f in shape).map((f) => [f, shape[f]]))

/** Resend's event `data` for contacts and domains; topics and suppressions send their public shape. */
async function eventData(tx: Tx, resource: string, resourceId: string, shape: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (resource === 'contact') {
    const segmentIds = (await tx.select({ id: segmentContacts.segmentId }).from(segmentContacts).where(eq(segmentContacts.contactId, resourceId))).map((r) => r.id)
    return { ...pick(shape, ['id', 'audience_id']), segment_ids: segmentIds, ...pick(shape, ['email', 'first_name', 'last_name', 'unsubscribed', 'created_at', 'updated_at']) }
  }
  if (resource === 'domain') return pick(shape, ['id', 'name', 'status', 'created_at', 'region', 'records'])
  return Object.fromEntries(Object.entries(shape).filter(([k]) => k !== 'object'))
}

/**
 * Writes one audit row, and the webhook event the change makes, in the caller's
 * transaction: for the paths that already hold one (the delivery recorder, the
 * bounce processor, the unsubscribe page), where `recordChange` cannot be used.
 */
export async function recordChangeIn(tx: Tx, ids: Ids, createdAt: string, actor: Actor, change: Change): Promise<void> {
  const before = change.before && redact(change.before)
  const after = change.after && redact(change.after)
  await tx.insert(auditEntries).values({
    id: ids.uuid(),
    accountId: actor.accountId,
    actorKind: actor.kind,
    actorKeyId: actor.keyId,
    actorPersonId: actor.person?.id ?? null,
    actorSessionId: actor.person?.sessionId ?? null,
    resource: change.resource,
    resourceId: change.resourceId,
    action: change.action,
    before,
    after,
    createdAt,
  })
  const type = WEBHOOK_KINDS[change.resource]?.[change.action]
  const shape = after ?? before
  if (type && shape) await queueWebhookEvents(tx, ids, actor.accountId, [{ type, data: await eventData(tx, change.resource, change.resourceId, shape), at: createdAt, orderKey: change.resourceId }])
}

/** Writes the audit row in the request's unit of work (`deps.db`), so it commits or rolls back with the change. */
export async function recordChange(deps: Deps, actor: Actor, change: Change): Promise<void> {
  await deps.db.write((tx) => recordChangeIn(tx, deps.ids, iso(deps.clock.now()), actor, change))
}
