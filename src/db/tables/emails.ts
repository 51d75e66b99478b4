import { sql } from 'drizzle-orm'
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export type EmailEventType =
  | 'queued' | 'scheduled' | 'sent' | 'delivered' | 'delivery_delayed' | 'bounced' | 'failed' | 'suppressed' | 'canceled'
  | 'complained' | 'opened' | 'clicked' | 'unsubscribed' | 'received'

export interface Tag {
  name: string
  value: string
}

/** An outbound email as accepted: what was asked, and where it stands (`lastEvent`). */
export const emails = sqliteTable(
  'emails',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    apiKeyId: text('api_key_id'),
    /** The verified sending domain; null for simulator sends. */
    domainId: text('domain_id'),
    /** As given: `Name <a@b>` or `a@b`. */
    from: text('from').notNull(),
    fromEmail: text('from_email').notNull(),
    /** The part of `from_email` after its `@`, computed by SQLite (so no writer can miss it), for the `from=@domain` filter's index. */
    fromDomain: text('from_domain').generatedAlwaysAs(sql`substr(from_email, instr(from_email, '@') + 1)`, { mode: 'virtual' }),
    to: text('to', { mode: 'json' }).$type<string[]>().notNull(),
    cc: text('cc', { mode: 'json' }).$type<string[]>().notNull(),
    bcc: text('bcc', { mode: 'json' }).$type<string[]>().notNull(),
    replyTo: text('reply_to', { mode: 'json' }).$type<string[]>().notNull(),
    subject: text('subject').notNull(),
    html: text('html'),
    text: text('text'),
    headers: text('headers', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    tags: text('tags', { mode: 'json' }).$type<Tag[]>().notNull(),
    topicId: text('topic_id'),
    templateId: text('template_id'),
    broadcastId: text('broadcast_id'),
    /** The Message-ID header we set (without angle brackets). */
    messageId: text('message_id').notNull(),
    inReplyTo: text('in_reply_to'),
    references: text('references'),
    priority: text('priority', { enum: ['transactional', 'bulk'] }).notNull(),
    simulator: integer('simulator', { mode: 'boolean' }).notNull(),
    openTracking: integer('open_tracking', { mode: 'boolean' }).notNull(),
    clickTracking: integer('click_tracking', { mode: 'boolean' }).notNull(),
    scheduledAt: text('scheduled_at'),
    lastEvent: text('last_event').$type<EmailEventType>().notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    index('emails_account').on(t.accountId, t.id),
    index('emails_account_event').on(t.accountId, t.lastEvent, t.id),
    // The list's `from` filter, newest first from the index walk: an address, or (`@domain`) the part after its `@`.
    index('emails_account_from').on(t.accountId, t.fromEmail, t.id),
    index('emails_account_from_domain').on(t.accountId, t.fromDomain, t.id),
    index('emails_message_id').on(t.messageId),
    // A broadcast's emails: its fan-out, cancel, recipients listing and clicked links.
    index('emails_broadcast').on(t.broadcastId, t.id),
  ],
)

export const emailAttachments = sqliteTable(
  'email_attachments',
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
  (t) => [index('email_attachments_email').on(t.emailId)],
)

/**
 * The delivery outbox: one row per recipient, written in the send's transaction.
 * Workers claim due rows with a lease, so two instances never deliver one row twice
 * and a restart resumes from here. A scheduled send is a row whose `next_attempt_at`
 * is its time.
 */
