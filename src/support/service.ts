import { and, asc, count, eq, gt, inArray, isNull, lte, sql } from 'drizzle-orm'
import type { Database } from '../db'
import { pageOf } from '../db/paging'
import { domains, memberships, people, supportAttachments, supportMessages, supportRequests, supportVotes } from '../db/tables'
import type { Deps } from '../deps'
import { sendEmail } from '../emails/send'
import { AppError, notFound } from '../errors/app-error'
import { systemActor, type Actor } from '../lib/actor'
import { DAY, HOUR, iso } from '../lib/clock'
import { listKey } from '../lib/paging'
import { answerBySlug, ANSWERS, searchAnswers, type Answer } from './answers'
import { decodeBase64, fileType, FILE_LIMIT, FILES_PER_MESSAGE, MB, MESSAGE_LIMIT } from './files'
import type { AttachBody, ListRequestsQuery, OpenRequest } from './schema'

type RequestRow = typeof supportRequests.$inferSelect
type MessageRow = typeof supportMessages.$inferSelect
type AttachmentRow = Omit<typeof supportAttachments.$inferSelect, 'content'>

export const OPENS_PER_HOUR = 5
export const REPLIES_PER_HOUR = 30
export const REOPEN_WINDOW = 14 * DAY
export const ATTACHMENT_LIFETIME = 30 * DAY

// ---------------------------------------------------------------- answers

const answerUrl = (deps: Deps, slug: string) => `${deps.config.baseUrl}/support/answers/${slug}`

const toSummary = (deps: Deps, a: Answer, score: number | null) => ({
  object: 'support_answer' as const,
  slug: a.slug,
  title: a.title,
  summary: a.summary,
  url: answerUrl(deps, a.slug),
  score,
})

/** Every published answer in shipped order, or with `q` the matching ones, best first. */
export function searchPublished(deps: Deps, query: { q?: string; limit?: number }) {
  const found = query.q === undefined ? ANSWERS.map((answer) => ({ answer, score: null })) : searchAnswers(query.q)
  const data = found.slice(0, query.limit ?? found.length).map((f) => toSummary(deps, f.answer, f.score))
  return { object: 'list' as const, data, has_more: data.length < found.length, next_cursor: null }
}

function publishedAnswer(slug: string) {
  const a = answerBySlug(slug)
  if (!a) throw notFound(`Published answer "${slug}"`)
  return a
}

export async function getAnswer(deps: Deps, slug: string) {
  const a = publishedAnswer(slug)
  const rows = await deps.db.q.select({ helpful: supportVotes.helpful, n: count() }).from(supportVotes).where(eq(supportVotes.slug, a.slug)).groupBy(supportVotes.helpful)
  const votes = { helpful: 0, not_helpful: 0 }
  for (const r of rows) votes[r.helpful ? 'helpful' : 'not_helpful'] = r.n
  return { object: 'support_answer' as const, slug: a.slug, title: a.title, summary: a.summary, body: a.body, url: answerUrl(deps, a.slug), votes }
}

/**
 * Who votes: a person signed in to the console is one voter whichever session
 * they use; a key is its own voter (keys are the agents, and a key records no
 * person who made it).
 */
function voterOf(actor: Actor) {
  if (actor.person) return `person:${actor.person.id}`
  if (actor.keyId) return `key:${actor.keyId}`
  return `account:${actor.accountId}`
}

/** One vote per voter per answer per UTC day: the first counts, later ones that day answer `counted: false` and change nothing. */
export async function voteHelpful(deps: Deps, actor: Actor, slug: string, helpful: boolean) {
  const a = publishedAnswer(slug)
  const now = deps.clock.now()
  const inserted = await deps.db.write((tx) =>
    tx
      .insert(supportVotes)
      .values({ slug: a.slug, voter: voterOf(actor), day: iso(now).slice(0, 10), accountId: actor.accountId, helpful, createdAt: iso(now) })
      .onConflictDoNothing()
      .returning({ slug: supportVotes.slug }),
  )
  return { ok: true, counted: inserted.length === 1 }
}

