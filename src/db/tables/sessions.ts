import { index, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** A console sign-in: the cookie's token is kept only as a hash, and the session acts in one account. */
export const consoleSessions = sqliteTable(
  'console_sessions',
  {
    id: text('id').primaryKey(),
    tokenHash: text('token_hash').notNull(),
    personId: text('person_id').notNull(),
    accountId: text('account_id').notNull(),
    /** When this session passed the second factor; null while it has not. */
    mfaVerifiedAt: text('mfa_verified_at'),
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(),
  },
  (t) => [uniqueIndex('console_sessions_token_hash').on(t.tokenHash), index('console_sessions_person').on(t.personId), index('console_sessions_expires').on(t.expiresAt)],
)
