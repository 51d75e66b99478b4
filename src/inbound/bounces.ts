// Bounces (RFC 3464 delivery status notifications) and complaints (RFC 5965 ARF
// feedback reports) that reach a return-path host: read, matched to the delivery
// they are about, and turned into a `bounced` or `complained` event.
import { and, eq, inArray } from 'drizzle-orm'
import type { Executor, Tx } from '../db'
import { deliveries, emailEvents, emails, suppressions } from '../db/tables'
import { classifyBounce } from '../delivery/retry'
import { recordEvent } from '../emails/events'
import type { Ids } from '../lib/ids'
import { auditSystemSuppression } from '../suppressions/service'
import { bareId } from './parse'

export type Fields = Map<string, string>

export interface DsnRecipient {
  finalRecipient: string | null
  originalRecipient: string | null
  action: string
  /** Enhanced status, e.g. `5.1.1`. */
  status: string | null
  diagnosticCode: string | null
  remoteMta: string | null
}

export interface Report {
  kind: 'dsn' | 'arf'
  /** DSN per-message fields (Reporting-MTA, Original-Envelope-Id, Arrival-Date) or the ARF report's fields. */
  fields: Record<string, string>
  recipients: DsnRecipient[]
  /** ARF: `abuse`, `fraud`, `virus`, `other`, `not-spam`, … */
  feedbackType: string | null
  /** ARF: Original-Rcpt-To (often redacted by the provider). */
  originalRcptTo: string | null
  /** The Message-ID of the original message, from its returned copy or headers. */
  originalMessageId: string | null
}

interface Part {
  headers: Fields
  body: Buffer
}

/** Header block and body of one entity; field names lower-case, folded lines joined. */
function splitEntity(buf: Buffer): Part {
  const text = buf.toString('latin1')
  const lead = /^\r?\n/.exec(text)
  if (lead) return { headers: new Map(), body: buf.subarray(lead[0].length) }
  const m = /\r?\n\r?\n/.exec(text)
  const head = m ? text.slice(0, m.index) : text
  const bodyStart = m ? m.index + m[0].length : text.length
  return { headers: parseFields(head), body: buf.subarray(bodyStart) }
}

/** `Name: value` lines (RFC 5322 / RFC 3464 §2.1), unfolded; names lower-case; the first of a repeated field wins. */
export function parseFields(block: string): Fields {
  const out: Fields = new Map()
  for (const line of block.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const i = line.indexOf(':')
    if (i <= 0) continue
    const name = line.slice(0, i).trim().toLowerCase()
    if (!out.has(name)) out.set(name, line.slice(i + 1).trim())
  }
  return out
}