// ---------------------------------------------------------------- requests

const ticketNotFound = (id: string) => new AppError('support_ticket_not_found', { message: `There is no support request ${id} in this account.` })

async function findRequest(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(supportRequests)
    .where(and(eq(supportRequests.id, id.toLowerCase()), eq(supportRequests.accountId, actor.accountId)))
  if (!row) throw ticketNotFound(id)
  return row
}

function toRequest(row: RequestRow) {
  return {
    object: 'support_request' as const,
    id: row.id,
    subject: row.subject,
    status: row.status,
    contact_email: row.contactEmail,
    merged_into: row.mergedIntoId,
    closed_at: row.closedAt,
    reopen_until: row.closedAt && row.status === 'closed' ? iso(Date.parse(row.closedAt) + REOPEN_WINDOW) : null,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

function toAttachment(deps: Deps, a: AttachmentRow, now: number) {
  return {
    object: 'support_attachment' as const,
    id: a.id,
    filename: a.filename,
    content_type: a.contentType,
    size: a.size,
    created_at: a.createdAt,
    expires_at: a.expiresAt,
    expired: isExpired(a, now),
    download_url: `${deps.config.baseUrl}/support/requests/${a.requestId}/attachments/${a.id}`,
  }
}

const isExpired = (a: Pick<AttachmentRow, 'expiresAt' | 'purgedAt'>, now: number) => a.purgedAt !== null || Date.parse(a.expiresAt) <= now

function toMessage(deps: Deps, m: MessageRow, files: AttachmentRow[], now: number) {
  const author = m.byPersonId ? { type: 'person' as const, id: m.byPersonId } : m.byKeyId ? { type: 'key' as const, id: m.byKeyId } : null
  return {
    object: 'support_message' as const,
    id: m.id,
    request_id: m.requestId,
    kind: m.kind,
    body: m.body,
    author,
    attachments: files.filter((a) => a.messageId === m.id).map((a) => toAttachment(deps, a, now)),
    desk: { forwarded: m.deskEmailId !== null, email_id: m.deskEmailId, error: m.deskError },
    created_at: m.createdAt,
  }
}

const attachmentMeta = {
  id: supportAttachments.id,
  requestId: supportAttachments.requestId,
  messageId: supportAttachments.messageId,
  accountId: supportAttachments.accountId,
  filename: supportAttachments.filename,
  contentType: supportAttachments.contentType,
  size: supportAttachments.size,
  createdAt: supportAttachments.createdAt,
  expiresAt: supportAttachments.expiresAt,
  purgedAt: supportAttachments.purgedAt,
}

/** A request with its messages, oldest first (ids are time-ordered, so merged-in messages fall into place). */
async function withMessages(deps: Deps, row: RequestRow) {
  const messages = await deps.db.q.select().from(supportMessages).where(eq(supportMessages.requestId, row.id)).orderBy(asc(supportMessages.id))
  const files = await deps.db.q.select(attachmentMeta).from(supportAttachments).where(eq(supportAttachments.requestId, row.id)).orderBy(asc(supportAttachments.id))
  const now = deps.clock.now()
  return { ...toRequest(row), messages: messages.map((m) => toMessage(deps, m, files, now)) }
}

/** Where the desk's answer goes: the person who opened the request, else the account's first owner. */
async function contactEmailOf(deps: Deps, actor: Actor) {
  if (actor.person) return actor.person.email
  const [owner] = await deps.db.q
    .select({ email: people.email })
    .from(memberships)
    .innerJoin(people, eq(people.id, memberships.personId))
    .where(and(eq(memberships.accountId, actor.accountId), eq(memberships.role, 'owner')))
    .orderBy(asc(memberships.id))
    .limit(1)
  return owner?.email ?? null
}

/** Counted from the rows of the last hour, so the limits hold across restarts and instances. */
async function sinceHour(deps: Deps, table: typeof supportRequests | typeof supportMessages, accountId: string, now: number, extra?: ReturnType<typeof eq>) {
  const [r] = await deps.db.q
    .select({ n: count(), oldest: sql<string | null>`min(${table.createdAt})` })
    .from(table)
    .where(and(eq(table.accountId, accountId), gt(table.createdAt, iso(now - HOUR)), extra))
  return r
}

async function assertMayOpen(deps: Deps, actor: Actor, now: number) {
  const r = await sinceHour(deps, supportRequests, actor.accountId, now)
  if (r.n >= OPENS_PER_HOUR) {
    throw new AppError('support_rate_limited', { message: `This account opened ${r.n} support requests in the last hour; at most ${OPENS_PER_HOUR} an hour. Add to an open request with a reply instead.` })
  }
}

async function assertMayReply(deps: Deps, actor: Actor, now: number) {
  const r = await sinceHour(deps, supportMessages, actor.accountId, now, inArray(supportMessages.kind, ['reply', 'attachments']))
  if (r.n >= REPLIES_PER_HOUR) {
    const wait = Math.max(1, Math.ceil((Date.parse(r.oldest!) + HOUR - now) / 1000))
    throw new AppError('support_reply_too_soon', {
      message: `This account sent ${r.n} support replies in the last hour; at most ${REPLIES_PER_HOUR} an hour. The next may go in ${wait} seconds.`,
      retryAfter: wait,
    })
  }
}

/** Replies and files go only to requests still open; a merged one says where its conversation went. */
function assertOpen(row: RequestRow) {
  if (row.status === 'merged') throw new AppError('support_closed', { message: `Support request ${row.id} was merged into ${row.mergedIntoId}; continue there.` })
  if (row.status === 'closed') throw new AppError('support_closed', { message: `Support request ${row.id} was closed at ${row.closedAt}; reopen it (until ${toRequest(row).reopen_until}) or open a new one.` })
}

function authorOf(actor: Actor) {
  return { byKeyId: actor.person ? null : actor.keyId, byPersonId: actor.person?.id ?? null }
}

interface DeskFile {
  filename: string
  content: Buffer
}

/**
 * Mails a message to the operator's desk through the sending pipeline, from the
 * account that owns `MAILROOM_SUPPORT_FROM`'s verified domain, in the request's
 * transaction (the outbox row commits with the message). Reply-To is the customer,
 * so the desk answers them directly. Without a desk nothing is sent: the request
 * waits in the database for the console. A refused send never loses the message;
 * its code is kept on it.
 */
async function forwardToDesk(deps: Deps, request: RequestRow, kind: MessageRow['kind'], body: string, files: DeskFile[]) {
  const { supportEmail, supportFrom } = deps.config
  if (!supportEmail || !supportFrom) return { deskEmailId: null, deskError: null }
  const [desk] = await deps.db.q
    .select({ accountId: domains.accountId })
    .from(domains)
    .where(and(eq(domains.name, supportFrom.split('@')[1]), eq(domains.status, 'verified'), eq(domains.sendingEnabled, true)))
    .limit(1)
  if (!desk) return { deskEmailId: null, deskError: 'domain_not_verified' }
  const what = { opened: 'New support request', reply: 'Reply', attachments: 'Files' }[kind]
  const text = [
    `${what} on ${request.id} from account ${request.accountId}${request.contactEmail ? ` (${request.contactEmail})` : ''}.`,
    '',
    body || '(no text)',
    '',
    ...(files.length ? [`Attached: ${files.map((f) => f.filename).join(', ')}`, ''] : []),
    `Reply to this email to answer ${request.contactEmail ?? 'the customer'}.`,
  ].join('\n')
  try {
    const sent = await sendEmail(deps, systemActor(desk.accountId), {
      from: `Mailroom support <${supportFrom}>`,
      to: supportEmail,
      ...(request.contactEmail ? { reply_to: request.contactEmail } : {}),
      subject: `[support ${request.id}] ${request.subject}`,
      text,
      headers: { 'X-Mailroom-Support-Request': request.id, 'X-Mailroom-Account': request.accountId },
      ...(files.length ? { attachments: files.map((f) => ({ filename: f.filename, content: f.content.toString('base64') })) } : {}),
    })
    return { deskEmailId: sent.id, deskError: null }
  } catch (e) {
    if (!(e instanceof AppError)) throw e
    deps.log.error('support desk forward refused', { request_id: request.id, code: e.code, message: e.message })
    return { deskEmailId: null, deskError: e.code }
  }
}

/** Adds a message (and its files) to a request, forwards it to the desk, and touches the request. */
async function addMessage(deps: Deps, actor: Actor, request: RequestRow, kind: MessageRow['kind'], body: string, files: (DeskFile & { contentType: string })[]) {
  const now = deps.clock.now()
  const at = iso(now)
  const desk = await forwardToDesk(deps, request, kind, body, files)
  const message: MessageRow = { id: deps.ids.uuid(), requestId: request.id, accountId: request.accountId, kind, body, ...authorOf(actor), ...desk, createdAt: at }
  const rows = files.map((f) => ({
    id: deps.ids.uuid(),
    requestId: request.id,
    messageId: message.id,
    accountId: request.accountId,
    filename: f.filename,
    contentType: f.contentType,
    size: f.content.length,
    content: f.content,
    createdAt: at,
    expiresAt: iso(now + ATTACHMENT_LIFETIME),
    purgedAt: null,
  }))
  await deps.db.write(async (tx) => {
    await tx.insert(supportMessages).values(message)
    if (rows.length) await tx.insert(supportAttachments).values(rows)
    await tx.update(supportRequests).set({ updatedAt: at }).where(eq(supportRequests.id, request.id))
  })
  return toMessage(deps, message, rows, now)
}

/**
 * POST /support/requests. With `draft: true` nothing is opened: the published
 * answers that match the subject and message are ranked and a reply drafted from
 * them (`support_draft_unavailable` when no desk is configured, or none matches).
 */
export async function openRequest(deps: Deps, actor: Actor, input: OpenRequest) {
  if (input.draft) return { status: 200 as const, body: draftFromAnswers(deps, input) }
  const now = deps.clock.now()
  await assertMayOpen(deps, actor, now)
  const at = iso(now)
  const row: RequestRow = {
    id: deps.ids.uuid(),
    accountId: actor.accountId,
    subject: input.subject,
    status: 'open',
    contactEmail: await contactEmailOf(deps, actor),
    openedByKeyId: actor.person ? null : actor.keyId,
    openedByPersonId: actor.person?.id ?? null,
    mergedIntoId: null,
    closedAt: null,
    createdAt: at,
    updatedAt: at,
  }
  await deps.db.write((tx) => tx.insert(supportRequests).values(row))
  await addMessage(deps, actor, row, 'opened', input.message, [])
  return { status: 201 as const, body: await withMessages(deps, row) }
}

const DRAFT_ANSWERS = 3

function draftFromAnswers(deps: Deps, input: OpenRequest) {
  // The draft helper belongs to a desk: without one, requests wait for the operator in the console.
  if (!deps.config.supportEmail) {
    throw new AppError('support_draft_unavailable', {
      message: 'No support desk is configured on this deployment, so no reply can be drafted. Open the request without `draft` (the operator reads it in the console), or search the published answers with GET /support/answers?q=….',
    })
  }
  const found = searchAnswers(`${input.subject} ${input.message}`).slice(0, DRAFT_ANSWERS)
  if (!found.length) {
    throw new AppError('support_draft_unavailable', {
      message: 'No published answer matches this request, so there is nothing to draft from. Open the request without `draft` and it will be answered by the operator.',
    })
  }
  const reply = [
    `These published answers match "${input.subject}":`,
    '',
    ...found.map((f, i) => `${i + 1}. ${f.answer.title}: ${f.answer.summary}\n   ${answerUrl(deps, f.answer.slug)}`),
    '',
    'If none of them solves it, open the request without `draft` and the operator will answer.',
  ].join('\n')
  return { object: 'support_draft' as const, subject: input.subject, answers: found.map((f) => toSummary(deps, f.answer, f.score)), reply }
}

export async function listRequests(deps: Deps, actor: Actor, q: ListRequestsQuery) {
  const { status, ...paging } = q
  return pageOf(
    deps.secret,
    { list: listKey('support_requests', { status }), query: paging, id: supportRequests.id },
    (ks) =>
      deps.db.q
        .select()
        .from(supportRequests)
        .where(and(eq(supportRequests.accountId, actor.accountId), status ? eq(supportRequests.status, status) : undefined, ks.where))
        .orderBy(ks.orderBy)
        .limit(ks.limit),
    toRequest,
  )
}

export async function getRequest(deps: Deps, actor: Actor, id: string) {
  return withMessages(deps, await findRequest(deps, actor, id))
}

export async function reply(deps: Deps, actor: Actor, id: string, message: string) {
  const row = await findRequest(deps, actor, id)
  assertOpen(row)
  await assertMayReply(deps, actor, deps.clock.now())
  return addMessage(deps, actor, row, 'reply', message, [])
}

/**
 * Files come as JSON (base64), one message per call: each is sized, then its real
 * type read from its bytes, before anything is written.
 */
export async function attach(deps: Deps, actor: Actor, id: string, input: AttachBody) {
  const row = await findRequest(deps, actor, id)
  assertOpen(row)
  if (input.files.length > FILES_PER_MESSAGE) {
    throw new AppError('support_upload_too_large', { message: `${input.files.length} files in one message; at most ${FILES_PER_MESSAGE}. Send the rest in another message.` })
  }
  const decoded = input.files.map((f, i) => ({ ...f, bytes: decodeBase64(`files[${i}].content`, f.content) }))
  for (const f of decoded) {
    if (f.bytes.length > FILE_LIMIT) throw new AppError('support_upload_too_large', { message: `${f.filename} is ${(f.bytes.length / MB).toFixed(1)} MB; each file may be at most ${FILE_LIMIT / MB} MB.` })
  }
  const total = decoded.reduce((n, f) => n + f.bytes.length, 0)
  if (total > MESSAGE_LIMIT) throw new AppError('support_upload_too_large', { message: `These files come to ${(total / MB).toFixed(1)} MB; one message may carry at most ${MESSAGE_LIMIT / MB} MB.` })
  const files = decoded.map((f) => ({ filename: f.filename, content: f.bytes, contentType: fileType(f.filename, f.bytes, f.content_type) }))
  await assertMayReply(deps, actor, deps.clock.now())
  return addMessage(deps, actor, row, 'attachments', input.message ?? '', files)
}

/** The file itself; after 30 days `support_attachment_expired`, whether or not the purge job has emptied it yet. */
export async function downloadAttachment(deps: Deps, actor: Actor, id: string, aid: string) {
  const row = await findRequest(deps, actor, id)
  const [a] = await deps.db.q
    .select()
    .from(supportAttachments)
    .where(and(eq(supportAttachments.id, aid.toLowerCase()), eq(supportAttachments.requestId, row.id)))
  if (!a) throw notFound(`Attachment ${aid} of support request ${row.id}`)
  if (isExpired(a, deps.clock.now()) || !a.content) {
    throw new AppError('support_attachment_expired', { message: `${a.filename} was attached at ${a.createdAt} and kept until ${a.expiresAt}; its bytes are gone.` })
  }
  const ascii = a.filename.replace(/["\\\r\n]/g, '_').replace(/[^\x20-\x7e]/g, '_')
  return new Response(new Uint8Array(a.content), {
    headers: {
      'content-type': a.contentType,
      'content-length': String(a.size),
      'content-disposition': `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(a.filename)}`,
      // The type was read from the bytes; browsers must not guess another.
      'x-content-type-options': 'nosniff',
    },
  })
}

async function setStatus(deps: Deps, row: RequestRow, patch: Partial<RequestRow>) {
  const next = { ...row, ...patch, updatedAt: iso(deps.clock.now()) }
  await deps.db.write((tx) => tx.update(supportRequests).set({ ...patch, updatedAt: next.updatedAt }).where(eq(supportRequests.id, row.id)))
  return withMessages(deps, next)
}

/** Closing is the resolution: the 14-day reopen window starts now. Closing a closed request changes nothing. */
export async function closeRequest(deps: Deps, actor: Actor, id: string) {
  const row = await findRequest(deps, actor, id)
  if (row.status === 'merged') assertOpen(row)
  if (row.status === 'closed') return withMessages(deps, row)
  return setStatus(deps, row, { status: 'closed', closedAt: iso(deps.clock.now()) })
}

export async function reopenRequest(deps: Deps, actor: Actor, id: string) {
  const row = await findRequest(deps, actor, id)
  if (row.status === 'merged') assertOpen(row)
  if (row.status === 'open') return withMessages(deps, row)
  const until = Date.parse(row.closedAt!) + REOPEN_WINDOW
  if (deps.clock.now() > until) {
    throw new AppError('support_reopen_expired', { message: `Support request ${row.id} was closed at ${row.closedAt}; it could be reopened until ${iso(until)}. Open a new request and mention this one.` })
  }
  return setStatus(deps, row, { status: 'open', closedAt: null })
}

/**
 * Folds `source_id` into this request: its messages and files move here and it
 * ends `merged`. Tenancy comes first: an id the caller cannot see is
 * `support_ticket_not_found`, exactly as an id that does not exist. Only a person
 * who belongs to both accounts can see a request of another account, and for them
 * the merge is `support_merge_conflict`: requests never cross accounts.
 */
export async function mergeRequest(deps: Deps, actor: Actor, id: string, sourceId: string) {
  const target = await findRequest(deps, actor, id)
  const [source] = await deps.db.q.select().from(supportRequests).where(eq(supportRequests.id, sourceId.toLowerCase()))
  if (!source || (source.accountId !== actor.accountId && !(await memberOf(deps, actor, source.accountId)))) throw ticketNotFound(sourceId)
  if (source.accountId !== actor.accountId) {
    throw new AppError('support_merge_conflict', { message: `Support request ${source.id} belongs to another of your accounts than ${target.id}; requests can only be merged within one account.` })
  }
  if (source.id === target.id) throw new AppError('invalid_parameter', { message: 'A support request cannot be merged into itself.', details: [{ field: 'source_id', message: 'must name another request' }] })
  assertOpen(target)
  if (source.status === 'merged') assertOpen(source)
  const at = iso(deps.clock.now())
  await deps.db.write(async (tx) => {
    await tx.update(supportMessages).set({ requestId: target.id }).where(eq(supportMessages.requestId, source.id))
    await tx.update(supportAttachments).set({ requestId: target.id }).where(eq(supportAttachments.requestId, source.id))
    await tx.update(supportRequests).set({ status: 'merged', mergedIntoId: target.id, updatedAt: at }).where(eq(supportRequests.id, source.id))
    await tx.update(supportRequests).set({ updatedAt: at }).where(eq(supportRequests.id, target.id))
  })
  return withMessages(deps, { ...target, updatedAt: at })
}

async function memberOf(deps: Deps, actor: Actor, accountId: string) {
  if (!actor.person) return false
  const [m] = await deps.db.q
    .select({ id: memberships.id })
    .from(memberships)
    .where(and(eq(memberships.personId, actor.person.id), eq(memberships.accountId, accountId)))
  return Boolean(m)
}

/** The purge job: empties the bytes of attachments past their 30 days; the row stays so a download answers 410. */
export async function purgeSupportAttachments(db: Database, now: number) {
  return db.write((tx) =>
    tx
      .update(supportAttachments)
      .set({ content: null, purgedAt: iso(now) })
      .where(and(isNull(supportAttachments.purgedAt), lte(supportAttachments.expiresAt, iso(now)))),
  )
}
