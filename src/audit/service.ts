import { and, eq } from 'drizzle-orm'
import { dateRange } from '../db/date-range'
import { pageOf } from '../db/paging'
import { auditEntries } from '../db/tables'
import type { Deps } from '../deps'
import { notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { listKey } from '../lib/paging'
import type { ListAuditQuery } from './schema'

type Row = typeof auditEntries.$inferSelect

function toSummary(r: Row) {
  return {
    object: 'audit_entry' as const,
    id: r.id,
    resource: r.resource,
    resource_id: r.resourceId,
    action: r.action,
    actor: { kind: r.actorKind, key_id: r.actorKeyId, person_id: r.actorPersonId, session_id: r.actorSessionId },
    created_at: r.createdAt,
  }
}

const toEntry = (r: Row) => ({ ...toSummary(r), before: r.before, after: r.after })

/** Newest first; every filter narrows, and the cursor is bound to the filters it was issued under. */
export async function listAudit(deps: Deps, actor: Actor, q: ListAuditQuery) {
  const filters = { resource: q.resource, resource_id: q.resource_id, action: q.action, actor: q.actor, key_id: q.key_id?.toLowerCase(), since: q.since, until: q.until }
  const where = and(
    eq(auditEntries.accountId, actor.accountId),
    filters.resource ? eq(auditEntries.resource, filters.resource) : undefined,
    filters.resource_id ? eq(auditEntries.resourceId, filters.resource_id) : undefined,
    filters.action ? eq(auditEntries.action, filters.action) : undefined,
    filters.actor ? eq(auditEntries.actorKind, filters.actor) : undefined,
    filters.key_id ? eq(auditEntries.actorKeyId, filters.key_id) : undefined,
    ...dateRange(auditEntries.createdAt, q),
  )
  return pageOf(
    deps.secret,
    { list: listKey('audit', filters), query: q, id: auditEntries.id },
    (ks) => deps.db.q.select().from(auditEntries).where(and(where, ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toSummary,
  )
}

export async function getAuditEntry(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(auditEntries)
    .where(and(eq(auditEntries.id, id.toLowerCase()), eq(auditEntries.accountId, actor.accountId)))
  if (!row) throw notFound(`Audit entry ${id}`)
  return toEntry(row)
}
