import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

const Method = t.Union(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'].map((m) => t.Literal(m)))

const summary = {
  object: t.Literal('log'),
  id: Uuid,
  created_at: Timestamp,
  endpoint: t.String({ description: 'the path called, without its query string' }),
  method: t.String(),
  response_status: t.Integer(),
  user_agent: t.Nullable(t.String()),
  key_id: t.Nullable(t.String({ description: 'the API key that made the request' })),
  error_code: t.Nullable(t.String({ description: 'the `code` of the error reply, if the request failed' })),
  duration_ms: t.Number({ description: 'from the request’s arrival to the reply’s departure' }),
}
export const LogSummary = t.Object(summary)

const Body = t.Unknown({ description: 'JSON with secrets replaced by `[redacted]` and long strings cut at 1,000 characters; cut at 8 KB (then the text itself, no longer valid JSON); null when there was none' })
export const Log = t.Object({
  ...summary,
  request_id: Uuid,
  query: t.Nullable(t.String({ description: 'the query string, without `?`' })),
  request_headers: t.Record(t.String(), t.String(), { description: 'as received; Authorization and cookies redacted' }),
  request_body: Body,
  request_body_truncated: t.Boolean(),
  response_body: Body,
  response_body_truncated: t.Boolean(),
})

export const LogList = t.Object({ object: t.Literal('list'), data: t.Array(LogSummary), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

export const ListLogsQuery = t.Composite([
  Paging,
  t.Object({
    method: t.Optional(Method),
    path: t.Optional(t.String({ minLength: 1, maxLength: 400, pattern: '^/', error: 'must be a path starting with /', description: 'this exact path' })),
    path_prefix: t.Optional(t.String({ minLength: 1, maxLength: 400, pattern: '^/', error: 'must be a path starting with /', description: 'paths starting with this, e.g. `/emails`' })),
    status: t.Optional(t.String({ pattern: '^[1-5]([0-9]{2}|xx)$', error: 'must be a status such as 404 or a class such as 4xx', description: 'a status (`422`) or a class (`4xx`)' })),
    key_id: t.Optional(Uuid),
    error_code: t.Optional(t.String({ minLength: 1, maxLength: 60, pattern: '^[a-z_]+$', error: 'must be an error code such as validation_error' })),
    since: t.Optional(t.String({ maxLength: 40, description: 'at or after: ISO 8601 date or date-time' })),
    until: t.Optional(t.String({ maxLength: 40, description: 'at or before: ISO 8601 date (the whole day) or date-time' })),
  }),
])
export type ListLogsQuery = Static<typeof ListLogsQuery>

export const LogIdParams = t.Object({ id: Uuid })
