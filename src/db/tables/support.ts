import { blob, index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * A customer's support request. `merged` ones were folded into `merged_into_id`
 * and keep only their row: their messages and attachments moved there.
 */
export const supportRequests = sqliteTable(
  'support_requests',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    subject: text('subject').notNull(),
    status: text('status', { enum: ['open', 'closed', 'merged'] }).notNull(),
    /** Where the operator's desk answers: the person who opened it, else the account's owner. */
    contactEmail: text('contact_email'),
    openedByKeyId: text('opened_by_key_id'),
    openedByPersonId: text('opened_by_person_id'),
    mergedIntoId: text('merged_into_id'),
    /** The resolution: the reopen window counts from here. */
    closedAt: text('closed_at'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('support_requests_account').on(t.accountId, t.id), index('support_requests_account_created').on(t.accountId, t.createdAt)],
)

/** One message of a request: the opening text, a reply, or a set of attached files. */
export const supportMessages = sqliteTable(
  'support_messages',
  {
    id: text('id').primaryKey(),
    requestId: text('request_id').notNull(),
    accountId: text('account_id').notNull(),
    kind: text('kind', { enum: ['opened', 'reply', 'attachments'] }).notNull(),
    body: text('body').notNull(),
    byKeyId: text('by_key_id'),
    byPersonId: text('by_person_id'),
    /** The email that forwarded it to the operator's desk, or why it could not go. */
    deskEmailId: text('desk_email_id'),
    deskError: text('desk_error'),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('support_messages_request').on(t.requestId, t.id), index('support_messages_account_created').on(t.accountId, t.createdAt)],
)

/** A file on a message; `content` is emptied by the purge job once `expires_at` passed. */
export const supportAttachments = sqliteTable(
  'support_attachments',
  {
    id: text('id').primaryKey(),
    requestId: text('request_id').notNull(),
    messageId: text('message_id').notNull(),
    accountId: text('account_id').notNull(),
    filename: text('filename').notNull(),
    /** Read from the bytes, never taken from the caller. */
    contentType: text('content_type').notNull(),
    size: integer('size').notNull(),
    content: blob('content', { mode: 'buffer' }).$type<Buffer>(),
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(),
    purgedAt: text('purged_at'),
  },
  (t) => [index('support_attachments_request').on(t.requestId, t.id), index('support_attachments_expiry').on(t.purgedAt, t.expiresAt)],
)

/** One helpful vote per voter (`key:<id>` or `person:<id>`) per answer per UTC day; the key makes a second one a no-op. */
export const supportVotes = sqliteTable(
  'support_votes',
  {
    slug: text('slug').notNull(),
    voter: text('voter').notNull(),
    day: text('day').notNull(),
    accountId: text('account_id').notNull(),
    helpful: integer('helpful', { mode: 'boolean' }).notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.slug, t.voter, t.day] }), index('support_votes_slug').on(t.slug, t.helpful)],
)
