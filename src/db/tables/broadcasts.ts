import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import type { TemplateValue } from './templates'

/**
 * `draft` → (send) `scheduled` → (its time) `queued` → (every message enqueued)
 * `sending` → (no message left waiting) `sent`; `canceled` from scheduled, queued
 * or sending.
 */
export type BroadcastStatus = 'draft' | 'scheduled' | 'queued' | 'sending' | 'sent' | 'canceled'

/**
 * A broadcast: content for a segment, sent as one email per recipient. Its content
 * is frozen once sending starts (only drafts change), so the emails of a broadcast
 * keep no copy of it: the delivery side renders each recipient's copy from here.
 * While `queued`, the fan-out job writes the emails in chunks of contacts ordered
 * by id, `fanout_cursor` being the last contact done; a lease keeps two workers off
 * one broadcast, and a restart resumes from the cursor.
 */
export const broadcasts = sqliteTable(
  'broadcasts',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    name: text('name'),
    segmentId: text('segment_id').notNull(),
    topicId: text('topic_id'),
    /** A template whose published version gives the bodies, rendered with `template_variables` when sending starts. */
    templateId: text('template_id'),
    templateVariables: text('template_variables', { mode: 'json' }).$type<Record<string, TemplateValue>>(),
    from: text('from').notNull(),
    subject: text('subject').notNull(),
    replyTo: text('reply_to', { mode: 'json' }).$type<string[]>().notNull(),
    previewText: text('preview_text'),
    html: text('html'),
    text: text('text'),
    status: text('status').$type<BroadcastStatus>().notNull(),
    scheduledAt: text('scheduled_at'),
    /** When sending started: recipients resolved, content frozen. */
    startedAt: text('started_at'),
    /** When the last message left the queue. */
    sentAt: text('sent_at'),
    canceledAt: text('canceled_at'),
    /** The key that asked to send (its budget pays); null for a console session. */
    apiKeyId: text('api_key_id'),
    /** The sending domain, when it may send; null when every recipient is a simulator address. */
    domainId: text('domain_id'),
    /** Effective recipients: counted when sending starts (an estimate while scheduled), exact once every message is enqueued. */
    recipientCount: integer('recipient_count'),
    /** Emails written by the fan-out so far (suppressed addresses not included). */
    enqueued: integer('enqueued').notNull(),
    /** Messages a cancel stopped before they left. */
    canceledCount: integer('canceled_count').notNull(),
    fanoutCursor: text('fanout_cursor'),
    leaseOwner: text('lease_owner'),
    leaseUntil: text('lease_until'),
    /** Why a scheduled broadcast could not start (it is then canceled): a catalogue code and its message. */
    error: text('error', { mode: 'json' }).$type<{ code: string; message: string }>(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    index('broadcasts_account').on(t.accountId, t.id),
    index('broadcasts_status').on(t.status, t.scheduledAt),
    index('broadcasts_segment').on(t.accountId, t.segmentId),
    index('broadcasts_template').on(t.accountId, t.templateId),
  ],
)
