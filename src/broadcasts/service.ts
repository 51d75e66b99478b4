import { and, eq, inArray, sql } from 'drizzle-orm'
import { holdForApproval, mayHold } from '../agent-actions/hold'
import { recordChange } from '../audit/record'
import { definitions } from '../contact-properties/service'
import { findSegment } from '../contacts/segments'
import { pageOf } from '../db/paging'
import { broadcasts, domains, topics } from '../db/tables'
import { inTransaction, type Deps, type RootDeps } from '../deps'
import { asList, parseAddress } from '../emails/address'
import { canSend, ledgerFindings, readLedger, spend, type DomainRow } from '../emails/checks'
import { contentFindings, firstError } from '../emails/content'
import { parseSchedule } from '../emails/schedule'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { UUID_RE } from '../lib/ids'
import { listKey, type PageQuery } from '../lib/paging'
import { ceilTo, floorTo, QUARTER } from '../metrics/time'
import { sumRollups } from '../metrics/rollup'
import { renderContent } from '../templates/render'
import { publishedTemplate } from '../templates/service'
import { countRecipients, simulatorAddress, type Audience } from './audience'
import { cancelWaiting } from './bulk'
import { propertyKeys, variablesOf } from './personalise'
import type { CreateBroadcast, SendBroadcast, UpdateBroadcast } from './schema'
import { broadcastGate } from '../trust/gate'

export type BroadcastRow = typeof broadcasts.$inferSelect
type Counts = ReturnType<typeof zeroCounts>

const zeroCounts = (row: Pick<BroadcastRow, 'enqueued' | 'canceledCount'>) => ({
  enqueued: row.enqueued,
  sent: 0,
  delivered: 0,
  delivery_delayed: 0,
  bounced: 0,
  complained: 0,
  failed: 0,
  suppressed: 0,
  opened: 0,
  unique_opened: 0,
  clicked: 0,
  unique_clicked: 0,
  unsubscribed: 0,
  canceled: row.canceledCount,
})

/** The list's item: Resend's broadcast summary, with `topic_id`. */
const toSummary = (row: BroadcastRow) => ({
  id: row.id,
  name: row.name,
  segment_id: row.segmentId,
  audience_id: row.segmentId,
  status: row.status,
  topic_id: row.topicId,
  created_at: row.createdAt,
  scheduled_at: row.scheduledAt,
  sent_at: row.sentAt,
})

/** Resend's broadcast object, with its template, progress, counts and, for a scheduled one that could not start, why. */
const toBroadcast = (row: BroadcastRow, counts: Counts = zeroCounts(row)) => ({
  object: 'broadcast' as const,
  ...toSummary(row),
  from: row.from,
  subject: row.subject,
  reply_to: row.replyTo.length ? row.replyTo : null,
  preview_text: row.previewText,
  html: row.html,
  text: row.text,
  template: row.templateId ? { id: row.templateId, variables: row.templateVariables ?? {} } : null,
  updated_at: row.updatedAt,
  started_at: row.startedAt,
  canceled_at: row.canceledAt,
  recipient_count: row.recipientCount,
  counts,
  error: row.error,
})

const invalid = (field: string, message: string) => new AppError('invalid_parameter', { message, details: [{ field, message }] })

function conflict(row: BroadcastRow, rule: string) {
  return new AppError('broadcast_status_conflict', { message: `Broadcast ${row.id} is ${row.status}: ${rule}.`, extra: { status: row.status } })
}

export async function findBroadcast(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(broadcasts)
    .where(and(eq(broadcasts.id, id.toLowerCase()), eq(broadcasts.accountId, actor.accountId)))
  if (!row) throw notFound(`Broadcast ${id}`)
  return row
}

async function topicOf(deps: Deps, actor: Actor, id: string) {
  const [topic] = UUID_RE.test(id)
    ? await deps.db.q
        .select()
        .from(topics)
        .where(and(eq(topics.accountId, actor.accountId), eq(topics.id, id.toLowerCase())))
    : []
  return topic ?? null
}

