import type { Tx } from '../db'
import { rowInserter } from '../db/prepared'
import { deliveries, emailAttachments, emails, emailTags } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import type { BucketState } from '../lib/token-bucket'
import {
  accountChecks,
  keyControls,
  ledgerChecks,
  ledgerFindings,
  peekRate,
  rateCode,
  readLedger,
  recipientFindings,
  spend,
  takeRate,
  type CheckResult,
  type DomainCache,
  type DomainRow,
  type Ledger,
  type SendContext,
} from './checks'
import { contentFindings, errorFinding, firstError, linksOf, type Finding } from './content'
import { loadAttachments, mediaType, readDraft, type Draft } from './draft'
import { announceDue } from '../delivery/due'
import { recordFirstEvents, type NewEvent } from './events'
import type { SendEmail } from './schema'
import { expandTemplate, type TemplateCache } from './template'
import { sendGate } from '../trust/gate'

/** A message that passed every check of its own, waiting for the account's ledger. */
interface Prepared {
  draft: Draft
  domain: DomainRow | null
  checks: CheckResult[]
  warnings: Finding[]
}

// A send's rows, each kind in one prepared statement.
const insertEmails = rowInserter(emails)
const insertAttachments = rowInserter(emailAttachments)
const insertDeliveries = rowInserter(deliveries)
const insertTags = rowInserter(emailTags)

/** The email's rows of `email_tags`: each distinct `name:value`, and each distinct name with value ''. */
function tagRows(accountId: string, emailId: string, tags: Draft['tags']) {
  const keys = new Set(tags.flatMap((t) => [`${t.name}:`, `${t.name}:${t.value}`]))
  return [...keys].map((k) => {
    const i = k.indexOf(':')
    return { accountId, name: k.slice(0, i), value: k.slice(i + 1), emailId }
  })
}

/** What the emails of one batch read once and share: their templates and their from domains' facts. */
interface BatchCache {
  templates: TemplateCache
  domains: DomainCache
}

/** Reports the key's rate window after a send spent from it, for the reply headers. */
export type OnRate = (state: BucketState) => void

const contentOf = (draft: Draft) => ({
  subject: draft.subject,
  html: draft.html,
  text: draft.text,
  attachments: draft.attachments.map((a) => ({ filename: a.filename, field: a.field })),
})

/**
 * The send's form, with its template (if any) filled in first. Sends without a
 * template read nothing here.
 */
async function readForm(deps: Deps, actor: Actor, input: SendEmail, now: number, templates?: TemplateCache) {
  if (!input.template) return readDraft(input, now)
  const t = await expandTemplate(deps.db.q, actor.accountId, input, templates ?? new Map())
  const { draft, findings } = readDraft(t.input, now, t.templateId)
  return { draft, findings: [...t.findings, ...findings] }
}

/**
 * Everything a send checks before the ledger: the form (template first), the
 * attachments (fetched when `fetch`), the content rules, and the account checks.
 * Findings come in the order a send reports them.
 */
async function examine(deps: Deps, actor: Actor, input: SendEmail, now: number, fetch: boolean, cache?: BatchCache) {
  const { draft, findings } = await readForm(deps, actor, input, now, cache?.templates)
  if (fetch && !findings.some((f) => f.severity === 'error')) findings.push(...(await loadAttachments(draft)))
  findings.push(...contentFindings(deps.config, contentOf(draft)))
  const account = await accountChecks(deps, actor, draft, cache?.domains)
  findings.push(...account.findings)
  return { draft, findings, account }
}

async function prepare(deps: Deps, actor: Actor, input: SendEmail, now: number, cache?: BatchCache): Promise<Prepared> {
  const { draft, findings, account } = await examine(deps, actor, input, now, true, cache)
  const err = firstError(findings)
  if (err) throw err
  const checks: CheckResult[] = [
    { name: 'form', passed: true },
    { name: 'content_rules', passed: true, detail: `${linksOf(draft.html, draft.text).length} links checked` },
    ...account.checks,
  ]
  return { draft, domain: account.domain, checks, warnings: findings.filter((f) => f.severity === 'warning') }
}

