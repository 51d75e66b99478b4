import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** A tenant. Every resource row carries the account it belongs to. */
export const accounts = sqliteTable('accounts', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** Every member's session must pass two-factor authentication. */
  requireMfa: integer('require_mfa', { mode: 'boolean' }).notNull().default(false),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

/** Deployment-wide values generated once (signing secrets), shared by every instance on one database. */
export const settings = sqliteTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
})
