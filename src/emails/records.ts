import { and, asc, desc, eq, getTableColumns, gt, gte, inArray, isNull, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import { withBroadcastContent } from '../broadcasts/personalise'
import type { Executor } from '../db'
import { composeMessage } from '../delivery/mime'
import { pageOf, type Keyset } from '../db/paging'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { deliveries, deliveryAttempts, domains, emailAttachments, emailEvents, emails, emailTags, suppressions } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { listKey, type PageQuery } from '../lib/paging'
import { recordEvent } from './events'
import { mimeTree } from './mime-tree'
import { parseSchedule } from './schedule'
import type { BulkCancel, EmailFilters, ListEmailsQuery } from './schema'
import { instant } from '../db/date-range'

export type EmailRow = typeof emails.$inferSelect
type AttachmentRow = typeof emailAttachments.$inferSelect

const orNull = (list: string[]) => (list.length ? list : null)

const summary = (row: EmailRow) => ({
  object: 'email' as const,
  id: row.id,
  to: row.to,
  from: row.from,
  created_at: row.createdAt,
  subject: row.subject,
  bcc: orNull(row.bcc),
  cc: orNull(row.cc),
  reply_to: orNull(row.replyTo),
  last_event: row.lastEvent,
  scheduled_at: row.scheduledAt,
  tags: row.tags,
  topic_id: row.topicId,
  message_id: `<${row.messageId}>`,
  api_key_id: row.apiKeyId,
  simulator: row.simulator,
})

/** Resend's email object, plus `api_key_id` and `simulator`. */
export const toEmail = (row: EmailRow) => ({ ...summary(row), html: row.html, text: row.text })

export async function findEmail(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(emails)
    .where(and(eq(emails.id, id.toLowerCase()), eq(emails.accountId, actor.accountId)))
  if (!row) throw notFound(`Email ${id}`)
  return row
}

/** An email as it went out: a broadcast's email with its recipient's copy of the bodies. */
async function sentForm(deps: Deps, actor: Actor, id: string) {
  const [row] = await withBroadcastContent(deps.db.q, [await findEmail(deps, actor, id)], deps)
  return row
}

export async function getEmail(deps: Deps, actor: Actor, id: string) {
  return toEmail(await sentForm(deps, actor, id))
}

/** `name:value` or `name` as the `email_tags` row that finds it; `name:` finds none, as no tag's value is empty. */
function tagKey(tag: string) {
  const i = tag.indexOf(':')
  return i < 0 ? { name: tag, value: '', none: false } : { name: tag.slice(0, i), value: tag.slice(i + 1), none: i === tag.length - 1 }
}

function tagRow(accountId: string, tag: string): SQL {
  const k = tagKey(tag)
  return and(eq(emailTags.accountId, accountId), eq(emailTags.name, k.name), eq(emailTags.value, k.value), k.none ? sql`0` : undefined)!
}

/** Emails carrying that tag, checked per email (its key in `email_tags`). */
const tagCondition = (accountId: string, tag: string) => sql`exists (select 1 from ${emailTags} where ${tagRow(accountId, tag)} and ${emailTags.emailId} = ${emails.id})`

const recipientRow = (accountId: string, to: string) => and(eq(deliveries.accountId, accountId), eq(deliveries.recipient, to.trim().toLowerCase()))!

/** The filters on the email row itself: dates, status and sender. */
function ownWhere(f: EmailFilters): SQL | undefined {
  const conds: (SQL | undefined)[] = []
  if (f.since && f.start_date && f.since !== f.start_date) throw new AppError('invalid_parameter', { message: 'Give `since` or `start_date`, not two different values.' })
  if (f.until && f.end_date && f.until !== f.end_date) throw new AppError('invalid_parameter', { message: 'Give `until` or `end_date`, not two different values.' })
  const since = f.since ?? f.start_date
  const until = f.until ?? f.end_date
  const sinceField = f.since ? 'since' : 'start_date'
  const untilField = f.until ? 'until' : 'end_date'
  if (since) conds.push(gte(emails.createdAt, instant(since, sinceField)))
  if (until) conds.push(lte(emails.createdAt, instant(until, untilField, true)))
  if (since && until && instant(since, sinceField) > instant(until, untilField, true)) {
    throw new AppError('invalid_parameter', { message: `\`${sinceField}\` is after \`${untilField}\`.` })
  }
  if (f.status) conds.push(eq(emails.lastEvent, f.status))
  if (f.from) {
    // Addresses are stored lower-case, so equality is the case-insensitive match.
    const v = f.from.trim().toLowerCase()
    conds.push(v.includes('@') && !v.startsWith('@') ? eq(emails.fromEmail, v) : eq(emails.fromDomain, v.replace(/^@/, '')))
  }
  return conds.length ? and(...conds) : undefined
}

/** A page's statement: run by awaiting it, its SQL (`toSQL`) for a look at its plan. */
type Query = Promise<EmailRow[]> & { toSQL(): { sql: string; params: unknown[] } }

/**
 * The emails the list's filters select, as a query over the keyset `ks` on the
 * column `id` it pages by. A `to` or `tag` filter drives the query from its own
 * index (`deliveries`, `email_tags`) in `email_id` order and reads each email by
 * id, so a rare value costs its matches rather than a walk of the account's
 * emails, and a common one still comes newest first off the index without a sort;
 * the other filters are checked per email found.
 */
export function filtered(q: Executor, accountId: string, f: EmailFilters): { id: SQLiteColumn; rows: (ks: Keyset) => Query } {
  const own = and(eq(emails.accountId, accountId), ownWhere(f))
  // A CROSS JOIN keeps the index's table outermost: SQLite never reorders one, and left
  // to choose, the planner may walk the account's emails for their `id` order instead.
  const drivenBy = (table: typeof emailTags | typeof deliveries, emailId: SQLiteColumn, match: SQL, also?: SQL) => ({
    id: emailId,
    rows: (ks: Keyset) =>
      q.select(getTableColumns(emails)).from(table).crossJoin(emails).where(and(match, eq(emails.id, emailId), own, also, ks.where)).orderBy(ks.orderBy).limit(ks.limit),
  })
  // With both, the recipient leads: an address's emails are usually far fewer than a tag's, which marks a kind of email.
  // One delivery per distinct recipient of an email, so the join finds each email once.
  if (f.to) return drivenBy(deliveries, deliveries.emailId, recipientRow(accountId, f.to), f.tag ? tagCondition(accountId, f.tag) : undefined)
  if (f.tag) return drivenBy(emailTags, emailTags.emailId, tagRow(accountId, f.tag))
  return { id: emails.id, rows: (ks) => q.select().from(emails).where(and(own, ks.where)).orderBy(ks.orderBy).limit(ks.limit) }
}

const filterKey = (f: EmailFilters) => ({ status: f.status, from: f.from, to: f.to, tag: f.tag, since: f.since ?? f.start_date, until: f.until ?? f.end_date })

export async function listEmails(deps: Deps, actor: Actor, q: ListEmailsQuery) {
  const list = filtered(deps.db.q, actor.accountId, q)
  return pageOf(deps.secret, { list: listKey('emails', filterKey(q)), query: q, id: list.id }, list.rows, summary)
}

const CSV_COLUMNS = ['id', 'created_at', 'from', 'to', 'cc', 'bcc', 'reply_to', 'subject', 'last_event', 'scheduled_at', 'tags', 'topic_id', 'message_id', 'api_key_id', 'simulator']

/** One CSV field: quoted when needed; a leading `=`, `+`, `-`, `@` or tab gets a `'` so spreadsheets never run it as a formula. */
function csvField(v: string | number | boolean | null) {
  let s = v === null ? '' : String(v)
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

function csvRow(row: EmailRow) {
  const s = summary(row)
  return [
    s.id,
    s.created_at,
    s.from,
    row.to.join('; '),
    row.cc.join('; '),
    row.bcc.join('; '),
    row.replyTo.join('; '),
    s.subject,
    s.last_event,
    s.scheduled_at,
    row.tags.map((t) => `${t.name}:${t.value}`).join('; '),
    s.topic_id,
    s.message_id,
    s.api_key_id,
    s.simulator,
  ]
    .map(csvField)
    .join(',')
}

/**
 * GET /emails/export.csv: every email matching the list's filters, newest first,
 * streamed 500 rows at a time so the export never sits in memory whole.
 */
export function exportEmails(deps: Deps, actor: Actor, f: EmailFilters): Response {
  const list = filtered(deps.db.q, actor.accountId, f)
  let anchor: string | undefined
  let header = true
  const enc = new TextEncoder()
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const rows = await list.rows({ where: anchor ? lt(list.id, anchor) : undefined, orderBy: desc(list.id), limit: 500 })
      let chunk = header ? CSV_COLUMNS.join(',') + '\r\n' : ''
      header = false
      for (const r of rows) chunk += csvRow(r) + '\r\n'
      if (chunk) controller.enqueue(enc.encode(chunk))
      if (rows.length < 500) controller.close()
      else anchor = rows[rows.length - 1].id
    },
  })
  return new Response(stream, {
    headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="emails-${iso(deps.clock.now()).slice(0, 10)}.csv"` },
  })
}

/** Scheduled delivery rows nobody is working on: the ones a cancel or reschedule may move. */
const movable = (now: string) => and(eq(deliveries.state, 'scheduled'), or(isNull(deliveries.leaseUntil), lt(deliveries.leaseUntil, now)))

function notScheduled(row: EmailRow, action: string): AppError {
  const state =
    row.lastEvent === 'canceled'
      ? `it was canceled${action === 'reschedule' ? ', and a canceled email cannot be rescheduled' : ''}`
      : `its state is \`${row.lastEvent}\`, so it has already left the schedule`
  return new AppError('email_still_scheduled', { message: `Email ${row.id} cannot be ${action === 'cancel' ? 'canceled' : 'rescheduled'}: ${state}.`, extra: { last_event: row.lastEvent } })
}

async function cancelOne(deps: Deps, actor: Actor, row: EmailRow, now: number): Promise<boolean> {
  if (row.lastEvent !== 'scheduled') return false
  const at = iso(now)
  return deps.db.write(async (tx) => {
    const moved = await tx
      .update(deliveries)
      .set({ state: 'canceled', updatedAt: at })
      .where(and(eq(deliveries.emailId, row.id), movable(at)))
      .returning({ id: deliveries.id })
    if (!moved.length) return false
    await recordEvent(tx, deps.ids, { accountId: actor.accountId, emailId: row.id, type: 'canceled', at, data: { deliveries: moved.length } })
    return true
  })
}

/** POST /emails/{id}/cancel: cancels the deliveries still waiting; 409 when the email is no longer scheduled. */
export async function cancelEmail(deps: Deps, actor: Actor, id: string) {
  const row = await findEmail(deps, actor, id)
  if (!(await cancelOne(deps, actor, row, deps.clock.now()))) {
    if (row.lastEvent === 'scheduled') throw new AppError('email_still_scheduled', { message: `Email ${row.id} cannot be canceled: it is being sent right now.`, extra: { last_event: row.lastEvent } })
    throw notScheduled(row, 'cancel')
  }
  return { object: 'email' as const, id: row.id }
}

/** PATCH /emails/{id} and POST /emails/{id}/reschedule: a new time for a scheduled email. */
export async function rescheduleEmail(deps: Deps, actor: Actor, id: string, scheduledAt: string) {
  const row = await findEmail(deps, actor, id)
  const now = deps.clock.now()
  if (row.lastEvent !== 'scheduled') throw notScheduled(row, 'reschedule')
  const s = parseSchedule(scheduledAt, now)
  if (!s.ok) throw new AppError('invalid_parameter', { message: s.message, details: [{ field: 'scheduled_at', message: s.message }] })
  const at = iso(now)
  const when = iso(s.at)
  await deps.db.write(async (tx) => {
    const moved = await tx
      .update(deliveries)
      .set({ nextAttemptAt: when, updatedAt: at })
      .where(and(eq(deliveries.emailId, row.id), movable(at)))
      .returning({ id: deliveries.id })
    if (!moved.length) throw new AppError('email_still_scheduled', { message: `Email ${row.id} cannot be rescheduled: it is being sent right now.`, extra: { last_event: row.lastEvent } })
    await tx.update(emails).set({ scheduledAt: when, updatedAt: at }).where(eq(emails.id, row.id))
    await recordEvent(tx, deps.ids, { accountId: actor.accountId, emailId: row.id, type: 'scheduled', at, data: { scheduled_at: when, rescheduled_from: row.scheduledAt } })
  })
  return { object: 'email' as const, id: row.id, scheduled_at: when }
}

const BULK_LIMIT = 1000

/**
 * POST /emails/bulk-cancel: by `ids`, by a filter (`scheduled_before`,
 * `scheduled_after`, `tag`) over the scheduled emails, or both. At most 1000 a call.
 */
export async function bulkCancel(deps: Deps, actor: Actor, input: BulkCancel) {
  const hasFilter = input.scheduled_before !== undefined || input.scheduled_after !== undefined || input.tag !== undefined
  if (!input.ids && !hasFilter) {
    throw new AppError('missing_required_field', {
      message: 'Missing `ids` field: give `ids`, or a filter (`scheduled_before`, `scheduled_after`, `tag`).',
      details: [{ field: 'ids', message: 'required unless a filter is given' }],
    })
  }
  const bound = (v: string | undefined, field: string) => {
    if (v === undefined) return undefined
    if (!/^\d{4}-\d{2}-\d{2}(T.*)?$/.test(v) || Number.isNaN(Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v))) {
      throw new AppError('invalid_parameter', { message: `\`${field}\` must be an ISO 8601 date or date-time.`, details: [{ field, message: 'must be ISO 8601' }] })
    }
    return iso(Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v))
  }
  const before = bound(input.scheduled_before, 'scheduled_before')
  const after = bound(input.scheduled_after, 'scheduled_after')
  const conds: (SQL | undefined)[] = [eq(emails.accountId, actor.accountId)]
  if (input.ids) conds.push(inArray(emails.id, input.ids.map((i) => i.toLowerCase())))
  if (before) conds.push(lt(emails.scheduledAt, before))
  if (after) conds.push(gt(emails.scheduledAt, after))
  if (input.tag) conds.push(tagCondition(actor.accountId, input.tag))
  if (hasFilter) conds.push(eq(emails.lastEvent, 'scheduled'))
  const rows = await deps.db.q
    .select()
    .from(emails)
    .where(and(...conds))
    .orderBy(asc(emails.id))
    .limit(BULK_LIMIT + 1)
  const hasMore = rows.length > BULK_LIMIT
  const now = deps.clock.now()
  const canceled: string[] = []
  let skipped = 0
  for (const row of rows.slice(0, BULK_LIMIT)) {
    if (await cancelOne(deps, actor, row, now)) canceled.push(row.id)
    else skipped++
  }
  const found = new Set(rows.map((r) => r.id))
  const notFoundCount = input.ids && !hasFilter ? input.ids.filter((i) => !found.has(i.toLowerCase())).length : 0
  return { object: 'bulk_cancel' as const, canceled: canceled.length, skipped, not_found: notFoundCount, ids: canceled, has_more: hasMore }
}