/** Spends from the ledger and writes every email, its attachments, its deliveries and its first event. */
async function commit(deps: Deps, actor: Actor, items: Prepared[], now: number, onRate?: OnRate, ctx?: SendContext): Promise<string[]> {
  const n = items.reduce((sum, p) => sum + p.draft.recipients.length, 0)
  const real = items.reduce((sum, p) => sum + (p.draft.simulator ? 0 : p.draft.recipients.length), 0)
  return deps.db.write(async (tx) => {
    const ledger = await readLedger(tx, deps, actor, n, now, real)
    const err = firstError(ledgerFindings(ledger))
    if (err) throw err
    await sendGate(deps, actor, ledger, items, now, ctx)
    const controls = await keyControls(deps, actor, ledger, items.map((p) => p.draft), now, ctx)
    for (const p of items) p.warnings.push(...controls.warnings)
    const rate = takeRate(deps, ledger, now)
    if (rate?.untracked) throw new AppError('rate_limiter_unavailable')
    if (rate && !rate.allowed) {
      throw new AppError(rateCode(ledger), {
        message: `This send has ${n} recipients, one email each against the key's window of ${rate.limit} a minute, and the window holds only ${rate.remaining + 1} now; it refills over 60 seconds.`,
      })
    }
    if (rate) onRate?.(rate)
    await spend(tx, actor, ledger)
    const ids = await writeEmails(tx, deps, actor, items, ledger, now)
    controls.remember?.()
    return ids
  })
}

/** The rows of a batch's emails, each kind written in as few statements as it takes. */
interface BatchRows {
  emails: (typeof emails.$inferInsert)[]
  tags: (typeof emailTags.$inferInsert)[]
  attachments: (typeof emailAttachments.$inferInsert)[]
  deliveries: (typeof deliveries.$inferInsert)[]
  events: NewEvent[]
}

/** Writes every email of the batch, its tags, attachments and deliveries, and its first event; answers their ids in order. */
async function writeEmails(tx: Tx, deps: Deps, actor: Actor, items: Prepared[], ledger: Ledger, now: number) {
  const rows: BatchRows = { emails: [], tags: [], attachments: [], deliveries: [], events: [] }
  const ids = items.map((p) => addEmail(rows, deps, actor, p, ledger, now))
  await insertEmails(tx, rows.emails)
  await insertTags(tx, rows.tags)
  await insertAttachments(tx, rows.attachments)
  await insertDeliveries(tx, rows.deliveries)
  if (rows.deliveries.some((d) => d.state === 'queued')) announceDue()
  // Each email row was written naming this event as its last one.
  await recordFirstEvents(tx, deps.ids, rows.events)
  return ids
}