/** What a create or update sets, each field checked; references (segment, topic, template) must be the account's. */
async function fieldsOf(deps: Deps, actor: Actor, input: UpdateBroadcast): Promise<Partial<BroadcastRow>> {
  const f: Partial<BroadcastRow> = {}
  if (input.segment_id !== undefined && input.audience_id !== undefined && input.segment_id.toLowerCase() !== input.audience_id.toLowerCase()) {
    throw invalid('segment_id', '`segment_id` and `audience_id` name different segments; send one of them.')
  }
  const segment = input.segment_id ?? input.audience_id
  if (segment !== undefined) f.segmentId = (await findSegment(deps.db.q, actor.accountId, segment)).id
  if (input.from !== undefined) {
    if (!parseAddress(input.from)) {
      throw new AppError('invalid_from_address', { message: `Invalid \`from\` field "${input.from.slice(0, 200)}": use \`email@example.com\` or \`Name <email@example.com>\`.`, details: [{ field: 'from', message: 'not an address' }] })
    }
    f.from = input.from.trim()
  }
  if (input.subject !== undefined) {
    if (/[\r\n]/.test(input.subject)) throw invalid('subject', '`subject` contains a line break; a subject is one line.')
    f.subject = input.subject
  }
  if (input.reply_to !== undefined) {
    f.replyTo = asList(input.reply_to).map((r, i) => {
      if (!parseAddress(r)) throw invalid(`reply_to[${i}]`, `\`reply_to\` "${r.slice(0, 200)}" is not an e-mail address: use \`a@b.com\` or \`Name <a@b.com>\`.`)
      return r.trim()
    })
  }
  if (input.name !== undefined) f.name = input.name
  if (input.preview_text !== undefined) f.previewText = input.preview_text
  if (input.html !== undefined) f.html = input.html
  if (input.text !== undefined) f.text = input.text
  if (input.topic_id !== undefined) {
    const topic = input.topic_id === null ? null : await topicOf(deps, actor, input.topic_id)
    if (input.topic_id !== null && !topic) throw invalid('topic_id', `\`topic_id\` ${input.topic_id.slice(0, 100)} is not a topic of this account.`)
    f.topicId = topic?.id ?? null
  }
  if (input.template === null) Object.assign(f, { templateId: null, templateVariables: null })
  else if (input.template !== undefined) {
    const found = await publishedTemplate(deps.db.q, actor.accountId, input.template.id)
    if (!found) throw invalid('template.id', `\`template.id\` "${input.template.id.slice(0, 100)}" is no template of this account; give a template’s id or alias.`)
    Object.assign(f, { templateId: found.id, templateVariables: input.template.variables ?? {} })
  }
  return f
}

/** What a new draft starts with beside its content: nothing sent, nothing leased. */
const unsent = (now: string) => ({
  status: 'draft' as const,
  scheduledAt: null,
  startedAt: null,
  sentAt: null,
  canceledAt: null,
  apiKeyId: null,
  domainId: null,
  recipientCount: null,
  enqueued: 0,
  canceledCount: 0,
  fanoutCursor: null,
  leaseOwner: null,
  leaseUntil: null,
  error: null,
  createdAt: now,
  updatedAt: now,
})

/** A template gives the bodies: it cannot stand beside `html` or `text`. */
function checkBodies(row: Pick<BroadcastRow, 'templateId' | 'html' | 'text'>) {
  if (row.templateId && (row.html !== null || row.text !== null)) {
    throw invalid('template', '`template` cannot be combined with `html` or `text`: the template gives the bodies. Leave them out (or null), or remove the template.')
  }
}

