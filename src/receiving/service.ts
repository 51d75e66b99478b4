import { and, asc, eq, gte, inArray, like, lte, or, sql, type SQL } from 'drizzle-orm'
import { pageOf } from '../db/paging'
import { emails, inboundAttachments, inboundEmails, inboundRaw, threadMessages, threads } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import { bareAddress } from '../emails/address'
import { sendEmail, type OnRate } from '../emails/send'
import { autoReplyMark } from '../trust/loop-guard'
import type { SendEmail } from '../emails/schema'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { listKey } from '../lib/paging'
import type { ListInboundQuery, ListThreadsQuery, Reply } from './schema'
import { addToThread } from './threads'
import { instant } from '../db/date-range'

type InboundRow = typeof inboundEmails.$inferSelect
type AttachmentMeta = Omit<typeof inboundAttachments.$inferSelect, 'content'>

const bracket = (id: string) => `<${id}>`
const orNull = (list: string[]) => (list.length ? list : null)

const attachmentMeta = {
  id: inboundAttachments.id,
  emailId: inboundAttachments.emailId,
  accountId: inboundAttachments.accountId,
  filename: inboundAttachments.filename,
  contentType: inboundAttachments.contentType,
  contentId: inboundAttachments.contentId,
  disposition: inboundAttachments.disposition,
  size: inboundAttachments.size,
}

const attachmentRef = (a: AttachmentMeta) => ({
  id: a.id,
  filename: a.filename,
  size: a.size,
  content_type: a.contentType,
  content_id: a.contentId,
  content_disposition: a.disposition,
})

const toAttachment = (deps: Deps, a: AttachmentMeta) => ({
  object: 'attachment' as const,
  ...attachmentRef(a),
  download_url: `${deps.config.baseUrl}/emails/receiving/${a.emailId}/attachments/${a.id}?download=1`,
  expires_at: null,
})

function summary(r: InboundRow, atts: AttachmentMeta[]) {
  return {
    object: 'email' as const,
    id: r.id,
    to: r.to,
    from: r.from,
    created_at: r.createdAt,
    subject: r.subject,
    bcc: orNull(r.bcc),
    cc: orNull(r.cc),
    reply_to: orNull(r.replyTo),
    received_for: r.receivedFor,
    message_id: bracket(r.messageId),
    in_reply_to: r.inReplyTo ? bracket(r.inReplyTo) : null,
    thread_id: r.threadId,
    size: r.size,
    attachments: atts.map(attachmentRef),
  }
}

async function findInbound(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(inboundEmails)
    .where(and(eq(inboundEmails.id, id.toLowerCase()), eq(inboundEmails.accountId, actor.accountId)))
  if (!row) throw notFound(`Inbound email ${id}`)
  return row
}

async function attachmentsOf(deps: Deps, ids: string[]) {
  if (!ids.length) return new Map<string, AttachmentMeta[]>()
  const rows = await deps.db.q.select(attachmentMeta).from(inboundAttachments).where(inArray(inboundAttachments.emailId, ids)).orderBy(asc(inboundAttachments.id))
  const out = new Map<string, AttachmentMeta[]>()
  for (const r of rows) out.set(r.emailId, [...(out.get(r.emailId) ?? []), r])
  return out
}

function filterWhere(q: ListInboundQuery): SQL | undefined {
  const conds: (SQL | undefined)[] = []
  if (q.to) {
    const to = q.to.trim().toLowerCase()
    conds.push(
      or(
        sql`exists (select 1 from json_each(${inboundEmails.receivedFor}) where value = ${to})`,
        sql`exists (select 1 from json_each(${inboundEmails.to}) where lower(value) = ${to} or lower(value) like ${`%<${to}>`})`,
        sql`exists (select 1 from json_each(${inboundEmails.cc}) where lower(value) = ${to} or lower(value) like ${`%<${to}>`})`,
      ),
    )
  }
  if (q.from) {
    const f = q.from.trim().toLowerCase()
    conds.push(f.includes('@') && !f.startsWith('@') ? eq(inboundEmails.fromEmail, f) : like(inboundEmails.fromEmail, `%@${f.replace(/^@/, '')}`))
  }
  const since = q.since ? instant(q.since, 'since') : undefined
  const until = q.until ? instant(q.until, 'until', true) : undefined
  if (since && until && since > until) throw new AppError('invalid_parameter', { message: '`since` is after `until`.' })
  if (since) conds.push(gte(inboundEmails.createdAt, since))
  if (until) conds.push(lte(inboundEmails.createdAt, until))
  return conds.length ? and(...conds) : undefined
}

