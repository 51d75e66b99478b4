import { inArray } from 'drizzle-orm'
import type { Tx } from '../db'
import { listOf, prepared } from '../db/prepared'
import { emails, type EmailEventType } from '../db/tables'
import type { NewEvent } from '../emails/events'
import type { ParsedInbound } from '../inbound/parse'
import type { Ids } from '../lib/ids'
import { queueFor, subscribersOf, type WebhookEventInput } from './outbox'

/**
 * The webhook kind of each recorded outbound event. `queued` and `unsubscribed`
 * have none; `received` is an inbound email's, sent by the inbound side with its
 * own data.
 */
const KINDS: Partial<Record<EmailEventType, string>> = {
  sent: 'email.sent',
  delivered: 'email.delivered',
  delivery_delayed: 'email.delivery_delayed',
  bounced: 'email.bounced',
  complained: 'email.complained',
  opened: 'email.opened',
  clicked: 'email.clicked',
  failed: 'email.failed',
  scheduled: 'email.scheduled',
  suppressed: 'email.suppressed',
  canceled: 'email.canceled',
}

const emailsIn = prepared((q) =>
  q
    .select({
      id: emails.id,
      from: emails.from,
      to: emails.to,
      subject: emails.subject,
      tags: emails.tags,
      messageId: emails.messageId,
      broadcastId: emails.broadcastId,
      templateId: emails.templateId,
      createdAt: emails.createdAt,
    })
    .from(emails)
    .where(inArray(emails.id, listOf('ids')))
    .prepare(),
)
type EmailFacts = Awaited<ReturnType<ReturnType<typeof emailsIn>['all']>>[number]

/**
 * Queues the webhook events of recorded email events, in the recording
 * transaction. An account without endpoints costs one indexed query; the emails
 * are read once for the whole batch, only when some endpoint takes one of its kinds.
 */
export async function queueEmailWebhooks(tx: Tx, ids: Ids, events: NewEvent[]): Promise<void> {
  const byAccount = new Map<string, NewEvent[]>()
  for (const e of events) {
    if (!KINDS[e.type]) continue
    const list = byAccount.get(e.accountId)
    if (list) list.push(e)
    else byAccount.set(e.accountId, [e])
  }
  for (const [accountId, list] of byAccount) {
    const endpoints = await subscribersOf(tx, accountId)
    const wanted = list.filter((e) => endpoints.some((ep) => ep.events.includes(KINDS[e.type]!)))
    if (!wanted.length) continue
    const found = await emailsIn(tx).all({ ids: JSON.stringify([...new Set(wanted.map((e) => e.emailId))]) })
    const byId = new Map(found.map((m) => [m.id, m]))
    const inputs: WebhookEventInput[] = []
    for (const e of wanted) {
      const email = byId.get(e.emailId)
      if (email) inputs.push({ type: KINDS[e.type]!, at: e.at, orderKey: e.emailId, data: emailEventData(email, e) })
    }
    await queueFor(tx, ids, accountId, endpoints, inputs)
  }
}

/** Resend's `data`: the email's facts, with `to` the recipient the event is about, and the kind's own detail. */
function emailEventData(email: EmailFacts, e: NewEvent): Record<string, unknown> {
  const d = e.data ?? {}
  const data: Record<string, unknown> = {
    email_id: email.id,
    created_at: email.createdAt,
    from: email.from,
    to: e.recipient ? [e.recipient] : email.to,
    subject: email.subject,
    message_id: email.messageId,
    tags: Object.fromEntries(email.tags.map((t) => [t.name, t.value])),
  }
  if (email.broadcastId) data.broadcast_id = email.broadcastId
  if (email.templateId) data.template_id = email.templateId
  for (const k of ['bounce', 'click', 'open', 'failed', 'complaint', 'scheduled_at'] as const) if (d[k] !== undefined) data[k] = d[k]
  if (e.type === 'delivery_delayed') data.delay = d.delay ?? { message: d.response ?? null, next_attempt_at: d.next_attempt_at ?? null }
  if (e.type === 'suppressed') data.suppressed = suppressedDetail(d.suppressed as { reason?: string; message?: string } | undefined)
  return data
}

/** Resend's suppression detail; reasons it has no name for (unsubscribe, manual, topic, simulated) keep ours. */
function suppressedDetail(s: { reason?: string; message?: string } = {}) {
  const reason = s.reason === 'bounce' ? 'previous_bounce' : s.reason === 'complaint' ? 'previous_complaint' : (s.reason ?? 'unknown')
  return { type: 'OnAccountSuppressionList', reason, message: s.message ?? '', diagnosticCode: [] as string[] }
}

/** Resend's `email.received` data: the inbound email's addresses and its attachments' metadata (never their content). */
export function receivedEventData(
  id: string,
  at: string,
  parsed: Pick<ParsedInbound, 'from' | 'to' | 'cc' | 'subject' | 'messageId'>,
  bcc: string[],
  attachments: { id: string; filename: string; contentType: string; contentId: string | null; disposition: string }[],
): Record<string, unknown> {
  return {
    email_id: id,
    created_at: at,
    from: parsed.from,
    to: parsed.to,
    cc: parsed.cc,
    bcc,
    subject: parsed.subject,
    message_id: parsed.messageId,
    attachments: attachments.map((a) => ({ id: a.id, filename: a.filename, content_type: a.contentType, content_disposition: a.disposition, content_id: a.contentId })),
  }
}
