import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import type { Tag } from '../db/tables'
import { MB } from '../http/body'
import { asList, parseAddress, type Address } from './address'
import { errorFinding, type Finding } from './content'
import { parseSchedule } from './schedule'
import type { SendAttachment, SendEmail } from './schema'
import { isSimulatorAddress } from './simulator'

/** Attachments may add up to 40 MB after decoding (Resend's limit; 50 MB of JSON carries it as base64). */
export const MAX_ATTACHMENT_BYTES = 40 * MB
/** How long a `path` attachment may take to fetch. */
export const ATTACHMENT_FETCH_MS = 10_000

/**
 * Headers the service writes itself: setting them is `header_replaced`. Threading
 * headers (`In-Reply-To`, `References`) and any `X-` header are the caller's.
 */
export const RESERVED_HEADERS = [
  'message-id', 'date', 'from', 'sender', 'to', 'cc', 'bcc', 'subject', 'reply-to', 'return-path', 'dkim-signature',
  'mime-version', 'content-type', 'content-transfer-encoding', 'list-unsubscribe', 'list-unsubscribe-post', 'received',
  'authentication-results', 'arc-seal', 'arc-message-signature', 'arc-authentication-results',
]

export interface Recipient {
  address: string
  domain: string
  kind: 'to' | 'cc' | 'bcc'
}

export interface AttachmentDraft {
  field: string
  filename: string
  contentType: string | null
  contentId: string | null
  content?: Buffer
  path?: string
}

/** A send request read and normalised: what the checks and the writer work from. */
export interface Draft {
  from: Address | null
  to: Address[]
  cc: Address[]
  bcc: Address[]
  replyTo: Address[]
  subject: string | undefined
  html: string | null
  text: string | null
  headers: Record<string, string>
  /** `In-Reply-To` and `References` from `headers`: the message is composed with them as threading headers. */
  inReplyTo: string | null
  references: string | null
  tags: Tag[]
  topicId: string | null
  /** The template the content was rendered from. */
  templateId: string | null
  scheduledAt: number | null
  clickTracking: boolean | undefined
  attachments: AttachmentDraft[]
  /** Distinct recipients, first kind wins (to, then cc, then bcc): one delivery and one email spent each. */
  recipients: Recipient[]
  /** Every recipient is a simulator address (and there is at least one). */
  simulator: boolean
}

const TAG_RE = /^[A-Za-z0-9_-]{1,256}$/
const HEADER_NAME = /^[!-9;-~]{1,200}$/
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/
const CTL = /[\r\n\0]/

function readAddresses(findings: Finding[], field: string, value: string | string[] | null | undefined): Address[] {
  const out: Address[] = []
  asList(value).forEach((given, i) => {
    const at = Array.isArray(value) ? `${field}[${i}]` : field
    const a = parseAddress(given)
    if (!a) findings.push(errorFinding('invalid_parameter', `\`${at}\` "${given.slice(0, 200)}" is not an e-mail address: use \`a@b.com\` or \`Name <a@b.com>\`.`, at))
    else out.push(a)
  })
  return out
}

function readAttachment(findings: Finding[], a: SendAttachment, i: number): AttachmentDraft | null {
  const field = `attachments[${i}]`
  const hasContent = typeof a.content === 'string' && a.content !== ''
  const hasPath = typeof a.path === 'string' && a.path !== ''
  if (!hasContent && !hasPath) {
    findings.push(errorFinding('invalid_attachment', `\`${field}\` needs either base64 \`content\` or a \`path\`.`, field))
    return null
  }
  if (hasContent && hasPath) {
    findings.push(errorFinding('invalid_attachment', `\`${field}\` has both \`content\` and \`path\`; give one of them.`, field))
    return null
  }
  for (const k of ['filename', 'content_type', 'content_id'] as const) {
    if (a[k] && CTL.test(a[k]!)) {
      findings.push(errorFinding('invalid_attachment', `\`${field}.${k}\` contains a line break.`, `${field}.${k}`))
      return null
    }
  }
  if (a.content_type && !/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(a.content_type)) {
    findings.push(errorFinding('invalid_attachment', `\`${field}.content_type\` "${a.content_type}" is not a media type like application/pdf.`, `${field}.content_type`))
    return null
  }
  let content: Buffer | undefined
  let path: string | undefined
  let fallbackName = `attachment-${i + 1}`
  if (hasContent) {
    const compact = a.content!.replace(/\s+/g, '')
    if (!BASE64.test(compact)) {
      findings.push(errorFinding('invalid_attachment', `\`${field}.content\` is not base64.`, `${field}.content`))
      return null
    }
    content = Buffer.from(compact, 'base64')
  } else {
    let url: URL
    try {
      url = new URL(a.path!)
    } catch {
      findings.push(errorFinding('invalid_attachment', `\`${field}.path\` "${a.path}" is not a URL; give an http(s) URL or base64 \`content\`.`, `${field}.path`))
      return null
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      findings.push(errorFinding('invalid_attachment', `\`${field}.path\` must be an http or https URL, not ${url.protocol}.`, `${field}.path`))
      return null
    }
    path = url.toString()
    const last = decodeURIComponent(url.pathname.split('/').pop() ?? '')
    if (last && !CTL.test(last)) fallbackName = last
  }
  return {
    field,
    filename: a.filename || fallbackName,
    contentType: a.content_type || null,
    contentId: a.content_id ? a.content_id.replace(/^<|>$/g, '') : null,
    content,
    path,
  }
}