const toEvent = (e: typeof emailEvents.$inferSelect) => ({
  object: 'email_event' as const,
  id: e.id,
  email_id: e.emailId,
  type: e.type,
  recipient: e.recipient,
  data: e.data,
  created_at: e.createdAt,
})

/** GET /emails/{id}/events: the email's events, oldest first. */
export async function listEvents(deps: Deps, actor: Actor, id: string, q: PageQuery) {
  const row = await findEmail(deps, actor, id)
  return pageOf(
    deps.secret,
    { list: listKey('email_events', { email: row.id }), query: q, id: emailEvents.id, oldestFirst: true },
    (ks) =>
      deps.db.q
        .select()
        .from(emailEvents)
        .where(and(eq(emailEvents.emailId, row.id), eq(emailEvents.accountId, actor.accountId), ks.where))
        .orderBy(ks.orderBy)
        .limit(ks.limit),
    toEvent,
  )
}

function explainSummary(row: EmailRow, ds: { state: string; recipient: string; lastCode: number | null; lastResponse: string | null; nextAttemptAt: string }[]) {
  const n = ds.length
  const by = (s: string) => ds.filter((d) => d.state === s)
  const plural = (k: number, w: string) => `${k} ${w}${k === 1 ? '' : 's'}`
  if (row.lastEvent === 'scheduled' && by('scheduled').length) return `Scheduled for ${row.scheduledAt}: ${plural(by('scheduled').length, 'delivery')} waiting for that time.`
  if (row.lastEvent === 'canceled') return `Canceled before it was sent; ${plural(by('canceled').length, 'delivery')} will never be attempted.`
  const parts: string[] = []
  for (const s of ['delivered', 'sent', 'queued', 'deferred', 'bounced', 'failed', 'suppressed', 'canceled', 'scheduled']) {
    const k = by(s).length
    if (k) parts.push(`${k} ${s}`)
  }
  const bad = [...by('bounced'), ...by('failed')][0]
  const deferred = by('deferred')[0]
  let why = ''
  if (bad) why = ` ${bad.recipient}: ${bad.lastCode ?? ''} ${bad.lastResponse ?? 'no reply recorded'}`.replace(/\s+/g, ' ')
  else if (deferred) why = ` Next attempt for ${deferred.recipient} at ${deferred.nextAttemptAt} after ${deferred.lastCode ?? ''} ${deferred.lastResponse ?? ''}`.replace(/\s+/g, ' ').trimEnd()
  return `Last event \`${row.lastEvent}\`; of ${plural(n, 'recipient')}: ${parts.join(', ')}.${why}`
}