export async function createBroadcast(deps: Deps, actor: Actor, input: CreateBroadcast) {
  const missing = [input.segment_id ?? input.audience_id ? null : 'segment_id', input.from === undefined ? 'from' : null, input.subject === undefined ? 'subject' : null].filter((m): m is string => m !== null)
  if (missing.length) {
    const names = missing.map((m) => `\`${m}\``)
    throw new AppError('missing_required_field', {
      message: `Missing ${names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]} fields` : `${names[0]} field`}.`,
      details: missing.map((field) => ({ field, message: 'required' })),
    })
  }
  if ((input.scheduled_at ?? null) !== null && !input.send) throw invalid('scheduled_at', '`scheduled_at` needs `send: true`; a draft has no schedule (give it with POST /broadcasts/{id}/send).')
  const f = await fieldsOf(deps, actor, input)
  const now = iso(deps.clock.now())
  const row: BroadcastRow = {
    id: deps.ids.uuid(),
    accountId: actor.accountId,
    name: null,
    topicId: null,
    templateId: null,
    templateVariables: null,
    replyTo: [],
    previewText: null,
    html: null,
    text: null,
    segmentId: f.segmentId!,
    from: f.from!,
    subject: f.subject!,
    ...f,
    ...unsent(now),
  }
  checkBodies(row)
  await deps.db.write((tx) => tx.insert(broadcasts).values(row))
  await recordChange(deps, actor, { resource: 'broadcast', resourceId: row.id, action: 'created', before: null, after: toBroadcast(row) })
  if (!input.send) return toBroadcast(row)
  // Sent in the same request: a refusal undoes the create too, except a hold for a
  // person's approval, which keeps the draft its pending action will send.
  try {
    return await sendBroadcast(deps, actor, row.id, { scheduled_at: input.scheduled_at })
  } catch (e) {
    if (!(e instanceof AppError) || e.code !== 'approval_required' || !e.keep) throw e
    const keep = e.keep
    throw new AppError(e.code, {
      message: `${e.message} The broadcast waits as draft ${row.id}.`,
      extra: { ...e.extra, broadcast_id: row.id },
      keep: async (tx) => {
        await tx.insert(broadcasts).values(row)
        await keep(tx)
      },
    })
  }
}

export async function listBroadcasts(deps: Deps, actor: Actor, q: PageQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('broadcasts'), query: q, id: broadcasts.id },
    (ks) => deps.db.q.select().from(broadcasts).where(and(eq(broadcasts.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toSummary,
  )
}

/** The counts from the event rollups (the broadcast is one of their dimensions), plus the fan-out's progress. */
async function countsOf(deps: Deps, row: BroadcastRow): Promise<Counts> {
  const counts = zeroCounts(row)
  if (!row.startedAt) return counts
  const slice = { from: floorTo(Date.parse(row.startedAt), QUARTER), to: ceilTo(deps.clock.now(), QUARTER) + QUARTER, key: 0 }
  const [sums] = await sumRollups(deps.db.q, row.accountId, [slice], { broadcastIds: [row.id] })
  if (!sums) return counts
  for (const k of Object.keys(counts) as (keyof Counts)[]) if (k !== 'enqueued' && k !== 'canceled') counts[k] = sums[k]
  return counts
}

export async function getBroadcast(deps: Deps, actor: Actor, id: string) {
  const row = await findBroadcast(deps, actor, id)
  return { ...toBroadcast(row, await countsOf(deps, row)), estimated_recipient_count: row.status === 'draft' ? await draftReach(deps, actor, row) : null }
}

/** The broadcast's recipients as the count and the fan-out select them: its segment under its topic. */
const audienceOf = (actor: Actor, row: BroadcastRow, topic: { id: string; defaultSubscription: 'opt_in' | 'opt_out' } | null): Audience => ({
  accountId: actor.accountId,
  segmentId: row.segmentId,
  topic: topic && { id: topic.id, defaultSubscription: topic.defaultSubscription },
})

/** Whom a draft would reach if sent now: its segment less unsubscribes, topic refusals and suppressions. */
async function draftReach(deps: Deps, actor: Actor, row: BroadcastRow): Promise<number> {
  const topic = row.topicId ? await topicOf(deps, actor, row.topicId) : null
  return countRecipients(deps.db.q, audienceOf(actor, row, topic), new Date(deps.clock.now()))
}

export async function updateBroadcast(deps: Deps, actor: Actor, id: string, input: UpdateBroadcast) {
  const row = await findBroadcast(deps, actor, id)
  if (row.status !== 'draft') throw conflict(row, 'only a draft can be edited; duplicate it (POST /broadcasts/{id}/duplicate) to change a copy')
  const next: BroadcastRow = { ...row, ...(await fieldsOf(deps, actor, input)), updatedAt: iso(deps.clock.now()) }
  checkBodies(next)
  await deps.db.write((tx) => tx.update(broadcasts).set(next).where(eq(broadcasts.id, row.id)))
  const after = toBroadcast(next)
  await recordChange(deps, actor, { resource: 'broadcast', resourceId: row.id, action: 'updated', before: toBroadcast(row), after })
  return after
}

export async function deleteBroadcast(deps: Deps, actor: Actor, id: string) {
  const row = await findBroadcast(deps, actor, id)
  if (row.status !== 'draft') throw conflict(row, 'only a draft can be deleted; cancel a scheduled or sending one instead')
  await deps.db.write((tx) => tx.delete(broadcasts).where(eq(broadcasts.id, row.id)))
  await recordChange(deps, actor, { resource: 'broadcast', resourceId: row.id, action: 'deleted', before: toBroadcast(row), after: null })
  return { object: 'broadcast' as const, id: row.id, deleted: true }
}

/** What sending needs, checked: the bodies (rendered from the template, if any), the audience counted, the sending domain. */
interface Ready {
  html: string | null
  text: string | null
  recipients: number
  domain: DomainRow | null
}

/**
 * Everything a broadcast must pass before it goes (now, or when scheduled): its
 * template renders, the content rules, every variable names a contact field or a
 * defined property, its topic and segment exist, the key may send from its domain,
 * and the domain is verified unless every recipient is a simulator address.
 */
async function readyToSend(deps: Deps, actor: Actor, row: BroadcastRow, now: number): Promise<Ready> {
  let { html, text } = row
  if (row.templateId) {
    const found = await publishedTemplate(deps.db.q, actor.accountId, row.templateId)
    if (!found) throw invalid('template.id', `The template ${row.templateId} of this broadcast no longer exists; remove it or choose another.`)
    if (!found.version) throw new AppError('template_not_published', { message: `Template "${found.name}" (${found.id}) has no published version yet; publish it with POST /templates/${found.id}/publish.` })
    const { rendered, findings } = renderContent(found.version, row.templateVariables ?? {}, 'template.variables')
    const err = firstError(findings)
    if (err) throw err
    ;({ html, text } = rendered)
  }
  const err = firstError(contentFindings(deps.config, { subject: row.subject, html, text, attachments: [] }))
  if (err) throw err
  const defined = await definitions(deps.db.q, actor.accountId, propertyKeys(row.subject, html, text))
  for (const [field, body] of [['subject', row.subject], ['html', html], ['text', text]] as const) {
    for (const v of variablesOf(body)) {
      if (v.field.kind === 'property' && !defined.has(v.field.key)) {
        throw invalid(field, `\`{{{${v.name}}}}\` in the ${field} is neither a contact field (FIRST_NAME, LAST_NAME, EMAIL) nor a contact property of this account; define it with POST /contact-properties or fix the name.`)
      }
      if (v.field.kind === 'unsubscribe_url' && field === 'subject') throw invalid(field, '`{{{RESEND_UNSUBSCRIBE_URL}}}` belongs in the html or text, not the subject.')
    }
  }
  const topic = row.topicId ? await topicOf(deps, actor, row.topicId) : null
  if (row.topicId && !topic) throw invalid('topic_id', `The topic ${row.topicId} of this broadcast no longer exists; choose another with PATCH /broadcasts/${row.id}.`)
  await findSegment(deps.db.q, actor.accountId, row.segmentId)
  const from = parseAddress(row.from)!
  if (actor.domainScope && actor.domainScope.toLowerCase() !== from.domain) {
    throw new AppError('domain_scope_violation', { message: `This API key may send only from ${actor.domainScope}; \`from\` is at ${from.domain}.` })
  }
  const [domain] = await deps.db.q
    .select()
    .from(domains)
    .where(and(eq(domains.accountId, actor.accountId), eq(domains.name, from.domain)))
  const audience = audienceOf(actor, row, topic)
  const recipients = await countRecipients(deps.db.q, audience, new Date(now))
  const sends = domain && canSend(domain)
  // Without a domain that may send, only simulator addresses can be sent to.
  const real = sends || !recipients ? 0 : await countRecipients(deps.db.q, audience, new Date(now), sql`not ${simulatorAddress}`)
  if (real) {
    if (domain?.status === 'verified') throw new AppError('domain_sending_disabled', { message: `Sending is disabled on ${domain.name}; enable it with PATCH /domains/${domain.id}.` })
    throw new AppError('domain_not_verified', {
      message: `The ${from.domain} domain is not verified for sending (${domain ? `its status is ${domain.status}` : 'it is not a domain of this account'}), and ${real} of the ${recipients} recipients are real addresses.`,
    })
  }
  await broadcastGate(deps, actor, sends ? domain : null, recipients, now)
  return { html, text, recipients, domain: sends ? domain : null }
}

