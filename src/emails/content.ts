import type { Config } from '../config'
import { AppError } from '../errors/app-error'
import { CATALOGUE, type ErrorCode } from '../errors/catalogue'
import { domainMatches } from './address'

/** Codes only lint reports; they never refuse a send. */
export type LintCode = 'text_part_missing' | 'subject_empty'

const LINT_FIXES: Record<LintCode, string> = {
  text_part_missing: 'Add a `text` version: some readers and filters prefer it, and it helps deliverability.',
  subject_empty: 'Give the email a subject; an empty one looks like spam to people and filters.',
}

/** One thing a check found: what a send refuses (`error`) or only reports (`warning`). */
export interface Finding {
  code: ErrorCode | LintCode
  severity: 'error' | 'warning'
  field?: string
  message: string
  fix: string
}

export const errorFinding = (code: ErrorCode, message: string, field?: string): Finding => ({
  code,
  severity: 'error',
  ...(field ? { field } : {}),
  message,
  fix: CATALOGUE[code].fix,
})

export const warning = (code: ErrorCode | LintCode, message: string, field?: string): Finding => ({
  code,
  severity: 'warning',
  ...(field ? { field } : {}),
  message,
  fix: code in LINT_FIXES ? LINT_FIXES[code as LintCode] : CATALOGUE[code as ErrorCode].fix,
})

/**
 * The first refusing finding as the error a send answers with. Missing fields are
 * reported together, as Resend does: "Missing `from` and `to` fields."
 */
export function firstError(findings: Finding[]): AppError | null {
  const f = findings.find((x) => x.severity === 'error')
  if (!f) return null
  if (f.code === 'missing_required_field') {
    const all = findings.filter((x) => x.code === 'missing_required_field' && x.field)
    if (all.length > 1) {
      const names = all.map((x) => `\`${x.field}\``)
      const message = `Missing ${names.slice(0, -1).join(', ')} and ${names[names.length - 1]} fields.`
      return new AppError('missing_required_field', { message, details: all.map((x) => ({ field: x.field!, message: 'required' })) })
    }
  }
  return new AppError(f.code as ErrorCode, { message: f.message, ...(f.field ? { details: [{ field: f.field, message: f.message }] } : {}) })
}

/** Gmail clips HTML over 102 KB; other providers clip near it. */
export const HTML_CLIP_BYTES = 102 * 1024

/**
 * Link domains refused in content (`link_domain_listed`): public URL shorteners
 * (they hide the destination and are a top spam signal) and the Safe Browsing
 * test hosts. `MAILROOM_LINK_BLOCKLIST` adds to it.
 */
export const DEFAULT_LINK_BLOCKLIST = [
  'bit.ly',
  'tinyurl.com',
  'goo.gl',
  'ow.ly',
  'is.gd',
  'buff.ly',
  'cutt.ly',
  'rebrand.ly',
  'shorturl.at',
  'testsafebrowsing.appspot.com',
  'malware.testing.google.test',
]

/**
 * Recipients refused (`recipient_blocklisted`): the reserved `.invalid` and
 * `.example` top-level domains (RFC 2606/6761), which can never take mail.
 * An entry with `@` is one address; any other entry is a domain and its
 * subdomains. `MAILROOM_RECIPIENT_BLOCKLIST` adds to it.
 */
export const DEFAULT_RECIPIENT_BLOCKLIST = ['invalid', 'example']

/** Attachment types every major inbox refuses (executables and scripts). */
const EXECUTABLE = /\.(exe|bat|cmd|com|scr|pif|cpl|msi|msp|jar|js|jse|vbs|vbe|wsf|wsh|hta|ps1|lnk|reg|dll|app|apk)$/i

export function linkBlocklist(config: Config) {
  return [...DEFAULT_LINK_BLOCKLIST, ...(config.linkBlocklist ?? [])]
}

export function recipientListed(config: Config, address: string): string | null {
  const domain = address.slice(address.lastIndexOf('@') + 1)
  for (const entry of [...DEFAULT_RECIPIENT_BLOCKLIST, ...(config.recipientBlocklist ?? [])]) {
    if (entry.includes('@') ? address === entry : domainMatches(domain, entry.replace(/^@/, ''))) return entry
  }
  return null
}

/** Every http(s) link in the HTML (href, src) and the text. */
export function linksOf(html: string | null, text: string | null): string[] {
  const found = new Set<string>()
  const re = /\bhttps?:\/\/[^\s"'<>()]+/gi
  for (const body of [html, text]) if (body) for (const m of body.matchAll(re)) found.add(m[0].replace(/[.,;:!?]+$/, ''))
  return [...found]
}

function hostOf(link: string) {
  try {
    return new URL(link).hostname.toLowerCase().replace(/\.$/, '')
  } catch {
    return null
  }
}

export interface ContentInput {
  subject: string | undefined
  html: string | null
  text: string | null
  attachments: { filename: string; field: string }[]
}

/**
 * The content rules, in order:
 * 1. a message needs a non-empty `html` or `text` (`content_refused`);
 * 2. no `<script>`, `<iframe>`, `<object>` or `<embed>` in the HTML, and no
 *    `javascript:` links (`content_refused`): inboxes strip them and filters
 *    treat them as an attack;
 * 3. no executable or script attachments (`content_refused`);
 * 4. no link to a listed domain (`link_domain_listed`);
 * then warnings that never refuse: HTML over 102 KB (`html_clipped_by_inbox_provider`),
 * no text version, an empty subject.
 */
export function contentFindings(config: Config, c: ContentInput): Finding[] {
  const out: Finding[] = []
  const html = c.html ?? ''
  const text = c.text ?? ''
  if (!html.trim() && !text.trim()) {
    out.push(errorFinding('content_refused', 'The email has no content: give `html` or `text` (or both).', 'html'))
  }
  const tag = html.match(/<\s*(script|iframe|object|embed)\b/i)
  if (tag) out.push(errorFinding('content_refused', `The HTML contains a <${tag[1].toLowerCase()}> element, which the content rules refuse; inboxes strip it and filters treat it as an attack.`, 'html'))
  if (/(href|src)\s*=\s*["']?\s*javascript:/i.test(html)) {
    out.push(errorFinding('content_refused', 'The HTML contains a `javascript:` link, which the content rules refuse.', 'html'))
  }
  for (const a of c.attachments) {
    if (EXECUTABLE.test(a.filename)) out.push(errorFinding('content_refused', `The attachment "${a.filename}" is an executable or script, which inboxes refuse; send a link or an archive of documents instead.`, a.field))
  }
  const listed = linkBlocklist(config)
  for (const link of linksOf(c.html, c.text)) {
    const host = hostOf(link)
    const entry = host ? listed.find((e) => domainMatches(host, e)) : undefined
    if (entry) out.push(errorFinding('link_domain_listed', `The link ${link} points at ${host}, which is on the link blocklist (${entry}).`, c.html?.includes(link) ? 'html' : 'text'))
  }
  const htmlBytes = Buffer.byteLength(html)
  if (htmlBytes > HTML_CLIP_BYTES) {
    out.push(warning('html_clipped_by_inbox_provider', `The HTML is ${Math.ceil(htmlBytes / 1024)} KB; Gmail shows only the first 102 KB and hides the rest behind a link.`, 'html'))
  }
  if (html.trim() && !text.trim()) out.push(warning('text_part_missing', 'The email has HTML but no text version.', 'text'))
  if (c.subject !== undefined && c.subject.trim() === '') out.push(warning('subject_empty', 'The subject is empty.', 'subject'))
  return out
}
