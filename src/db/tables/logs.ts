import { integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * One API request as it was answered, kept 30 days. Written in batches from
 * memory after the reply (src/logs/buffer.ts), never in the request's transaction.
 */
export const requestLogs = sqliteTable(
  'request_logs',
  {
    /** The request id of the `x-request-id` header: a UUIDv7 made on arrival, so id order is arrival order and `created_at` is its time. */
    id: text('id').notNull(),
    accountId: text('account_id').notNull(),
    keyId: text('key_id'),
    method: text('method').notNull(),
    path: text('path').notNull(),
    /** The query string without its `?`, or null. */
    query: text('query'),
    status: integer('status').notNull(),
    errorCode: text('error_code'),
    durationMs: real('duration_ms').notNull(),
    userAgent: text('user_agent'),
    /** Request headers, Authorization and cookies redacted. */
    requestHeaders: text('request_headers', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    /** Redacted JSON text, cut at 8 KB (then `*_truncated`, and the text is no longer valid JSON). */
    requestBody: text('request_body'),
    requestBodyTruncated: integer('request_body_truncated', { mode: 'boolean' }).notNull(),
    responseBody: text('response_body'),
    responseBodyTruncated: integer('response_body_truncated', { mode: 'boolean' }).notNull(),
    createdAt: text('created_at').notNull(),
  },
  // Every read is one account's (a list in id order, one id), and retention goes account by account:
  // the key is the one index, so each request costs the fewest writes. The id holds the time, so no index on created_at.
  (t) => [primaryKey({ columns: [t.accountId, t.id] })],
)