/** GET /emails/{id}/explain: the checks at accept, each delivery with its attempts and replies, suppression, budget and quota at accept. */
export async function explainEmail(deps: Deps, actor: Actor, id: string) {
  const row = await findEmail(deps, actor, id)
  const q: Executor = deps.db.q
  const [accept] = await q
    .select()
    .from(emailEvents)
    .where(and(eq(emailEvents.emailId, row.id), inArray(emailEvents.type, ['queued', 'scheduled'])))
    .orderBy(asc(emailEvents.id))
    .limit(1)
  const ds = await q.select().from(deliveries).where(eq(deliveries.emailId, row.id)).orderBy(asc(deliveries.id))
  const attempts = await q.select().from(deliveryAttempts).where(eq(deliveryAttempts.emailId, row.id)).orderBy(asc(deliveryAttempts.startedAt))
  const sup = ds.length
    ? await q
        .select()
        .from(suppressions)
        .where(and(eq(suppressions.accountId, actor.accountId), inArray(suppressions.email, ds.map((d) => d.recipient))))
    : []
  const data = (accept?.data ?? {}) as Record<string, any>
  const settled = ['delivered', 'bounced', 'failed', 'canceled', 'suppressed']
  return {
    object: 'email_explanation' as const,
    id: row.id,
    last_event: row.lastEvent,
    summary: explainSummary(row, ds),
    accepted: {
      at: row.createdAt,
      api_key_id: row.apiKeyId,
      simulator: row.simulator,
      domain: (data.domain as string | undefined) ?? null,
      checks: (data.checks as { name: string; passed: boolean; detail?: string }[] | undefined) ?? [],
      warnings: (data.warnings as any[] | undefined) ?? [],
      budget: (data.budget as Record<string, unknown> | null | undefined) ?? null,
      quota: (data.quota as Record<string, unknown> | null | undefined) ?? null,
    },
    scheduled_at: row.scheduledAt,
    deliveries: ds.map((d) => {
      const s = sup.find((x) => x.email === d.recipient)
      return {
        id: d.id,
        recipient: d.recipient,
        kind: d.kind,
        state: d.state,
        attempts: d.attempts,
        next_attempt_at: settled.includes(d.state) ? null : d.nextAttemptAt,
        last_code: d.lastCode,
        last_response: d.lastResponse,
        suppressed: s ? { reason: s.reason, since: s.createdAt, detail: s.detail } : null,
        history: attempts
          .filter((a) => a.deliveryId === d.id)
          .map((a) => ({
            started_at: a.startedAt,
            duration_ms: a.durationMs,
            host: a.host,
            smtp_code: a.smtpCode,
            enhanced_code: a.enhancedCode,
            response: a.response,
            outcome: a.outcome,
            worker: a.worker,
          })),
      }
    }),
  }
}

