import { asc, desc, gt, lt, type SQL } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import type { PageRequest } from '../lib/paging'

/**
 * Keyset paging over a time-ordered id column, newest first: the condition and
 * order that fetch the next `limit + 1` rows in the direction of travel.
 */
export function keyset(id: SQLiteColumn, req: PageRequest): { where?: SQL; orderBy: SQL; limit: number } {
  const a = req.anchor
  return {
    where: a ? (a.dir === 'after' ? lt(id, a.id) : gt(id, a.id)) : undefined,
    orderBy: a?.dir === 'before' ? asc(id) : desc(id),
    limit: req.limit + 1,
  }
}
