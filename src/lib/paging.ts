import { AppError } from '../errors/app-error'
import { hmac, safeEqual } from './crypto'

export interface PageQuery {
  limit?: number
  cursor?: string
  after?: string
  before?: string
}

export interface PageRequest {
  limit: number
  /** Rows strictly beyond this id in list order (`after`) or strictly before it (`before`). */
  anchor?: { id: string; dir: 'after' | 'before' }
}

export interface Page<T> {
  object: 'list'
  data: T[]
  has_more: boolean
  next_cursor: string | null
}

export const DEFAULT_LIMIT = 100

/**
 * Reads paging input for one list. A `cursor` is opaque: signed, and bound to the
 * list and its filters, so a tampered cursor or one from another list or filter
 * set answers `invalid_cursor`. `after`/`before` take a row id, as Resend's do.
 */
export function readPage(secret: string, list: string, q: PageQuery, idPattern?: RegExp): PageRequest {
  const limit = q.limit ?? DEFAULT_LIMIT
  const given = [q.cursor, q.after, q.before].filter((v) => v !== undefined && v !== '')
  if (given.length > 1) throw new AppError('invalid_cursor', { message: 'Use only one of `cursor`, `after` and `before`.' })
  if (q.cursor) {
    const [body, sig] = q.cursor.split('.')
    if (!body || !sig || !safeEqual(sig, hmac(secret, `${list}|${body}`))) throw new AppError('invalid_cursor')
    try {
      const { i, d } = JSON.parse(Buffer.from(body, 'base64url').toString()) as { i: string; d: 'after' | 'before' }
      if (typeof i !== 'string' || (d !== 'after' && d !== 'before')) throw new Error()
      return { limit, anchor: { id: i, dir: d } }
    } catch {
      throw new AppError('invalid_cursor')
    }
  }
  const id = q.after || q.before
  if (id) {
    if (idPattern && !idPattern.test(id)) throw new AppError('invalid_cursor', { message: '`after` and `before` take the id of a row of this list.' })
    return { limit, anchor: { id, dir: q.after ? 'after' : 'before' } }
  }
  return { limit }
}

export function makeCursor(secret: string, list: string, id: string, dir: 'after' | 'before') {
  const body = Buffer.from(JSON.stringify({ i: id, d: dir })).toString('base64url')
  return `${body}.${hmac(secret, `${list}|${body}`)}`
}

/**
 * Shapes `limit + 1` rows fetched in the direction of travel into a page in list
 * order, with `has_more` and the cursor that continues the same way.
 */
export function toPage<R extends { id: string }, T>(secret: string, list: string, req: PageRequest, rows: R[], map: (r: R) => T): Page<T> {
  const hasMore = rows.length > req.limit
  let slice = rows.slice(0, req.limit)
  const dir = req.anchor?.dir ?? 'after'
  if (dir === 'before') slice = slice.reverse()
  const edge = dir === 'before' ? slice[0] : slice[slice.length - 1]
  return {
    object: 'list',
    data: slice.map(map),
    has_more: hasMore,
    next_cursor: hasMore && edge ? makeCursor(secret, list, edge.id, dir) : null,
  }
}

/** A list name that also binds the filters, so a cursor cannot be reused under other filters. */
export const listKey = (name: string, filters: Record<string, unknown> = {}) =>
  `${name}?${Object.entries(filters)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${String(v)}`)
    .join('&')}`