/** Adds one email's rows to the batch's, and answers its id. */
function addEmail(rows: BatchRows, deps: Deps, actor: Actor, p: Prepared, ledger: Ledger, now: number) {
  const { draft, domain } = p
  const id = deps.ids.uuid()
  const at = iso(now)
  const scheduled = draft.scheduledAt !== null
  const due = scheduled ? iso(draft.scheduledAt!) : at
  rows.emails.push({
    id,
    accountId: actor.accountId,
    apiKeyId: actor.keyId,
    domainId: domain && domain.status === 'verified' && domain.sendingEnabled ? domain.id : null,
    from: draft.from!.given,
    fromEmail: draft.from!.address,
    to: draft.to.map((a) => a.given),
    cc: draft.cc.map((a) => a.given),
    bcc: draft.bcc.map((a) => a.given),
    replyTo: draft.replyTo.map((a) => a.given),
    subject: draft.subject ?? '',
    html: draft.html,
    text: draft.text,
    headers: draft.headers,
    tags: draft.tags,
    topicId: draft.topicId?.toLowerCase() ?? null,
    templateId: draft.templateId,
    broadcastId: null,
    messageId: `${id}@${deps.config.hostname}`,
    inReplyTo: draft.inReplyTo,
    references: draft.references,
    priority: 'transactional',
    simulator: draft.simulator,
    openTracking: false,
    clickTracking: draft.clickTracking ?? domain?.clickTracking ?? false,
    scheduledAt: scheduled ? due : null,
    lastEvent: scheduled ? 'scheduled' : 'queued',
    createdAt: at,
    updatedAt: at,
  })
  rows.tags.push(...tagRows(actor.accountId, id, draft.tags))
  for (const a of draft.attachments) {
    rows.attachments.push({
      id: deps.ids.uuid(),
      emailId: id,
      accountId: actor.accountId,
      filename: a.filename,
      contentType: mediaType(a),
      contentId: a.contentId,
      disposition: a.contentId ? 'inline' : 'attachment',
      size: a.content!.length,
      content: a.content!,
    })
  }
  for (const r of draft.recipients) {
    rows.deliveries.push({
      id: deps.ids.uuid(),
      emailId: id,
      accountId: actor.accountId,
      recipient: r.address,
      recipientDomain: r.domain,
      kind: r.kind,
      state: scheduled ? ('scheduled' as const) : ('queued' as const),
      priority: 0,
      nextAttemptAt: due,
      attempts: 0,
      leaseOwner: null,
      leaseUntil: null,
      lastCode: null,
      lastResponse: null,
      createdAt: at,
      updatedAt: at,
    })
  }
  rows.events.push({
    accountId: actor.accountId,
    emailId: id,
    type: scheduled ? 'scheduled' : 'queued',
    at,
    data: {
      ...(scheduled ? { scheduled_at: due } : {}),
      recipients: draft.recipients.length,
      simulator: draft.simulator,
      domain: domain?.name ?? draft.from!.domain,
      checks: [...p.checks, ...ledgerChecks(ledger)],
      warnings: p.warnings,
      budget: ledger.budget,
      quota: { daily: ledger.daily, monthly: ledger.monthly },
      batch_recipients: ledger.n,
    },
  })
  return id
}

/** POST /emails: one email, now or scheduled; every check passes or nothing is written or spent. */
export async function sendEmail(deps: Deps, actor: Actor, input: SendEmail, onRate?: OnRate, ctx: SendContext = { replay: { kind: 'send_email', request: { input } } }) {
  const now = deps.clock.now()
  const p = await prepare(deps, actor, input, now)
  const [id] = await commit(deps, actor, [p], now, onRate, ctx)
  return { object: 'email' as const, id }
}

export type BatchMode = 'strict' | 'permissive'

export function batchMode(header: string | null): BatchMode {
  const v = (header ?? 'strict').trim().toLowerCase()
  if (v === 'strict' || v === 'permissive') return v
  throw new AppError('invalid_parameter', { message: `The \`x-batch-validation\` header must be \`strict\` or \`permissive\`, not "${header}".` })
}

/**
 * POST /emails/batch. Strict (the default) refuses the whole batch on the first
 * bad email, with that email's error and its `index`. Permissive sends the good
 * ones and lists the others in `errors`. The key budget, quotas and rate window
 * are met by the batch as a whole: refused there, nothing is sent.
 */
export async function sendBatch(deps: Deps, actor: Actor, items: SendEmail[], mode: BatchMode, onRate?: OnRate) {
  const now = deps.clock.now()
  const ready: Prepared[] = []
  const errors: { index: number; message: string; code: string }[] = []
  const cache: BatchCache = { templates: new Map(), domains: new Map() }
  for (const [index, item] of items.entries()) {
    try {
      ready.push(await prepare(deps, actor, item, now, cache))
    } catch (e) {
      if (!(e instanceof AppError)) throw e
      if (mode === 'strict') {
        throw new AppError(e.code, {
          message: `Email ${index} of the batch: ${e.message}`,
          details: (e.details ?? [{ field: '', message: e.message }]).map((d) => ({ field: `[${index}]${d.field ? `.${d.field}` : ''}`, message: d.message })),
          extra: { index },
        })
      }
      errors.push({ index, message: e.message, code: e.code })
    }
  }
  const ctx: SendContext = { replay: { kind: 'send_batch', request: { items, mode } }, batch: true }
  const ids = ready.length ? await commit(deps, actor, ready, now, onRate, ctx) : []
  const data = ids.map((id) => ({ id }))
  return mode === 'permissive' ? { data, errors } : { data }
}

