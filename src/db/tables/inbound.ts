import { blob, index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** SPF, DKIM and DMARC as mailauth found them when the message arrived. */
export interface InboundAuth {
  spf: { result: string; domain: string | null } | null
  dkim: { result: string; domain: string | null; selector: string | null }[]
  dmarc: { result: string; domain: string | null; policy: string | null } | null
  /** The Authentication-Results header value we would add. */
  header: string | null
  error?: string
}

/**
 * Every message the SMTP listener accepted, as received, committed before the 250
 * reply. `state` says what became of it: turned into inbound emails, matched as a
 * bounce or complaint, or waiting (a crash between storing and processing).
 */
export const inboundRaw = sqliteTable(
  'inbound_raw',
  {
    id: text('id').primaryKey(),
    kind: text('kind', { enum: ['mail', 'report'] }).notNull(),
    state: text('state', { enum: ['pending', 'processed', 'unmatched', 'failed'] }).notNull(),
    remoteAddress: text('remote_address').notNull(),
    helo: text('helo'),
    mailFrom: text('mail_from'),
    /** The accepted RCPT TO addresses, lower-case. */
    rcptTo: text('rcpt_to', { mode: 'json' }).$type<string[]>().notNull(),
    size: integer('size').notNull(),
    raw: blob('raw', { mode: 'buffer' }).$type<Buffer>().notNull(),
    detail: text('detail'),
    receivedAt: text('received_at').notNull(),
  },
  (t) => [index('inbound_raw_state').on(t.state)],
)

/** One received message as the account that owns the recipient domain sees it. */
export const inboundEmails = sqliteTable(
  'inbound_emails',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    rawId: text('raw_id').notNull(),
    domainId: text('domain_id').notNull(),
    threadId: text('thread_id').notNull(),
    from: text('from').notNull(),
    fromEmail: text('from_email').notNull(),
    to: text('to', { mode: 'json' }).$type<string[]>().notNull(),
    cc: text('cc', { mode: 'json' }).$type<string[]>().notNull(),
    bcc: text('bcc', { mode: 'json' }).$type<string[]>().notNull(),
    replyTo: text('reply_to', { mode: 'json' }).$type<string[]>().notNull(),
    /** The envelope recipients of this account (RCPT TO), lower-case. */
    receivedFor: text('received_for', { mode: 'json' }).$type<string[]>().notNull(),
    subject: text('subject').notNull(),
    html: text('html'),
    text: text('text'),
    headers: text('headers', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    /** Without angle brackets. */
    messageId: text('message_id').notNull(),
    inReplyTo: text('in_reply_to'),
    references: text('references', { mode: 'json' }).$type<string[]>().notNull(),
    auth: text('auth', { mode: 'json' }).$type<InboundAuth>().notNull(),
    size: integer('size').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [
    index('inbound_emails_account').on(t.accountId, t.id),
    index('inbound_emails_thread').on(t.threadId),
    uniqueIndex('inbound_emails_raw_account').on(t.rawId, t.accountId),
  ],
)

export const inboundAttachments = sqliteTable(
  'inbound_attachments',
  {
    id: text('id').primaryKey(),
    emailId: text('email_id').notNull(),
    accountId: text('account_id').notNull(),
    filename: text('filename').notNull(),
    contentType: text('content_type').notNull(),
    contentId: text('content_id'),
    disposition: text('disposition', { enum: ['attachment', 'inline'] }).notNull(),
    size: integer('size').notNull(),
    content: blob('content', { mode: 'buffer' }).$type<Buffer>().notNull(),
  },
  (t) => [index('inbound_attachments_email').on(t.emailId)],
)

/** A conversation: inbound and outbound messages joined by Message-ID, In-Reply-To and References. */
export const threads = sqliteTable(
  'threads',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    subject: text('subject').notNull(),
    lastMessageAt: text('last_message_at').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('threads_account').on(t.accountId, t.id)],
)

/** Which thread a Message-ID belongs to, for inbound and outbound messages alike. */
export const threadMessages = sqliteTable(
  'thread_messages',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    threadId: text('thread_id').notNull(),
    /** Without angle brackets. */
    messageId: text('message_id').notNull(),
    direction: text('direction', { enum: ['inbound', 'outbound'] }).notNull(),
    /** The inbound email or the (outbound) email. */
    emailId: text('email_id').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [uniqueIndex('thread_messages_account_message').on(t.accountId, t.messageId, t.emailId), index('thread_messages_thread').on(t.threadId, t.createdAt)],
)