/** The key budget and account quotas against the recipients, read (and with `spendIt`, spent) in `tx`. */
async function meetLedger(deps: Deps, actor: Actor, n: number, now: number, spendIt: boolean) {
  await deps.db.write(async (tx) => {
    const ledger = await readLedger(tx, deps, actor, n, now)
    const err = firstError(ledgerFindings(ledger))
    if (err) throw err
    if (spendIt) await spend(tx, actor, ledger)
  })
}

/** Sending starts: quota spent, content frozen, the recipient count stated; the fan-out job takes it from here. */
async function begin(deps: Deps, actor: Actor, row: BroadcastRow, ready: Ready, now: number) {
  const at = iso(now)
  const patch = {
    status: 'queued' as const,
    startedAt: at,
    apiKeyId: actor.keyId,
    domainId: ready.domain?.id ?? null,
    recipientCount: ready.recipients,
    html: ready.html,
    text: ready.text,
    enqueued: 0,
    fanoutCursor: null,
    error: null,
    updatedAt: at,
  }
  await meetLedger(deps, actor, ready.recipients, now, true)
  await deps.db.write((tx) => tx.update(broadcasts).set(patch).where(eq(broadcasts.id, row.id)))
  return { ...row, ...patch }
}

/**
 * POST /broadcasts/{id}/send: a draft starts sending now, or is scheduled. Now:
 * every check passes (or nothing changes), the recipients are counted and the
 * reply states how many; their emails are written by the fan-out job in the
 * background. Scheduled: checked now, counted again when its time comes.
 */
