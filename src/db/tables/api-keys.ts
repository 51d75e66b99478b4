import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
    permission: text('permission', { enum: ['full_access', 'sending_access'] }).notNull(),
    domainScope: text('domain_scope'),
    scopes: text('scopes', { mode: 'json' }).$type<string[]>().notNull(),
    expiresAt: text('expires_at'),
    tokenHash: text('token_hash').notNull(),
    tokenPrefix: text('token_prefix').notNull(),
    previousTokenHash: text('previous_token_hash'),
    previousKeyExpiresAt: text('previous_key_expires_at'),
    rotatedAt: text('rotated_at'),
    system: integer('system', { mode: 'boolean' }).notNull(),
    budgetPerPeriod: integer('budget_per_period'),
    period: text('period', { enum: ['hourly', 'daily', 'weekly', 'monthly'] }).notNull(),
    rateCeilingPerMinute: integer('rate_ceiling_per_minute'),
    loopGuard: text('loop_guard', { enum: ['off', 'warn', 'hold', 'block'] }).notNull(),
    pausedAt: text('paused_at'),
    pausedReason: text('paused_reason'),
    createdByKeyId: text('created_by_key_id'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    lastUsedAt: text('last_used_at'),
    revokedAt: text('revoked_at'),
  },
  (t) => [
    uniqueIndex('api_keys_token_hash').on(t.tokenHash),
    index('api_keys_previous_token_hash').on(t.previousTokenHash),
    index('api_keys_account').on(t.accountId, t.id),
  ],
)

/** Requests per key per UTC day, flushed from memory so the hot path never writes. */
export const apiKeyUsage = sqliteTable(
  'api_key_usage',
  {
    keyId: text('key_id').notNull(),
    day: text('day').notNull(),
    requests: integer('requests').notNull(),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.day] })],
)

/** Emails a key has spent in one budget period; the send path adds to it in the send's transaction. */
export const apiKeyBudgetUsage = sqliteTable(
  'api_key_budget_usage',
  {
    keyId: text('key_id').notNull(),
    periodStart: text('period_start').notNull(),
    used: integer('used').notNull(),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.periodStart] })],
)