/**
 * Reads a send request (its template already filled in, see template.ts) into a
 * Draft and every finding on its form, in the order a send reports them: required
 * fields, from, recipients, subject, headers, tracking, tags, schedule,
 * attachments. Needs no storage and no network.
 */
export function readDraft(input: SendEmail, now: number, templateId: string | null = null): { draft: Draft; findings: Finding[] } {
  const findings: Finding[] = []
  const missing = (['from', 'to', 'subject'] as const).filter((k) => {
    const v = input[k]
    return v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (k !== 'subject' && v === '')
  })
  for (const m of missing) findings.push(errorFinding('missing_required_field', `Missing \`${m}\` field.`, m))
  let from: Address | null = null
  if (input.from) {
    from = parseAddress(input.from)
    if (!from) {
      findings.push(errorFinding('invalid_from_address', `Invalid \`from\` field "${input.from.slice(0, 200)}": use \`email@example.com\` or \`Name <email@example.com>\`.`, 'from'))
    }
  }
  const to = readAddresses(findings, 'to', input.to)
  const cc = readAddresses(findings, 'cc', input.cc)
  const bcc = readAddresses(findings, 'bcc', input.bcc)
  const replyTo = readAddresses(findings, 'reply_to', input.reply_to)
  if (input.subject !== undefined && CTL.test(input.subject)) {
    findings.push(errorFinding('invalid_parameter', '`subject` contains a line break; a subject is one line.', 'subject'))
  }

  const headers: Record<string, string> = {}
  const threading: Record<string, string> = {}
  for (const [name, value] of Object.entries(input.headers ?? {})) {
    const field = `headers.${name}`
    if (!HEADER_NAME.test(name)) {
      findings.push(errorFinding('invalid_parameter', `Header name "${name.slice(0, 100).replace(/[\r\n]/g, '\\n')}" is not a header name (printable ASCII, no spaces or colons).`, 'headers'))
    } else if (CTL.test(value)) {
      findings.push(errorFinding('invalid_parameter', `Header \`${name}\` contains a line break, which would inject headers.`, field))
    } else if (value.length > 2000) {
      findings.push(errorFinding('invalid_parameter', `Header \`${name}\` is longer than 2000 characters.`, field))
    } else if (RESERVED_HEADERS.includes(name.toLowerCase())) {
      findings.push(errorFinding('header_replaced', `Header \`${name}\` is set by the service itself; leave it out${name.toLowerCase() === 'reply-to' ? ' and use `reply_to`' : ''}.`, field))
    } else if (/^(in-reply-to|references)$/i.test(name)) {
      threading[name.toLowerCase()] = value.trim()
    } else {
      headers[name] = value
    }
  }

  if (input.open_tracking === true) {
    findings.push(errorFinding('open_tracking_on_transactional', 'Open tracking is refused on transactional mail, and every API send is transactional; leave `open_tracking` out.', 'open_tracking'))
  }

  const tags: Tag[] = []
  ;(input.tags ?? []).forEach((tag, i) => {
    for (const k of ['name', 'value'] as const) {
      if (!TAG_RE.test(tag[k])) {
        findings.push(errorFinding('invalid_parameter', `\`tags[${i}].${k}\` "${tag[k].slice(0, 100)}" may hold only ASCII letters, digits, \`_\` and \`-\`, 1 to 256 of them.`, `tags[${i}].${k}`))
        return
      }
    }
    tags.push({ name: tag.name, value: tag.value })
  })

  let scheduledAt: number | null = null
  if (input.scheduled_at !== undefined && input.scheduled_at !== null) {
    const s = parseSchedule(input.scheduled_at, now)
    if (s.ok) scheduledAt = s.at
    else findings.push(errorFinding('invalid_parameter', s.message, 'scheduled_at'))
  }

  const attachments: AttachmentDraft[] = []
  ;(input.attachments ?? []).forEach((a, i) => {
    const d = readAttachment(findings, a, i)
    if (d) attachments.push(d)
  })
  const inlineBytes = attachments.reduce((n, a) => n + (a.content?.length ?? 0), 0)
  if (inlineBytes > MAX_ATTACHMENT_BYTES) {
    findings.push(errorFinding('payload_too_large', `The attachments add up to ${(inlineBytes / MB).toFixed(1)} MB after decoding; the limit is 40 MB per email.`, 'attachments'))
  }

  const seen = new Set<string>()
  const recipients: Recipient[] = []
  for (const [kind, list] of [['to', to], ['cc', cc], ['bcc', bcc]] as const) {
    for (const a of list) {
      if (seen.has(a.address)) continue
      seen.add(a.address)
      recipients.push({ address: a.address, domain: a.domain, kind })
    }
  }
  const draft: Draft = {
    from,
    to,
    cc,
    bcc,
    replyTo,
    subject: input.subject,
    html: input.html ?? null,
    text: input.text ?? null,
    headers,
    inReplyTo: threading['in-reply-to'] || null,
    references: threading['references'] || null,
    tags,
    topicId: input.topic_id ?? null,
    templateId,
    scheduledAt,
    clickTracking: input.click_tracking,
    attachments,
    recipients,
    simulator: recipients.length > 0 && recipients.every((r) => isSimulatorAddress(r.address)),
  }
  return { draft, findings }
}

