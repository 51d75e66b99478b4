import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const topics = sqliteTable(
  'topics',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    defaultSubscription: text('default_subscription', { enum: ['opt_in', 'opt_out'] }).notNull(),
    visibility: text('visibility', { enum: ['public', 'private'] }).notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('topics_account_name').on(t.accountId, t.name), index('topics_account').on(t.accountId, t.id)],
)

/** A contact's absolute answer for one topic; absence means "reports the topic default". */
export const contactTopics = sqliteTable(
  'contact_topics',
  {
    contactId: text('contact_id').notNull(),
    topicId: text('topic_id').notNull(),
    accountId: text('account_id').notNull(),
    subscribed: integer('subscribed', { mode: 'boolean' }).notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.contactId, t.topicId] }), index('contact_topics_topic').on(t.topicId)],
)
