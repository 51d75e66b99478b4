import { hmac, safeEqual } from '../lib/crypto'

/**
 * One-click unsubscribe tokens for List-Unsubscribe: `<email id>.<recipient>.<mac>`,
 * each part base64url. The email row gives the account and the topic; the mac (HMAC
 * with the deployment secret) stops anyone from forging a token for another address.
 */
const b64u = (s: string) => Buffer.from(s, 'utf8').toString('base64url')
const unb64u = (s: string) => Buffer.from(s, 'base64url').toString('utf8')
const mac = (secret: string, emailId: string, recipient: string) => hmac(secret, `unsubscribe:${emailId}:${recipient}`).slice(0, 22)

export function unsubscribeToken(secret: string, emailId: string, recipient: string): string {
  const r = recipient.toLowerCase()
  return `${b64u(emailId)}.${b64u(r)}.${mac(secret, emailId, r)}`
}

/** The recipient's unsubscribe page for this email: what List-Unsubscribe and `{{{RESEND_UNSUBSCRIBE_URL}}}` point at. */
export const unsubscribeUrl = (baseUrl: string, secret: string, emailId: string, recipient: string) => `${baseUrl}/unsubscribe/${unsubscribeToken(secret, emailId, recipient)}`

/** The email id and recipient a token names, or null when it is malformed or forged. */
export function readUnsubscribeToken(secret: string, token: string): { emailId: string; recipient: string } | null {
  const parts = token.split('.')
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) return null
  const emailId = unb64u(parts[0])
  const recipient = unb64u(parts[1])
  return safeEqual(parts[2], mac(secret, emailId, recipient)) ? { emailId, recipient } : null
}