/** POST /emails/lint: the form, content and recipient rules of a message; no network, nothing spent, and nothing read but its template. */
export async function lintEmail(deps: Deps, actor: Actor, input: SendEmail) {
  const { draft, findings } = await readForm(deps, actor, input, deps.clock.now())
  findings.push(...contentFindings(deps.config, contentOf(draft)))
  findings.push(...recipientFindings(deps, draft))
  for (const a of draft.attachments) {
    if (a.path) findings.push({ code: 'invalid_attachment', severity: 'warning', field: `${a.field}.path`, message: `${a.path} is fetched when the email is sent; lint does not fetch it.`, fix: 'Use POST /emails/preflight to fetch and check it now.' })
  }
  return {
    object: 'lint' as const,
    ok: !findings.some((f) => f.severity === 'error'),
    findings,
    sizes: {
      html_bytes: Buffer.byteLength(draft.html ?? ''),
      text_bytes: Buffer.byteLength(draft.text ?? ''),
      attachments_bytes: draft.attachments.reduce((n, a) => n + (a.content?.length ?? 0), 0),
    },
    links: linksOf(draft.html, draft.text),
  }
}

/** The trust system's refusal of the send as a whole (daily caps, review, young domains), as a finding; it reads and writes nothing else. */
async function gateFindings(deps: Deps, actor: Actor, ledger: Ledger, item: { draft: Draft; domain: DomainRow | null }, now: number): Promise<Finding[]> {
  try {
    await sendGate(deps, actor, ledger, [item], now)
    return []
  } catch (e) {
    if (!(e instanceof AppError)) throw e
    return [errorFinding(e.code, e.message)]
  }
}

/**
 * POST /emails/preflight: everything a send of this body by this key would check
 * now (form, attachments, content, domain scope, sending domain, blocklist,
 * suppression, key budget, quotas, the trust standing's caps, rate window),
 * without writing or spending.
 */
export async function preflightEmail(deps: Deps, actor: Actor, input: SendEmail) {
  const now = deps.clock.now()
  const { draft, findings, account } = await examine(deps, actor, input, now, true)
  const ledger = await readLedger(deps.db.q, deps, actor, draft.recipients.length, now, draft.simulator ? 0 : draft.recipients.length)
  findings.push(...ledgerFindings(ledger))
  findings.push(...(await gateFindings(deps, actor, ledger, { draft, domain: account.domain }, now)))
  const rate = peekRate(deps, ledger, now)
  // The send is a request of its own: it spends one for itself and one for each further recipient.
  if (rate && rate.remaining < Math.max(1, ledger.n)) {
    findings.push(errorFinding(rateCode(ledger), `A send to ${ledger.n} recipients needs ${Math.max(1, ledger.n)} of the key's window; ${rate.remaining} are left now (the window refills over 60 seconds).`))
  }
  const d = account.domain
  const fromDomain = draft.from?.domain
  return {
    object: 'preflight' as const,
    ok: !findings.some((f) => f.severity === 'error'),
    findings,
    recipients: draft.recipients.length,
    simulator: draft.simulator,
    scheduled_at: draft.scheduledAt === null ? null : iso(draft.scheduledAt),
    domain: fromDomain ? { id: d?.id ?? null, name: fromDomain, status: d?.status ?? null, sending_enabled: d?.sendingEnabled ?? false } : null,
    budget: ledger.budget ? { limit: ledger.budget.limit, used: ledger.budget.used, remaining: ledger.budget.remaining, period: ledger.budget.period, resets_at: ledger.budget.resets_at } : null,
    quota: {
      daily: deps.config.dailyQuota === undefined ? null : { limit: ledger.daily.limit, used: ledger.daily.used, remaining: ledger.daily.remaining },
      monthly: deps.config.monthlyQuota === undefined ? null : { limit: ledger.monthly.limit, used: ledger.monthly.used, remaining: ledger.monthly.remaining },
    },
    rate: { limit: rate?.limit ?? deps.config.rateLimitPerMinute, remaining: rate?.remaining ?? 0 },
  }
}
