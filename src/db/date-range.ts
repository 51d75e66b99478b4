import { gte, lte, type SQL } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { AppError } from '../errors/app-error'
import { DAY, iso } from '../lib/clock'

/** An ISO 8601 date or date-time; a bare date is its first instant, or with `endOfDay` its last. */
export function instant(value: string, field: string, endOfDay = false): string {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value)
  const ms = dateOnly ? Date.parse(`${value}T00:00:00Z`) + (endOfDay ? DAY - 1 : 0) : /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : NaN
  if (Number.isNaN(ms)) throw new AppError('validation_error', { message: `\`${field}\` must be an ISO 8601 date or date-time.`, details: [{ field: `query.${field}`, message: 'must be an ISO 8601 date or date-time' }] })
  return iso(ms)
}

/** `since` and `until` (inclusive; a bare `until` date covers its whole day) as conditions on an ISO timestamp column. */
export function dateRange(column: SQLiteColumn, q: { since?: string; until?: string }): SQL[] {
  const since = q.since === undefined ? undefined : instant(q.since, 'since')
  const until = q.until === undefined ? undefined : instant(q.until, 'until', true)
  if (since && until && since > until) throw new AppError('invalid_parameter', { message: '`since` is after `until`.' })
  return [since ? gte(column, since) : undefined, until ? lte(column, until) : undefined].filter((c): c is SQL => c !== undefined)
}