function param(value: string | undefined, name: string): string | null {
  if (!value) return null
  const m = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]+))`, 'i').exec(value)
  return m ? (m[1] ?? m[2]) : null
}

const mediaType = (h: Fields) => (h.get('content-type') ?? 'text/plain').split(';')[0].trim().toLowerCase()

function decode(p: Part): Buffer {
  const cte = (p.headers.get('content-transfer-encoding') ?? '').toLowerCase()
  if (cte === 'base64') return Buffer.from(p.body.toString('latin1').replace(/\s+/g, ''), 'base64')
  if (cte === 'quoted-printable') {
    const s = p.body.toString('latin1').replace(/=\r?\n/g, '')
    return Buffer.from(s.replace(/=([0-9A-F]{2})/gi, (_, h) => String.fromCharCode(parseInt(h, 16))), 'latin1')
  }
  return p.body
}

/** The leaf parts of a MIME tree, depth first. */
function leaves(p: Part, depth = 0): Part[] {
  const type = mediaType(p.headers)
  if (!type.startsWith('multipart/') || depth > 10) return [p]
  const boundary = param(p.headers.get('content-type'), 'boundary')
  if (!boundary) return [p]
  const delim = `--${boundary}`
  const out: Part[] = []
  let cur: string[] | null = null
  for (const line of p.body.toString('latin1').split(/\r?\n/)) {
    const t = line.trimEnd()
    if (t === delim || t === `${delim}--`) {
      if (cur) out.push(...leaves(splitEntity(Buffer.from(cur.join('\r\n'), 'latin1')), depth + 1))
      if (t !== delim) return out
      cur = []
    } else if (cur) cur.push(line)
  }
  if (cur) out.push(...leaves(splitEntity(Buffer.from(cur.join('\r\n'), 'latin1')), depth + 1))
  return out
}

/** Field groups separated by blank lines (the body of message/delivery-status). */
function groups(text: string): Fields[] {
  return text
    .split(/\r?\n[ \t]*\r?\n/)
    .map((g) => g.trim())
    .filter(Boolean)
    .map(parseFields)
}

/** `rfc822; a@b` → `a@b`. */
const typedAddress = (v: string | undefined) => (v ? v.replace(/^[^;]*;\s*/, '').replace(/^<|>$/g, '').trim().toLowerCase() || null : null)

/** Reads a message as a DSN or an ARF report; null when it is neither (an auto-reply, a plain-text bounce). */
export function parseReport(raw: Buffer): Report | null {
  const top = splitEntity(raw)
  const ct = top.headers.get('content-type') ?? ''
  if (mediaType(top.headers) !== 'multipart/report') return null
  const reportType = (param(ct, 'report-type') ?? '').toLowerCase()
  const parts = leaves(top)
  let originalMessageId: string | null = null
  for (const p of parts) {
    const t = mediaType(p.headers)
    if (t === 'message/rfc822' || t === 'text/rfc822-headers' || t === 'message/rfc822-headers' || t === 'message/global' || t === 'message/global-headers') {
      const inner = splitEntity(decode(p))
      const id = inner.headers.get('message-id')
      if (id) {
        originalMessageId = bareId(id)
        break
      }
    }
  }
  if (reportType === 'delivery-status') {
    const status = parts.find((p) => ['message/delivery-status', 'message/global-delivery-status'].includes(mediaType(p.headers)))
    if (!status) return null
    const [perMessage, ...perRecipient] = groups(decode(status).toString('utf8'))
    const recipients = perRecipient
      .filter((f) => f.has('action') || f.has('final-recipient'))
      .map((f) => ({
        finalRecipient: typedAddress(f.get('final-recipient')),
        originalRecipient: typedAddress(f.get('original-recipient')),
        action: (f.get('action') ?? '').toLowerCase(),
        status: f.get('status')?.match(/[245]\.\d{1,3}\.\d{1,3}/)?.[0] ?? null,
        diagnosticCode: f.get('diagnostic-code') ?? null,
        remoteMta: f.get('remote-mta') ?? null,
      }))
    return { kind: 'dsn', fields: Object.fromEntries(perMessage ?? []), recipients, feedbackType: null, originalRcptTo: null, originalMessageId }
  }
  if (reportType === 'feedback-report') {
    const fb = parts.find((p) => mediaType(p.headers) === 'message/feedback-report')
    if (!fb) return null
    const f = parseFields(decode(fb).toString('utf8'))
    return {
      kind: 'arf',
      fields: Object.fromEntries(f),
      recipients: [],
      feedbackType: (f.get('feedback-type') ?? 'other').toLowerCase(),
      originalRcptTo: typedAddress(f.get('original-rcpt-to')),
      originalMessageId,
    }
  }
  return null
}

export interface BounceClass {
  type: 'Permanent' | 'Transient' | 'Undetermined'
  subType: string
  suppress: boolean
}

/** 5.x.x is Permanent, 4.x.x Transient (RFC 3463 classes), with SES/Resend subtypes; only mailbox and domain failures suppress. */
export function classifyStatus(status: string | null, diagnostic: string | null): BounceClass {
  const cls = status?.[0]
  if (cls !== '4' && cls !== '5') return { type: 'Undetermined', subType: 'Undetermined', suppress: false }
  const as5 = `5${status!.slice(1)}`
  const c = classifyBounce(null, as5, diagnostic ?? '')
  const subType = c.subType === 'Undetermined' ? 'General' : c.subType
  if (cls === '4') return { type: 'Transient', subType, suppress: false }
  return { type: 'Permanent', subType, suppress: c.suppress }
}

type Delivery = typeof deliveries.$inferSelect

/** The VERP envelope recipient `bounces+<delivery id>@…` names the delivery. */
export function verpDeliveryId(rcpt: string): string | null {
  const m = /^bounces\+([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})@/i.exec(rcpt)
  return m ? m[1].toLowerCase() : null
}

/**
 * The delivery a report is about: the VERP address it was sent to first, else the
 * original Message-ID in the report (ours is `<email id>@<host>`) with the reported
 * recipient, or the email's only delivery.
 */
export async function matchDelivery(q: Executor, rcptTo: string[], report: Report): Promise<Delivery | null> {
  for (const r of rcptTo) {
    const id = verpDeliveryId(r)
    if (!id) continue
    const [row] = await q.select().from(deliveries).where(eq(deliveries.id, id))
    if (row) return row
  }
  if (!report.originalMessageId) return null
  const [email] = await q.select({ id: emails.id }).from(emails).where(eq(emails.messageId, report.originalMessageId))
  if (!email) return null
  const rows = await q.select().from(deliveries).where(eq(deliveries.emailId, email.id))
  const wanted = [...report.recipients.flatMap((r) => [r.finalRecipient, r.originalRecipient]), report.originalRcptTo].filter((x): x is string => !!x)
  return rows.find((d) => wanted.includes(d.recipient)) ?? (rows.length === 1 ? rows[0] : null)
}

export interface Applied {
  outcome: 'bounced' | 'delayed' | 'complained' | 'duplicate' | 'ignored'
  deliveryId: string
  emailId: string
  bounce?: BounceClass
}

async function suppress(tx: Tx, ids: Ids, d: Delivery, reason: 'bounce' | 'complaint', detail: string, at: string) {
  const [existing] = await tx.select().from(suppressions).where(and(eq(suppressions.accountId, d.accountId), eq(suppressions.email, d.recipient)))
  if (!existing) {
    const row = { id: ids.uuid(), accountId: d.accountId, email: d.recipient, reason, sourceEmailId: d.emailId, detail: detail.slice(0, 1000), createdAt: at }
    await tx.insert(suppressions).values(row)
    await auditSystemSuppression(tx, ids, at, row)
  } else if (reason === 'complaint' && (existing.reason === 'bounce' || existing.reason === 'manual')) {
    // A complaint is the recipient's own word: it outranks a bounce or a manual entry.
    const patch = { reason, sourceEmailId: d.emailId, detail: detail.slice(0, 1000) }
    await tx.update(suppressions).set(patch).where(eq(suppressions.id, existing.id))
    await auditSystemSuppression(tx, ids, at, { ...existing, ...patch }, existing)
  }
}

/** Records what a report says about a delivery, in the caller's transaction. A report seen before changes nothing. */
export async function applyReport(tx: Tx, ids: Ids, d: Delivery, report: Report, at: string): Promise<Applied> {
  const base = { deliveryId: d.id, emailId: d.emailId }
  if (report.kind === 'arf') {
    if (report.feedbackType === 'not-spam') return { ...base, outcome: 'ignored' }
    const seen = await tx
      .select({ id: emailEvents.id })
      .from(emailEvents)
      .where(and(eq(emailEvents.emailId, d.emailId), eq(emailEvents.type, 'complained'), eq(emailEvents.recipient, d.recipient)))
    if (seen.length) return { ...base, outcome: 'duplicate' }
    const f = report.fields
    await recordEvent(tx, ids, {
      accountId: d.accountId,
      emailId: d.emailId,
      type: 'complained',
      recipient: d.recipient,
      at,
      data: {
        complaint: {
          feedbackType: report.feedbackType,
          userAgent: f['user-agent'] ?? null,
          arrivalDate: f['arrival-date'] ?? f['received-date'] ?? null,
          sourceIp: f['source-ip'] ?? null,
          reportedDomain: f['reported-domain'] ?? null,
        },
      },
    })
    await suppress(tx, ids, d, 'complaint', `${report.feedbackType} report${f['user-agent'] ? ` from ${f['user-agent']}` : ''}`, at)
    return { ...base, outcome: 'complained' }
  }
  // A DSN: the recipient block about this delivery, else the first one that failed or was delayed.
  const blocks = report.recipients.filter((r) => r.action === 'failed' || r.action === 'delayed')
  const block = blocks.find((r) => r.finalRecipient === d.recipient || r.originalRecipient === d.recipient) ?? blocks[0]
  if (!block) return { ...base, outcome: 'ignored' }
  const diagnosticCode = block.diagnosticCode ? [block.diagnosticCode] : []
  if (block.action === 'delayed') {
    if (d.state === 'bounced') return { ...base, outcome: 'duplicate' }
    await recordEvent(tx, ids, { accountId: d.accountId, emailId: d.emailId, type: 'delivery_delayed', recipient: d.recipient, at, data: { delay: { status: block.status, diagnosticCode, remoteMta: block.remoteMta, source: 'dsn' } } })
    return { ...base, outcome: 'delayed' }
  }
  if (d.state === 'bounced') return { ...base, outcome: 'duplicate' }
  const b = classifyStatus(block.status, block.diagnosticCode)
  const message =
    b.type === 'Permanent'
      ? `The recipient's mail server reported the message undeliverable (${block.status}); the address is ${b.suppress ? 'suppressed' : 'kept'}.`
      : b.type === 'Transient'
        ? `The recipient's mail server gave up on the message for now (${block.status}); the address is not suppressed.`
        : 'The recipient’s mail server returned the message without a status that says why.'
  await recordEvent(tx, ids, {
    accountId: d.accountId,
    emailId: d.emailId,
    type: 'bounced',
    recipient: d.recipient,
    at,
    data: { bounce: { type: b.type, subType: b.subType, message, diagnosticCode }, status: block.status, remote_mta: block.remoteMta, source: 'dsn' },
  })
  // A bounce that arrives after the message was handed over (hours later) turns the delivery round.
  await tx
    .update(deliveries)
    .set({ state: 'bounced', lastResponse: (block.diagnosticCode ?? block.status ?? 'bounced').slice(0, 2000), updatedAt: at })
    .where(and(eq(deliveries.id, d.id), inArray(deliveries.state, ['delivered', 'sent'])))
  if (b.suppress) await suppress(tx, ids, d, 'bounce', block.diagnosticCode ?? `status ${block.status}`, at)
  return { ...base, outcome: 'bounced', bounce: b }
}
