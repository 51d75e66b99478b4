import { index, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export type EventFieldType = 'string' | 'number' | 'boolean' | 'date'

/** A custom event an account defines: its name and the flat payload schema occurrences are checked against. */
export const eventDefinitions = sqliteTable(
  'event_definitions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
    schema: text('schema', { mode: 'json' }).$type<Record<string, EventFieldType> | null>(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('event_definitions_account_name').on(t.accountId, t.name), index('event_definitions_account').on(t.accountId, t.id)],
)

/**
 * One occurrence of an event for a contact, recorded by `POST /events/send`. It keeps
 * the event's name as sent, so the record stays readable after the definition is gone.
 */
export const eventOccurrences = sqliteTable(
  'event_occurrences',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    eventId: text('event_id').notNull(),
    name: text('name').notNull(),
    contactId: text('contact_id').notNull(),
    payload: text('payload', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('event_occurrences_contact').on(t.accountId, t.contactId, t.name, t.createdAt), index('event_occurrences_event').on(t.eventId)],
)
