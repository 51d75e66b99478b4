import MailComposer from 'nodemailer/lib/mail-composer'
import type { Config } from '../config'
import { bareAddress } from '../emails/address'
import { composeOffThread } from './compose-pool'
import { dkimSignHere } from './dkim'
import { buildNow } from './mime-build'
import type { AttachmentRow, DomainRow, EmailRow } from './types'
import { unsubscribeToken, unsubscribeUrl } from './unsubscribe'
import { trackHtml, trackingFor } from '../tracking/links'

export interface ComposeInput {
  email: EmailRow
  attachments: AttachmentRow[]
  domain: DomainRow | null
  config: Pick<Config, 'hostname' | 'baseUrl'>
  /** The recipient this copy is for (its List-Unsubscribe token); defaults to the first To address. */
  recipient?: string
  /**
   * The deployment secret that signs List-Unsubscribe tokens (`deps.secret`). Pass it
   * wherever the message is shown, so what is shown is what was sent.
   */
  secret?: string
}

/** Header fields a caller's `headers` may not set: we write them, and DKIM signs them. */
const RESERVED = new Set([
  'from', 'to', 'cc', 'bcc', 'reply-to', 'subject', 'date', 'message-id', 'in-reply-to', 'references', 'mime-version',
  'content-type', 'content-transfer-encoding', 'dkim-signature', 'return-path', 'sender',
])

/** The bounce host of a domain: `<customReturnPath>.<name>`; ours for simulator sends. */
export function returnPathHost(domain: Pick<DomainRow, 'name' | 'customReturnPath'> | null, config: Pick<Config, 'hostname'>): string {
  return domain ? `${domain.customReturnPath}.${domain.name}` : config.hostname
}

/** The envelope sender (MAIL FROM): a VERP address on the bounce host naming the delivery, so a bounce finds its row. */
export function bounceAddress(deliveryId: string, domain: Pick<DomainRow, 'name' | 'customReturnPath'> | null, config: Pick<Config, 'hostname'>): string {
  return `bounces+${deliveryId}@${returnPathHost(domain, config)}`
}

/**
 * Whether each recipient gets a copy of their own (List-Unsubscribe token, tracked
 * links and pixel name the recipient), so a composed message must not be shared.
 */
export function personalCopy(email: Pick<EmailRow, 'topicId' | 'broadcastId' | 'html' | 'clickTracking' | 'openTracking'>, domain: DomainRow | null): boolean {
  return listMail(email) || trackingFor(email, domain) !== null
}

/**
 * Mail a recipient can unsubscribe from: under a topic (from that topic), or from a
 * broadcast (without a topic: from every broadcast of the account). It carries
 * List-Unsubscribe with the recipient's own one-click address.
 */
const listMail = (email: Pick<EmailRow, 'topicId' | 'broadcastId'>) => !!email.topicId || !!email.broadcastId

/**
 * The exact RFC 5322 message we send (or show): built by nodemailer's MailComposer,
 * DKIM-signed with the domain's key when a domain is given (then composed and signed
 * on a composing thread, see compose-pool.ts). Never a Bcc header.
 */
export function composeMessage(input: ComposeInput): Promise<Buffer> {
  if (!input.domain) return composeHere(input)
  // Only what composition reads is cloned to the thread, not the whole configuration.
  const { hostname, baseUrl } = input.config
  return composeOffThread({ ...input, config: { hostname, baseUrl } })
}

/** composeMessage on this thread. */
export async function composeHere(input: ComposeInput): Promise<Buffer> {
  const { email, attachments, domain, config } = input
  const headers: { key: string; value: string; prepared?: boolean }[] = []
  for (const [key, value] of Object.entries(email.headers ?? {})) {
    if (RESERVED.has(key.toLowerCase())) continue
    if (listMail(email) && /^list-unsubscribe(-post)?$/i.test(key)) continue
    headers.push({ key, value: String(value) })
  }
  const recipient = bareAddress(input.recipient ?? email.to[0] ?? email.cc[0] ?? email.fromEmail)
  if (listMail(email)) {
    const secret = input.secret ?? ''
    const mailto = `mailto:unsubscribe@${returnPathHost(domain, config)}?subject=unsubscribe%3A${unsubscribeToken(secret, email.id, recipient)}`
    headers.push({ key: 'List-Unsubscribe', value: `<${unsubscribeUrl(config.baseUrl, secret, email.id, recipient)}>, <${mailto}>`, prepared: true })
    headers.push({ key: 'List-Unsubscribe-Post', value: 'List-Unsubscribe=One-Click', prepared: true })
  }
  const composer = new MailComposer({
    from: email.from,
    to: email.to.length ? email.to : undefined,
    cc: email.cc.length ? email.cc : undefined,
    replyTo: email.replyTo.length ? email.replyTo : undefined,
    subject: email.subject,
    date: new Date(email.scheduledAt ?? email.createdAt),
    messageId: `<${email.messageId}>`,
    inReplyTo: email.inReplyTo ?? undefined,
    references: email.references ?? undefined,
    headers: headers.map((h) => (h.prepared ? { key: h.key, value: { prepared: true, foldLines: true, value: h.value } } : h)) as never,
    text: email.text ?? undefined,
    html: trackedHtml(email, domain, recipient, input.secret ?? '') ?? undefined,
    attachments: attachments.map((a) => ({
      filename: a.filename,
      content: a.content,
      contentType: a.contentType,
      cid: a.contentId ?? undefined,
      contentDisposition: a.contentId || a.disposition === 'inline' ? 'inline' : 'attachment',
    })),
    disableFileAccess: true,
    disableUrlAccess: true,
    newline: 'win',
  })
  const node = composer.compile()
  const raw = buildNow(node) ?? (await node.build())
  return domain ? dkimSignHere(raw, domain) : raw
}

/** The HTML part with click and open tracking applied when the email asks for it and the domain's tracking host verified. */
function trackedHtml(email: EmailRow, domain: DomainRow | null, recipient: string, secret: string): string | null {
  const tracking = trackingFor(email, domain)
  if (!email.html || !tracking) return email.html
  return trackHtml(email.html, { ...tracking, secret, emailId: email.id, recipient })
}