const toAttachment = (deps: Deps, a: Omit<AttachmentRow, 'content'>) => ({
  object: 'attachment' as const,
  id: a.id,
  filename: a.filename,
  content_type: a.contentType,
  content_id: a.contentId,
  content_disposition: a.disposition,
  size: a.size,
  download_url: `${deps.config.baseUrl}/emails/${a.emailId}/attachments/${a.id}?download=1`,
  expires_at: null,
})

const attachmentMeta = {
  id: emailAttachments.id,
  emailId: emailAttachments.emailId,
  accountId: emailAttachments.accountId,
  filename: emailAttachments.filename,
  contentType: emailAttachments.contentType,
  contentId: emailAttachments.contentId,
  disposition: emailAttachments.disposition,
  size: emailAttachments.size,
}

export async function listAttachments(deps: Deps, actor: Actor, id: string) {
  const row = await findEmail(deps, actor, id)
  const rows = await deps.db.q.select(attachmentMeta).from(emailAttachments).where(eq(emailAttachments.emailId, row.id)).orderBy(asc(emailAttachments.id))
  return { object: 'list' as const, data: rows.map((r) => toAttachment(deps, r)), has_more: false, next_cursor: null }
}

/** GET /emails/{id}/attachments/{aid}: Resend's attachment object, or with `download=1` the file itself. */
export async function getAttachment(deps: Deps, actor: Actor, id: string, aid: string, download: boolean) {
  const row = await findEmail(deps, actor, id)
  const [a] = await deps.db.q
    .select()
    .from(emailAttachments)
    .where(and(eq(emailAttachments.emailId, row.id), eq(emailAttachments.id, aid.toLowerCase())))
  if (!a) throw notFound(`Attachment ${aid} of email ${row.id}`)
  if (!download) return toAttachment(deps, a)
  const name = a.filename.replace(/["\\\r\n]/g, '_')
  return new Response(new Uint8Array(a.content), {
    headers: {
      'content-type': a.contentType,
      'content-length': String(a.size),
      'content-disposition': `attachment; filename="${name.replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(a.filename)}`,
    },
  })
}

export async function attachmentsOf(deps: Deps, emailId: string) {
  return deps.db.q.select().from(emailAttachments).where(eq(emailAttachments.emailId, emailId)).orderBy(asc(emailAttachments.id))
}

/**
 * The message as sent, composed again from the record by the MTA's own composer
 * (same Message-ID, Date, body, attachments and DKIM key), for the first To recipient.
 */
export async function emailSource(deps: Deps, actor: Actor, id: string) {
  const row = await sentForm(deps, actor, id)
  const [domain] = row.domainId ? await deps.db.q.select().from(domains).where(eq(domains.id, row.domainId)) : []
  const raw = await composeMessage({ email: row, attachments: await attachmentsOf(deps, row.id), domain: domain ?? null, config: deps.config, secret: deps.secret })
  return { row, raw }
}

/** GET /emails/{id}/eml: message/rfc822. */
export async function emailEml(deps: Deps, actor: Actor, id: string) {
  const { row, raw } = await emailSource(deps, actor, id)
  return new Response(new Uint8Array(raw), {
    headers: { 'content-type': 'message/rfc822', 'content-disposition': `attachment; filename="${row.id}.eml"`, 'content-length': String(raw.length) },
  })
}

/** GET /emails/{id}/mime: the MIME tree of that message. */
export async function emailMime(deps: Deps, actor: Actor, id: string) {
  const { row, raw } = await emailSource(deps, actor, id)
  return { object: 'mime' as const, id: row.id, size: raw.length, root: mimeTree(raw) }
}
