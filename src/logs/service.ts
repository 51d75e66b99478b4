import { and, between, eq, sql } from 'drizzle-orm'
import { dateRange } from '../db/date-range'
import { pageOf } from '../db/paging'
import { requestLogs } from '../db/tables'
import type { Deps } from '../deps'
import { notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { listKey } from '../lib/paging'
import type { ListLogsQuery } from './schema'

type Row = typeof requestLogs.$inferSelect

function toSummary(r: Row) {
  return {
    object: 'log' as const,
    id: r.id,
    created_at: r.createdAt,
    endpoint: r.path,
    method: r.method,
    response_status: r.status,
    user_agent: r.userAgent,
    key_id: r.keyId,
    error_code: r.errorCode,
    duration_ms: r.durationMs,
  }
}

/** A body cut at its limit is no longer JSON: it is answered as the text it is. */
const body = (text: string | null, truncated: boolean) => (text === null ? null : truncated ? text : JSON.parse(text))

function toLog(r: Row) {
  return {
    ...toSummary(r),
    request_id: r.id,
    query: r.query,
    request_headers: r.requestHeaders,
    request_body: body(r.requestBody, r.requestBodyTruncated),
    request_body_truncated: r.requestBodyTruncated,
    response_body: body(r.responseBody, r.responseBodyTruncated),
    response_body_truncated: r.responseBodyTruncated,
  }
}

function statusCondition(status: string | undefined) {
  if (status === undefined) return undefined
  if (!status.endsWith('xx')) return eq(requestLogs.status, Number(status))
  const from = Number(status[0]) * 100
  return between(requestLogs.status, from, from + 99)
}

/**
 * Newest first. What this process has not written yet is written first, so a
 * request answered a moment ago is already listed.
 */
export async function listLogs(deps: Deps, actor: Actor, q: ListLogsQuery) {
  const filters = { method: q.method, path: q.path, path_prefix: q.path_prefix, status: q.status, key_id: q.key_id?.toLowerCase(), error_code: q.error_code, since: q.since, until: q.until }
  const where = and(
    eq(requestLogs.accountId, actor.accountId),
    filters.method ? eq(requestLogs.method, filters.method) : undefined,
    filters.path ? eq(requestLogs.path, filters.path) : undefined,
    filters.path_prefix ? sql`substr(${requestLogs.path}, 1, ${filters.path_prefix.length}) = ${filters.path_prefix}` : undefined,
    statusCondition(filters.status),
    filters.key_id ? eq(requestLogs.keyId, filters.key_id) : undefined,
    filters.error_code ? eq(requestLogs.errorCode, filters.error_code) : undefined,
    ...dateRange(requestLogs.createdAt, q),
  )
  await deps.requestLog.flush()
  return pageOf(
    deps.secret,
    { list: listKey('logs', filters), query: q, id: requestLogs.id },
    (ks) => deps.db.q.select().from(requestLogs).where(and(where, ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toSummary,
  )
}

export async function getLog(deps: Deps, actor: Actor, id: string) {
  await deps.requestLog.flush()
  const [row] = await deps.db.q
    .select()
    .from(requestLogs)
    .where(and(eq(requestLogs.id, id.toLowerCase()), eq(requestLogs.accountId, actor.accountId)))
  if (!row) throw notFound(`Log ${id}`)
  return toLog(row)
}
