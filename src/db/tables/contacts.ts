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

export interface ImportCounts {
  created: number
  updated: number
  skipped: number
  failed: number
  total: number
}

/** One CSV row that changed nothing, and why. */
export interface RejectedRow {
  row: number
  line: number
  code: string
  email: string
  message: string
  fix: string
}

/** A finished CSV import: applied in the request that made it, kept so it can be read again. */
export const contactImports = sqliteTable(
  'contact_imports',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    status: text('status', { enum: ['completed'] }).notNull(),
    onConflict: text('on_conflict', { enum: ['upsert', 'skip'] }).notNull(),
    counts: text('counts', { mode: 'json' }).$type<ImportCounts>().notNull(),
    rejected: text('rejected', { mode: 'json' }).$type<RejectedRow[]>().notNull(),
    /** Header columns that named neither a contact field nor a defined property. */
    ignoredColumns: text('ignored_columns', { mode: 'json' }).$type<string[]>().notNull(),
    createdAt: text('created_at').notNull(),
    completedAt: text('completed_at').notNull(),
  },
  (t) => [index('contact_imports_account').on(t.accountId, t.id)],
)

/**
 * A request that an unsubscribed contact confirm they want mail again. Only the
 * confirmation page (reached with the request's signed link) lifts the unsubscribe.
 */
export const contactResubscribes = sqliteTable(
  'contact_resubscribes',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    contactId: text('contact_id').notNull(),
    /** The address asked; a request stops working if the contact's address changes. */
    email: text('email').notNull(),
    status: text('status', { enum: ['pending', 'confirmed'] }).notNull(),
    expiresAt: text('expires_at').notNull(),
    createdAt: text('created_at').notNull(),
    confirmedAt: text('confirmed_at'),
  },
  (t) => [index('contact_resubscribes_contact').on(t.contactId, t.status)],
)
