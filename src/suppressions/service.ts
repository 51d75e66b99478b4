import { and, eq } from 'drizzle-orm'
import { recordChange, recordChangeIn } from '../audit/record'
import type { Tx } from '../db'
import type { Deps } from '../deps'
import { pageOf } from '../db/paging'
import { suppressions } from '../db/tables'
import { AppError, notFound } from '../errors/app-error'
import { systemActor, type Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import type { Ids } from '../lib/ids'
import { listKey } from '../lib/paging'
import type { CreateSuppression, ListSuppressionsQuery } from './schema'

type Row = typeof suppressions.$inferSelect

/** Only a hard bounce is a fact about the mailbox that can be fixed; the rest are the recipient's own word. */
const clearable = (r: Pick<Row, 'reason'>) => r.reason === 'bounce' || r.reason === 'manual'

export function toSuppression(r: Row) {
  return {
    object: 'suppression' as const,
    id: r.id,
    email: r.email,
    reason: r.reason,
    origin: r.reason,
    source_email_id: r.sourceEmailId,
    detail: r.detail,
    clearable: clearable(r),
    created_at: r.createdAt,
  }
}

/**
 * Audits a suppression the service made itself (a bounce, a complaint, a
 * recipient's unsubscribe), in the caller's transaction; `before` is the entry it
 * replaced, if any.
 */
export function auditSystemSuppression(tx: Tx, ids: Ids, at: string, row: Row, before: Row | null = null) {
  return recordChangeIn(tx, ids, at, systemActor(row.accountId), {
    resource: 'suppression',
    resourceId: row.id,
    action: before ? 'updated' : 'created',
    before: before && toSuppression(before),
    after: toSuppression(row),
  })
}

/** `key` comes decoded from the path: decoding it again would misread a literal `%`. */
async function find(deps: Deps, actor: Actor, key: string) {
  const byEmail = key.includes('@')
  const [row] = await deps.db.q
    .select()
    .from(suppressions)
    .where(and(eq(suppressions.accountId, actor.accountId), byEmail ? eq(suppressions.email, key.toLowerCase()) : eq(suppressions.id, key.toLowerCase())))
  if (!row) throw notFound(`Suppression ${key}`)
  return row
}

/** Suppresses an address by hand; an address already suppressed keeps its stronger reason. */
export async function createSuppression(deps: Deps, actor: Actor, input: CreateSuppression) {
  const email = input.email.toLowerCase()
  const [existing] = await deps.db.q.select().from(suppressions).where(and(eq(suppressions.accountId, actor.accountId), eq(suppressions.email, email)))
  if (existing) return toSuppression(existing)
  const row: Row = { id: deps.ids.uuid(), accountId: actor.accountId, email, reason: 'manual', sourceEmailId: null, detail: input.detail ?? null, createdAt: iso(deps.clock.now()) }
  await deps.db.write((tx) => tx.insert(suppressions).values(row))
  const suppression = toSuppression(row)
  await recordChange(deps, actor, { resource: 'suppression', resourceId: row.id, action: 'created', before: null, after: suppression })
  return suppression
}

export async function listSuppressions(deps: Deps, actor: Actor, q: ListSuppressionsQuery) {
  const reason = q.reason ?? q.origin
  const email = q.email?.toLowerCase()
  return pageOf(
    deps.secret,
    { list: listKey('suppressions', { reason, email }), query: q, id: suppressions.id },
    (ks) =>
      deps.db.q
        .select()
        .from(suppressions)
        .where(and(eq(suppressions.accountId, actor.accountId), reason ? eq(suppressions.reason, reason) : undefined, email ? eq(suppressions.email, email) : undefined, ks.where))
        .orderBy(ks.orderBy)
        .limit(ks.limit),
    toSuppression,
  )
}

export async function getSuppression(deps: Deps, actor: Actor, idOrEmail: string) {
  return toSuppression(await find(deps, actor, idOrEmail))
}

/** Clears a hard bounce or a manual entry; an unsubscribe or a complaint stays until the recipient says otherwise. */
export async function deleteSuppression(deps: Deps, actor: Actor, idOrEmail: string) {
  const row = await find(deps, actor, idOrEmail)
  if (!clearable(row)) {
    throw new AppError('contact_resubscribe_required', {
      message: `${row.email} is suppressed because of ${row.reason === 'complaint' ? 'a spam complaint' : 'an unsubscribe'}; only the recipient can undo that.`,
      extra: { reason: row.reason },
    })
  }
  await deps.db.write((tx) => tx.delete(suppressions).where(eq(suppressions.id, row.id)))
  await recordChange(deps, actor, { resource: 'suppression', resourceId: row.id, action: 'deleted', before: toSuppression(row), after: null })
  return { object: 'suppression' as const, id: row.id, deleted: true }
}
