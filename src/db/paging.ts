import { asc, desc, gt, lt, type SQL } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { UUID_RE } from '../lib/ids'
import { readPage, toPage, type Page, type PageQuery, type PageRequest } from '../lib/paging'

export interface Keyset {
  where?: SQL
  orderBy: SQL
  limit: number
}

/**
 * Keyset paging over a time-ordered id column: the condition and order that fetch
 * the next `limit + 1` rows in the direction of travel. Newest first by default;
 * oldest first (a timeline) makes `after` move later.
 */
export function keyset(id: SQLiteColumn, req: PageRequest, oldestFirst = false): Keyset {
  const a = req.anchor
  const forward = a?.dir !== 'before'
  const later = oldestFirst === forward
  return {
    where: a ? (later ? gt(id, a.id) : lt(id, a.id)) : undefined,
    orderBy: later ? asc(id) : desc(id),
    limit: req.limit + 1,
  }
}

export interface ListSpec {
  /** The list's name bound with its filters (`listKey`), so a cursor serves only this list. */
  list: string
  query: PageQuery
  /** The time-ordered id column the list pages over. */
  id: SQLiteColumn
  oldestFirst?: boolean
}

/**
 * One page of a list: reads the paging input, has `fetch` read `limit + 1` rows in
 * the direction of travel, and shapes them with `map` into the list envelope.
 */
export async function pageOf<R extends { id: string }, T>(secret: string, spec: ListSpec, fetch: (ks: Keyset) => Promise<R[]>, map: (r: R) => T): Promise<Page<T>> {
  const req = readPage(secret, spec.list, spec.query, UUID_RE)
  const rows = await fetch(keyset(spec.id, req, spec.oldestFirst))
  return toPage(secret, spec.list, req, rows, map)
}
