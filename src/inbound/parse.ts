import { simpleParser, type AddressObject } from 'mailparser'

export interface ParsedAttachment {
  filename: string
  contentType: string
  contentId: string | null
  disposition: 'attachment' | 'inline'
  size: number
  content: Buffer
}

/** A received message, read once: what the records and the API show. */
export interface ParsedInbound {
  from: string
  fromEmail: string
  to: string[]
  cc: string[]
  replyTo: string[]
  subject: string
  html: string | null
  text: string | null
  /** Every header field by its name as written; a repeated field's values joined by newlines. */
  headers: Record<string, string>
  /** Without angle brackets; null when the message has none. */
  messageId: string | null
  inReplyTo: string | null
  references: string[]
  attachments: ParsedAttachment[]
}

/** `<a@b>` → `a@b`. */
export const bareId = (id: string) => id.trim().replace(/^<|>$/g, '').trim()

/** Every `<…>` Message-ID in a header value (References, In-Reply-To), without brackets. */
export function messageIds(value: string | string[] | null | undefined): string[] {
  const list = Array.isArray(value) ? value.join(' ') : (value ?? '')
  const found = [...list.matchAll(/<([^<>\s]+)>/g)].map((m) => m[1])
  if (found.length) return found
  return list.split(/\s+/).map(bareId).filter((x) => x.includes('@'))
}

function addresses(obj: AddressObject | AddressObject[] | undefined): string[] {
  const list = Array.isArray(obj) ? obj : obj ? [obj] : []
  const out: string[] = []
  const walk = (values: AddressObject['value']) => {
    for (const v of values) {
      if (v.group) walk(v.group)
      else if (v.address) out.push(v.name ? `${v.name} <${v.address}>` : v.address)
    }
  }
  for (const o of list) walk(o.value)
  return out
}

function headerMap(lines: readonly { key: string; line: string }[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const { line } of lines) {
    const i = line.indexOf(':')
    if (i <= 0) continue
    const name = line.slice(0, i).trim()
    const value = line.slice(i + 1).replace(/\r?\n[ \t]+/g, ' ').trim()
    out[name] = name in out ? `${out[name]}\n${value}` : value
  }
  return out
}

export async function parseMessage(raw: Buffer): Promise<ParsedInbound> {
  const m = await simpleParser(raw, { skipTextToHtml: true, skipImageLinks: true, maxHtmlLengthToParse: 5 * 1024 * 1024 })
  const from = addresses(m.from)[0] ?? ''
  const fromEmail = (m.from?.value.find((v) => v.address)?.address ?? '').toLowerCase()
  const ext = (type: string) => type.split('/')[1]?.replace(/[^a-z0-9]/gi, '').slice(0, 8) || 'bin'
  return {
    from,
    fromEmail,
    to: addresses(m.to),
    cc: addresses(m.cc),
    replyTo: addresses(m.replyTo),
    subject: m.subject ?? '',
    html: typeof m.html === 'string' ? m.html : null,
    text: m.text ?? null,
    headers: headerMap(m.headerLines),
    messageId: m.messageId ? bareId(m.messageId) : null,
    inReplyTo: m.inReplyTo ? (messageIds(m.inReplyTo)[0] ?? null) : null,
    references: messageIds(m.references),
    attachments: m.attachments.map((a, i) => ({
      filename: a.filename || `attachment-${i + 1}.${ext(a.contentType)}`,
      contentType: a.contentType || 'application/octet-stream',
      contentId: a.contentId ? bareId(a.contentId) : null,
      disposition: a.contentDisposition === 'inline' || (a.related && a.contentId) ? 'inline' : 'attachment',
      size: a.content.length,
      content: a.content,
    })),
  }
}
