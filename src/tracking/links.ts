import { trackingHost, trackingVerified } from '../domains/checks'
import type { DomainRow, EmailRow } from '../delivery/types'
import { hmac, safeEqual } from '../lib/crypto'

/**
 * Click and open tracking in the HTML part: every absolute http(s) link becomes a
 * signed redirect address `<base>/t/c/<token>` and an open pixel `<base>/t/o/<token>`
 * is added. A token carries the email id, the recipient and (for clicks) the exact
 * original URL, each base64url, and an HMAC of them with the deployment secret, so
 * the redirect can only ever go where the message pointed, never to a URL from the
 * request, and a token cannot be forged for another address or link.
 */
const b64u = (s: string) => Buffer.from(s, 'utf8').toString('base64url')
const unb64u = (s: string) => Buffer.from(s, 'base64url').toString('utf8')
const PART = /^[A-Za-z0-9_-]+$/
const mac = (secret: string, kind: 'click' | 'open', fields: string[]) => hmac(secret, `${kind}\n${fields.join('\n')}`).slice(0, 22)

export interface ClickTarget {
  emailId: string
  recipient: string
  url: string
}

export interface OpenTarget {
  emailId: string
  recipient: string
}

export function clickToken(secret: string, emailId: string, recipient: string, url: string): string {
  const r = recipient.toLowerCase()
  return `${b64u(emailId)}.${b64u(r)}.${b64u(url)}.${mac(secret, 'click', [emailId, r, url])}`
}

export function openToken(secret: string, emailId: string, recipient: string): string {
  const r = recipient.toLowerCase()
  return `${b64u(emailId)}.${b64u(r)}.${mac(secret, 'open', [emailId, r])}`
}

/** Only http(s) addresses are ever followed. */
export const isWebUrl = (url: string) => /^https?:\/\/[^\s/?#]+/i.test(url) && URL.canParse(url)

/** The email, recipient and original URL a click token names; null when malformed, forged or not a web address. */
export function readClickToken(secret: string, token: string): ClickTarget | null {
  const parts = token.split('.')
  if (parts.length !== 4 || parts.some((p) => !PART.test(p))) return null
  const [emailId, recipient, url] = parts.slice(0, 3).map(unb64u)
  if (!safeEqual(parts[3], mac(secret, 'click', [emailId, recipient, url]))) return null
  return isWebUrl(url) ? { emailId, recipient, url } : null
}

export function readOpenToken(secret: string, token: string): OpenTarget | null {
  const parts = token.split('.')
  if (parts.length !== 3 || parts.some((p) => !PART.test(p))) return null
  const [emailId, recipient] = parts.slice(0, 2).map(unb64u)
  return safeEqual(parts[2], mac(secret, 'open', [emailId, recipient])) ? { emailId, recipient } : null
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' }

/** What a browser reads from an attribute value: character references decoded. */
export function decodeAttribute(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);?/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10)
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return ENTITIES[ref.toLowerCase()] ?? whole
  })
}

const escAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** `href` of `<a>` and `<area>` tags, quoted or not; group 1 is everything before the value, 2/3/4 the value. */
const LINK = /(<(?:a|area)\b[^>]*?\shref\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi

export interface TrackOptions {
  /** Where the tracking paths are served: `https://<tracking host>` (or this server's base URL). */
  base: string
  secret: string
  emailId: string
  recipient: string
  click: boolean
  open: boolean
}

/**
 * The HTML with its web links rewritten to signed click addresses (when `click`) and
 * the open pixel added before `</body>` or at the end (when `open`). Everything else is
 * left byte for byte: mailto:, tel:, anchors, cid: and relative links stay as written.
 */
export function trackHtml(html: string, o: TrackOptions): string {
  const base = o.base.replace(/\/+$/, '')
  let out = html
  if (o.click) {
    out = out.replace(LINK, (whole, before: string, dq?: string, sq?: string, bare?: string) => {
      const url = decodeAttribute((dq ?? sq ?? bare ?? '').trim())
      if (!isWebUrl(url)) return whole
      return `${before}"${escAttr(`${base}/t/c/${clickToken(o.secret, o.emailId, o.recipient, url)}`)}"`
    })
  }
  if (o.open) {
    const pixel = `<img src="${escAttr(`${base}/t/o/${openToken(o.secret, o.emailId, o.recipient)}`)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0">`
    const end = out.search(/<\/body\s*>/i)
    out = end >= 0 ? out.slice(0, end) + pixel + out.slice(end) : out + pixel
  }
  return out
}

/**
 * Where a domain's tracked links point: its tracking host over HTTPS, only once that
 * host's CNAME verified; null otherwise (then links go out as written, as the seed's
 * `tracking_subdomain_unverified` says).
 */
export function trackingBase(domain: Pick<DomainRow, 'name' | 'trackingSubdomain' | 'records'> | null): string | null {
  if (!domain || !trackingVerified(domain)) return null
  return `https://${trackingHost(domain)}`
}

/** Which tracking a message gets: the email's own flags, on a domain whose tracking host verified, with an HTML part. */
export function trackingFor(email: Pick<EmailRow, 'html' | 'clickTracking' | 'openTracking'>, domain: Parameters<typeof trackingBase>[0]) {
  const base = email.html && (email.clickTracking || email.openTracking) ? trackingBase(domain) : null
  return base ? { base, click: email.clickTracking, open: email.openTracking } : null
}
