import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const contacts = sqliteTable(
  'contacts',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    /** Stored lower-cased: addresses are matched case-insensitively. */
    email: text('email').notNull(),
    firstName: text('first_name'),
    lastName: text('last_name'),
    unsubscribed: integer('unsubscribed', { mode: 'boolean' }).notNull(),
    properties: text('properties', { mode: 'json' }).$type<Record<string, string | number | boolean | null>>().notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('contacts_account_email').on(t.accountId, t.email), index('contacts_account').on(t.accountId, t.id)],
)
