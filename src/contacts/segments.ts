import { and, eq, inArray } from 'drizzle-orm'
import type { Executor, Tx } from '../db'
import { segmentContacts, segments } from '../db/tables'
import { AppError, notFound } from '../errors/app-error'

export type SegmentRow = typeof segments.$inferSelect

/** A segment of the account by id; `what` names it as the caller knows it (segment or audience). */
export async function findSegment(q: Executor, accountId: string, id: string, what = 'Segment'): Promise<SegmentRow> {
  const [row] = await q
    .select()
    .from(segments)
    .where(and(eq(segments.accountId, accountId), eq(segments.id, id.toLowerCase())))
  if (!row) throw notFound(`${what} ${id}`)
  return row
}

/** A segment without rules: its members are added one by one. */
export const isStatic = (row: Pick<SegmentRow, 'rules'>) => row.rules.length === 0

/** Members are added only to static segments: a rule segment's members are whoever matches its rules. */
export function assertStatic(row: Pick<SegmentRow, 'id' | 'rules'>, what = 'Segment') {
  if (!isStatic(row)) {
    throw new AppError('invalid_parameter', {
      message: `${what} ${row.id} is chosen by rules: its members are the contacts matching them and cannot be added or removed by hand. Change the contact so it matches (or not), or use a static segment.`,
    })
  }
}

/** Segment references as ids (`"id"` or `{id}`), deduplicated; every one must be a static segment of the account. */
export async function segmentIds(q: Executor, accountId: string, refs: (string | { id: string })[]): Promise<string[]> {
  const ids = [...new Set(refs.map((r) => (typeof r === 'string' ? r : r.id).toLowerCase()))]
  if (!ids.length) return []
  const found = new Map((await q.select({ id: segments.id, rules: segments.rules }).from(segments).where(and(eq(segments.accountId, accountId), inArray(segments.id, ids)))).map((r) => [r.id, r]))
  for (const id of ids) {
    const row = found.get(id)
    if (!row) throw notFound(`Segment ${id}`)
    assertStatic(row)
  }
  return ids
}

/** Adds the contact to each segment; one it is already in keeps its first `created_at`. */
export async function addMemberships(tx: Tx, accountId: string, contactId: string, ids: string[], now: string) {
  if (!ids.length) return
  await tx
    .insert(segmentContacts)
    .values(ids.map((segmentId) => ({ segmentId, contactId, accountId, createdAt: now })))
    .onConflictDoNothing()
}

export async function isMember(q: Executor, segmentId: string, contactId: string) {
  const [row] = await q
    .select({ at: segmentContacts.createdAt })
    .from(segmentContacts)
    .where(and(eq(segmentContacts.segmentId, segmentId), eq(segmentContacts.contactId, contactId)))
  return row ?? null
}