/** GET /emails/receiving: newest first, without bodies, headers or the raw link. */
export async function listInbound(deps: Deps, actor: Actor, q: ListInboundQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('inbound', { to: q.to?.toLowerCase(), from: q.from?.toLowerCase(), since: q.since, until: q.until }), query: q, id: inboundEmails.id },
    async (ks) => {
      const rows = await deps.db.q
        .select()
        .from(inboundEmails)
        .where(and(eq(inboundEmails.accountId, actor.accountId), filterWhere(q), ks.where))
        .orderBy(ks.orderBy)
        .limit(ks.limit)
      const atts = await attachmentsOf(deps, rows.map((r) => r.id))
      return rows.map((r) => ({ row: r, id: r.id, atts: atts.get(r.id) ?? [] }))
    },
    (r) => summary(r.row, r.atts),
  )
}

/** Rewrites `cid:` references to data URIs of the inline parts (Resend's `html_format=data_uri`). */
async function inlineCids(deps: Deps, emailId: string, html: string) {
  const rows = await deps.db.q.select().from(inboundAttachments).where(and(eq(inboundAttachments.emailId, emailId)))
  let out = html
  for (const a of rows) {
    if (!a.contentId) continue
    const uri = `data:${a.contentType};base64,${a.content.toString('base64')}`
    out = out.split(`cid:${a.contentId}`).join(uri)
  }
  return out
}

/** GET /emails/receiving/{id}: the parsed message with its headers and authentication results. */
export async function getInbound(deps: Deps, actor: Actor, id: string, htmlFormat?: 'cid' | 'data_uri') {
  const row = await findInbound(deps, actor, id)
  const atts = (await attachmentsOf(deps, [row.id])).get(row.id) ?? []
  const html = row.html !== null && htmlFormat === 'data_uri' ? await inlineCids(deps, row.id, row.html) : row.html
  return {
    ...summary(row, atts),
    html,
    text: row.text,
    headers: row.headers,
    references: row.references.map(bracket),
    authentication: row.auth,
    raw: { download_url: `${deps.config.baseUrl}/emails/receiving/${row.id}/raw`, expires_at: null },
  }
}

export async function listInboundAttachments(deps: Deps, actor: Actor, id: string) {
  const row = await findInbound(deps, actor, id)
  const atts = (await attachmentsOf(deps, [row.id])).get(row.id) ?? []
  return { object: 'list' as const, data: atts.map((a) => toAttachment(deps, a)), has_more: false, next_cursor: null }
}

const disposition = (filename: string) =>
  `attachment; filename="${filename.replace(/["\\\r\n]/g, '_').replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(filename)}`

export async function getInboundAttachment(deps: Deps, actor: Actor, id: string, aid: string, download: boolean) {
  const row = await findInbound(deps, actor, id)
  const [a] = await deps.db.q
    .select()
    .from(inboundAttachments)
    .where(and(eq(inboundAttachments.emailId, row.id), eq(inboundAttachments.id, aid.toLowerCase())))
  if (!a) throw notFound(`Attachment ${aid} of inbound email ${row.id}`)
  if (!download) return toAttachment(deps, a)
  return new Response(new Uint8Array(a.content), {
    headers: { 'content-type': a.contentType, 'content-length': String(a.size), 'content-disposition': disposition(a.filename) },
  })
}

/** GET /emails/receiving/{id}/raw: the bytes as received, with our Received field on top. */
export async function getInboundRaw(deps: Deps, actor: Actor, id: string) {
  const row = await findInbound(deps, actor, id)
  const [raw] = await deps.db.q.select({ raw: inboundRaw.raw }).from(inboundRaw).where(eq(inboundRaw.id, row.rawId))
  if (!raw) throw notFound(`The raw message of inbound email ${row.id}`)
  return new Response(new Uint8Array(raw.raw), {
    headers: { 'content-type': 'message/rfc822', 'content-length': String(raw.raw.length), 'content-disposition': disposition(`${row.id}.eml`) },
  })
}

type ThreadRow = typeof threads.$inferSelect

async function counts(deps: Deps, ids: string[]) {
  if (!ids.length) return new Map<string, number>()
  const rows = await deps.db.q
    .select({ threadId: threadMessages.threadId, n: sql<number>`count(*)` })
    .from(threadMessages)
    .where(inArray(threadMessages.threadId, ids))
    .groupBy(threadMessages.threadId)
  return new Map(rows.map((r) => [r.threadId, Number(r.n)]))
}

const threadSummary = (t: ThreadRow, n: number) => ({
  object: 'thread' as const,
  id: t.id,
  subject: t.subject,
  message_count: n,
  created_at: t.createdAt,
  last_message_at: t.lastMessageAt,
})

/** GET /emails/receiving/threads: newest thread first. */
export async function listThreads(deps: Deps, actor: Actor, q: ListThreadsQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('threads'), query: q, id: threads.id },
    async (ks) => {
      const rows = await deps.db.q.select().from(threads).where(and(eq(threads.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit)
      const n = await counts(deps, rows.map((r) => r.id))
      return rows.map((r) => ({ row: r, id: r.id, messages: n.get(r.id) ?? 0 }))
    },
    (r) => threadSummary(r.row, r.messages),
  )
}

