import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * One row per (account, Idempotency-Key). `in_flight` rows carry a lease so a key
 * claimed by a process that died is taken over once the lease runs out; the work
 * and the `completed` row commit in one transaction, so a taken-over key never
 * finds half-done work.
 */
export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    accountId: text('account_id').notNull(),
    /** sha256 of the account and the caller's key; the key itself is never stored (src/http/idempotency.ts). */
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    state: text('state', { enum: ['in_flight', 'completed'] }).notNull(),
    leaseUntil: text('lease_until').notNull(),
    /** The process that holds an `in_flight` claim (instances.id): its death frees the claim at once. */
    instanceId: text('instance_id'),
    statusCode: integer('status_code'),
    /** Sealed (AES-GCM) under the caller's key: only a retry with that key can read it. */
    responseBody: text('response_body'),
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.key] }), index('idempotency_expires').on(t.expiresAt)],
)
