import { index, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export type PropertyType = 'string' | 'number' | 'boolean' | 'date'
export type PropertyValue = string | number | boolean

/** A custom contact property: every value written under `key` on a contact must be of `type`. */
export const contactProperties = sqliteTable(
  'contact_properties',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    /** Case-sensitive, as contacts' `properties` keys are. */
    key: text('key').notNull(),
    type: text('type', { enum: ['string', 'number', 'boolean', 'date'] }).notNull(),
    fallbackValue: text('fallback_value', { mode: 'json' }).$type<PropertyValue | null>(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('contact_properties_account_key').on(t.accountId, t.key), index('contact_properties_account').on(t.accountId, t.id)],
)
