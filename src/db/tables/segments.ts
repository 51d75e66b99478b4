import { index, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import type { Match, Rule } from '../../segments/schema'

/**
 * A segment (an audience, under its older name). With no rules it is static: its
 * members are `segment_contacts` rows. With rules, its members are the contacts
 * matching them, computed whenever the segment is read.
 */
export const segments = sqliteTable(
  'segments',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
    match: text('match').$type<Match>().notNull().default('all'),
    rules: text('rules', { mode: 'json' }).$type<Rule[]>().notNull().default([]),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('segments_account').on(t.accountId, t.id)],
)

/** Static membership: a contact is in a segment while its row exists. */
export const segmentContacts = sqliteTable(
  'segment_contacts',
  {
    segmentId: text('segment_id').notNull(),
    contactId: text('contact_id').notNull(),
    accountId: text('account_id').notNull(),
    /** When the contact was added. */
    createdAt: text('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.segmentId, t.contactId] }), index('segment_contacts_contact').on(t.contactId)],
)