export async function sendBroadcast(deps: Deps, actor: Actor, id: string, input: SendBroadcast) {
  const row = await findBroadcast(deps, actor, id)
  if (row.status !== 'draft') throw conflict(row, 'only a draft can be sent; duplicate it (POST /broadcasts/{id}/duplicate) to send it again')
  const now = deps.clock.now()
  let scheduledAt: number | null = null
  if ((input.scheduled_at ?? null) !== null) {
    const s = parseSchedule(input.scheduled_at!, now)
    if (!s.ok) throw invalid('scheduled_at', s.message)
    scheduledAt = s.at
  }
  const ready = await readyToSend(deps, actor, row, now)
  const threshold = deps.config.controls.approvalThreshold
  if (mayHold(actor) && threshold > 0 && ready.recipients > threshold) {
    await holdForApproval(deps, actor, {
      kind: 'send_broadcast',
      reason: 'broadcast_threshold',
      detail: `This broadcast goes to ${ready.recipients} recipients, above the ${threshold} a key may send at once without a person’s approval.`,
      request: { broadcast_id: row.id, input },
    })
  }
  let next: BroadcastRow
  if (scheduledAt !== null) {
    await meetLedger(deps, actor, ready.recipients, now, false)
    const patch = { status: 'scheduled' as const, scheduledAt: iso(scheduledAt), apiKeyId: actor.keyId, recipientCount: ready.recipients, updatedAt: iso(now) }
    await deps.db.write((tx) => tx.update(broadcasts).set(patch).where(eq(broadcasts.id, row.id)))
    next = { ...row, ...patch }
  } else {
    next = await begin(deps, actor, row, ready, now)
  }
  const after = toBroadcast(next)
  await recordChange(deps, actor, { resource: 'broadcast', resourceId: row.id, action: scheduledAt === null ? 'sending_started' : 'scheduled', before: toBroadcast(row), after })
  return after
}