const linkLocal = (ip: string) => /^169\.254\./.test(ip) || /^::ffff:169\.254\./i.test(ip) || /^fe[89ab][0-9a-f]:/i.test(ip)

/** Refuses hosts on link-local addresses: that is where cloud metadata services answer (169.254.169.254). */
async function guardHost(url: URL) {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((x) => x.address)
  const bad = addresses.find(linkLocal)
  if (bad) throw new Error(`${host} is the link-local address ${bad}, which attachments are never fetched from`)
}

/** fetch with the host guard on the URL and on every redirect (at most 5). */
async function fetchGuarded(url: string, signal: AbortSignal): Promise<Response> {
  let target = new URL(url)
  for (let hop = 0; hop <= 5; hop++) {
    await guardHost(target)
    const res = await fetch(target, { signal, redirect: 'manual' })
    const next = res.headers.get('location')
    if (res.status < 300 || res.status >= 400 || !next) return res
    await res.body?.cancel().catch(() => undefined)
    target = new URL(next, target)
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error(`it redirects to ${target.protocol}`)
  }
  throw new Error('it redirects more than 5 times')
}

/**
 * Fetches the `path` attachments (http(s), 10 s each, within what is left of the
 * 40 MB, never from a link-local address), filling in their content; a failure is
 * a finding on that attachment.
 */
export async function loadAttachments(draft: Draft): Promise<Finding[]> {
  const findings: Finding[] = []
  let used = draft.attachments.reduce((n, a) => n + (a.content?.length ?? 0), 0)
  for (const a of draft.attachments) {
    if (!a.path || a.content) continue
    const left = MAX_ATTACHMENT_BYTES - used
    try {
      const res = await fetchGuarded(a.path, AbortSignal.timeout(ATTACHMENT_FETCH_MS))
      if (!res.ok) {
        await res.body?.cancel().catch(() => undefined)
        findings.push(errorFinding('invalid_attachment', `Fetching \`${a.field}.path\` ${a.path} answered HTTP ${res.status}.`, `${a.field}.path`))
        continue
      }
      const declared = Number(res.headers.get('content-length') ?? '0')
      if (declared > left) {
        await res.body?.cancel().catch(() => undefined)
        findings.push(errorFinding('payload_too_large', `\`${a.field}.path\` is ${(declared / MB).toFixed(1)} MB, more than the ${(left / MB).toFixed(1)} MB left of the 40 MB attachment limit.`, `${a.field}.path`))
        return findings
      }
      const chunks: Uint8Array[] = []
      let size = 0
      const reader = res.body?.getReader()
      while (reader) {
        const { done, value } = await reader.read()
        if (done) break
        size += value.length
        if (size > left) {
          await reader.cancel().catch(() => undefined)
          findings.push(errorFinding('payload_too_large', `\`${a.field}.path\` is larger than the ${(left / MB).toFixed(1)} MB left of the 40 MB attachment limit.`, `${a.field}.path`))
          return findings
        }
        chunks.push(value)
      }
      a.content = Buffer.concat(chunks)
      used += size
      const type = res.headers.get('content-type')
      if (!a.contentType && type && !CTL.test(type) && !/^application\/octet-stream/i.test(type)) a.contentType = type
    } catch (e) {
      const why = (e as Error).name === 'TimeoutError' ? `did not answer within ${ATTACHMENT_FETCH_MS / 1000} s` : `could not be fetched (${(e as Error).message})`
      findings.push(errorFinding('invalid_attachment', `\`${a.field}.path\` ${a.path} ${why}.`, `${a.field}.path`))
    }
  }
  return findings
}

/** The media type of an attachment: as given, from the fetch, or from the file name. */
export function mediaType(a: AttachmentDraft) {
  if (a.contentType) return a.contentType
  const guessed = Bun.file(a.filename).type
  return guessed && guessed !== '' ? guessed.replace(/;charset=utf-8$/i, '; charset=utf-8') : 'application/octet-stream'
}