/**
 * GET /emails/receiving/threads/{id}: every message, oldest first: the inbound ones,
 * the outbound ones that joined (replies through the API, or emails an inbound
 * message answered), and sent emails whose In-Reply-To names a message of the thread.
 */
export async function getThread(deps: Deps, actor: Actor, id: string) {
  const [t] = await deps.db.q.select().from(threads).where(and(eq(threads.id, id.toLowerCase()), eq(threads.accountId, actor.accountId)))
  if (!t) throw notFound(`Thread ${id}`)
  const members = await deps.db.q.select().from(threadMessages).where(eq(threadMessages.threadId, t.id)).orderBy(asc(threadMessages.createdAt), asc(threadMessages.id))
  const inboundIds = members.filter((m) => m.direction === 'inbound').map((m) => m.emailId)
  const outboundIds = new Set(members.filter((m) => m.direction === 'outbound').map((m) => m.emailId))
  const inbound = inboundIds.length ? await deps.db.q.select().from(inboundEmails).where(inArray(inboundEmails.id, inboundIds)) : []
  const mids = members.map((m) => bracket(m.messageId))
  const answering = mids.length
    ? await deps.db.q.select({ id: emails.id }).from(emails).where(and(eq(emails.accountId, actor.accountId), inArray(emails.inReplyTo, mids)))
    : []
  for (const a of answering) outboundIds.add(a.id)
  const outbound = outboundIds.size ? await deps.db.q.select().from(emails).where(and(eq(emails.accountId, actor.accountId), inArray(emails.id, [...outboundIds]))) : []
  const messages = [
    ...inbound.map((r) => ({
      direction: 'inbound' as const,
      id: r.id,
      from: r.from,
      to: r.to,
      subject: r.subject,
      message_id: bracket(r.messageId),
      in_reply_to: r.inReplyTo ? bracket(r.inReplyTo) : null,
      created_at: r.createdAt,
      last_event: 'received',
    })),
    ...outbound.map((e) => ({
      direction: 'outbound' as const,
      id: e.id,
      from: e.from,
      to: e.to,
      subject: e.subject,
      message_id: bracket(e.messageId),
      in_reply_to: e.inReplyTo,
      created_at: e.createdAt,
      last_event: e.lastEvent as string,
    })),
  ].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
  return { ...threadSummary(t, messages.length), messages }
}


/**
 * POST /emails/receiving/{id}/reply: a send through POST /emails's own pipeline
 * (every check applies), from the address the message was sent to, to its Reply-To
 * or From, with `Re:`, In-Reply-To and References; the reply joins the thread.
 */
export async function replyTo(deps: Deps, actor: Actor, id: string, body: Reply, onRate?: OnRate) {
  const row = await findInbound(deps, actor, id)
  const own = row.receivedFor[0]
  const named = [...row.to, ...row.cc].find((a) => bareAddress(a) === own)
  const from = body.from ?? named ?? own
  const to = body.to ?? (row.replyTo.length ? row.replyTo : [row.from])
  const subject = body.subject ?? (/^\s*re\s*:/i.test(row.subject) ? row.subject : `Re: ${row.subject}`.trimEnd())
  const references = [...row.references.filter((r) => r !== row.messageId), row.messageId].slice(-20).map(bracket)
  const headers: Record<string, string> = { ...(body.headers ?? {}) }
  for (const k of Object.keys(headers)) if (/^(in-reply-to|references)$/i.test(k)) delete headers[k]
  headers['In-Reply-To'] = bracket(row.messageId)
  headers['References'] = references.join(' ')
  const input: SendEmail = {
    from,
    to,
    subject,
    cc: body.cc,
    bcc: body.bcc,
    reply_to: body.reply_to,
    html: body.html,
    text: body.text,
    headers,
    attachments: body.attachments,
    tags: body.tags,
    scheduled_at: body.scheduled_at,
    ...(body.click_tracking !== undefined ? { click_tracking: body.click_tracking } : {}),
  }
  const sent = await sendEmail(deps, actor, input, onRate, { replay: { kind: 'reply', request: { inbound_id: id, body } }, answersAutoReply: autoReplyMark(row.headers) })
  const at = iso(deps.clock.now())
  await deps.db.write((tx) =>
    addToThread(tx, deps.ids, { accountId: actor.accountId, threadId: row.threadId, messageId: `${sent.id}@${deps.config.hostname}`, direction: 'outbound', emailId: sent.id, at }),
  )
  return { object: 'email' as const, id: sent.id, thread_id: row.threadId, in_reply_to: bracket(row.messageId), references }
}
