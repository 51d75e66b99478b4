import { index, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * A segment (an audience, under its older name). Minimal for now: enough for static
 * membership; rules come with the segments work.
 */
export const segments = sqliteTable(
  'segments',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
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