/** Who a scheduled broadcast is sent as when its time comes: the key that scheduled it (its budget pays), or the account. */
const senderOf = (row: BroadcastRow): Actor => ({ accountId: row.accountId, kind: row.apiKeyId ? 'key' : 'system', keyId: row.apiKeyId, permission: 'full_access', domainScope: null })

/**
 * A scheduled broadcast whose time came starts sending, checked again as a send
 * now is. A refusal (the domain lost its verification, the quota ran out, the
 * template was unpublished…) cancels it, with the reason in `error`.
 */
export async function startScheduled(root: RootDeps, id: string) {
  try {
    await inTransaction(root, async (deps) => {
      const [row] = await deps.db.q
        .select()
        .from(broadcasts)
        .where(and(eq(broadcasts.id, id), eq(broadcasts.status, 'scheduled')))
      if (!row) return
      const actor = senderOf(row)
      const now = deps.clock.now()
      const next = await begin(deps, actor, row, await readyToSend(deps, actor, row, now), now)
      await recordChange(deps, actor, { resource: 'broadcast', resourceId: row.id, action: 'sending_started', before: toBroadcast(row), after: toBroadcast(next) })
    })
  } catch (e) {
    if (!(e instanceof AppError)) throw e
    const at = iso(root.clock.now())
    await root.db.write((tx) =>
      tx
        .update(broadcasts)
        .set({ status: 'canceled', canceledAt: at, error: { code: e.code, message: e.message }, updatedAt: at })
        .where(and(eq(broadcasts.id, id), eq(broadcasts.status, 'scheduled'))),
    )
  }
}

/**
 * POST /broadcasts/{id}/cancel: a scheduled broadcast never starts; a sending one
 * stops where it is. Its fan-out writes no more emails, and every message still
 * waiting in the queue is canceled; messages already handed to a mail server go.
 */
export async function cancelBroadcast(deps: Deps, actor: Actor, id: string) {
  const row = await findBroadcast(deps, actor, id)
  if (!['scheduled', 'queued', 'sending'].includes(row.status)) throw conflict(row, 'only a scheduled or sending broadcast can be canceled')
  const at = iso(deps.clock.now())
  const next = await deps.db.write(async (tx) => {
    const [changed] = await tx
      .update(broadcasts)
      .set({ status: 'canceled', canceledAt: at, leaseOwner: null, leaseUntil: null, updatedAt: at })
      .where(and(eq(broadcasts.id, row.id), inArray(broadcasts.status, ['scheduled', 'queued', 'sending'])))
      .returning()
    if (!changed) throw conflict((await tx.select().from(broadcasts).where(eq(broadcasts.id, row.id)))[0], 'only a scheduled or sending broadcast can be canceled')
    const stopped = await cancelWaiting(tx, deps.ids, row.id, at)
    if (!stopped) return changed
    const [counted] = await tx.update(broadcasts).set({ canceledCount: stopped }).where(eq(broadcasts.id, row.id)).returning()
    return counted
  })
  const after = toBroadcast(next, await countsOf(deps, next))
  await recordChange(deps, actor, { resource: 'broadcast', resourceId: row.id, action: 'canceled', before: toBroadcast(row), after })
  return after
}

/** A new draft with the same content, segment and topic; a copy of a broadcast sent from a template goes back to the template. */
export async function duplicateBroadcast(deps: Deps, actor: Actor, id: string) {
  const row = await findBroadcast(deps, actor, id)
  const now = iso(deps.clock.now())
  const copy: BroadcastRow = {
    ...row,
    id: deps.ids.uuid(),
    name: row.name === null ? null : `${row.name.slice(0, 193)} (copy)`,
    html: row.templateId ? null : row.html,
    text: row.templateId ? null : row.text,
    ...unsent(now),
  }
  await deps.db.write((tx) => tx.insert(broadcasts).values(copy))
  const after = toBroadcast(copy)
  await recordChange(deps, actor, { resource: 'broadcast', resourceId: copy.id, action: 'duplicated', before: null, after })
  return after
}