export const deliveries = sqliteTable(
  'deliveries',
  {
    id: text('id').primaryKey(),
    emailId: text('email_id').notNull(),
    accountId: text('account_id').notNull(),
    /** Lower-case address. */
    recipient: text('recipient').notNull(),
    recipientDomain: text('recipient_domain').notNull(),
    kind: text('kind', { enum: ['to', 'cc', 'bcc'] }).notNull(),
    state: text('state', { enum: ['scheduled', 'queued', 'deferred', 'sent', 'delivered', 'bounced', 'failed', 'canceled', 'suppressed'] }).notNull(),
    /** 0 transactional, 1 bulk: bulk is claimed only when no transactional row is due. */
    priority: integer('priority').notNull(),
    nextAttemptAt: text('next_attempt_at').notNull(),
    attempts: integer('attempts').notNull(),
    leaseOwner: text('lease_owner'),
    leaseUntil: text('lease_until'),
    lastCode: integer('last_code'),
    lastResponse: text('last_response'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    index('deliveries_due').on(t.state, t.priority, t.nextAttemptAt),
    index('deliveries_email').on(t.emailId),
    // The list's `to` filter: an address's emails, newest first from the index walk.
    index('deliveries_account_recipient').on(t.accountId, t.recipient, t.emailId),
    // The trust checks' send rates over a recent window (src/trust/rates.ts): without it they read every delivery ever made.
    index('deliveries_created').on(t.createdAt),
  ],
)

/**
 * The tags of each email, for the list's `tag` filter to walk an index instead of
 * every email's JSON: a row per distinct `name:value`, and a row per distinct name
 * with value '' (a real value is never empty) for the `name` form, so either form
 * finds each email once, newest first. Written with the email, in its transaction.
 */
export const emailTags = sqliteTable(
  'email_tags',
  {
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
    value: text('value').notNull(),
    emailId: text('email_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.name, t.value, t.emailId] })],
)

/** Every delivery attempt with the remote server's reply, for /emails/{id}/explain. */
export const deliveryAttempts = sqliteTable(
  'delivery_attempts',
  {
    id: text('id').primaryKey(),
    deliveryId: text('delivery_id').notNull(),
    emailId: text('email_id').notNull(),
    startedAt: text('started_at').notNull(),
    durationMs: integer('duration_ms').notNull(),
    /** The MX host or relay spoken to. */
    host: text('host'),
    smtpCode: integer('smtp_code'),
    enhancedCode: text('enhanced_code'),
    response: text('response'),
    outcome: text('outcome', { enum: ['delivered', 'deferred', 'bounced', 'failed', 'network_error', 'captured', 'simulated'] }).notNull(),
    /** The delivery worker that made the attempt (host:pid:…, its instance first): with several instances on one database, which one sent it. */
    worker: text('worker'),
  },
  (t) => [index('delivery_attempts_email').on(t.emailId, t.startedAt)],
)

/** The event record: what metrics and webhooks are computed from. */
export const emailEvents = sqliteTable(
  'email_events',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    emailId: text('email_id').notNull(),
    type: text('type').$type<EmailEventType>().notNull(),
    recipient: text('recipient'),
    data: text('data', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [
    index('email_events_email').on(t.emailId, t.id),
    index('email_events_account_type').on(t.accountId, t.type, t.createdAt),
    // Segment engagement rules: did this address open or click lately.
    index('email_events_recipient').on(t.accountId, t.recipient, t.type, t.createdAt),
    // Complaints of a recent window across accounts, for the trust checks' rates.
    index('email_events_type_time').on(t.type, t.createdAt),
  ],
)

/** Addresses the account must not send to; hard bounces and complaints add themselves. */
export const suppressions = sqliteTable(
  'suppressions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    email: text('email').notNull(),
    reason: text('reason', { enum: ['bounce', 'complaint', 'unsubscribe', 'manual'] }).notNull(),
    sourceEmailId: text('source_email_id'),
    detail: text('detail'),
    createdAt: text('created_at').notNull(),
  },
  (t) => [uniqueIndex('suppressions_account_email').on(t.accountId, t.email)],
)

/** Emails counted against the account's daily and monthly quotas (`day:2026-03-02`, `month:2026-03`). */
export const accountUsage = sqliteTable(
  'account_usage',
  {
    accountId: text('account_id').notNull(),
    period: text('period').notNull(),
    sent: integer('sent').notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.period] })],
)
