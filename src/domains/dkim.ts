import { generateKeyPair, randomBytes } from 'node:crypto'
import { promisify } from 'node:util'

const generate = promisify(generateKeyPair)

export interface DkimKey {
  /** `mr` plus 8 hex characters, e.g. `mr3fa91c0d`. */
  selector: string
  /** PKCS#8 PEM; never leaves the server. */
  privateKey: string
  /** base64 SubjectPublicKeyInfo: the `p=` of the DKIM record. */
  publicKey: string
}

export const newSelector = (not?: string | null): string => {
  for (;;) {
    const s = `mr${randomBytes(4).toString('hex')}`
    if (s !== not) return s
  }
}

/** A fresh 2048-bit RSA key and selector (generated off the event loop). */
export async function generateDkimKey(notSelector?: string | null): Promise<DkimKey> {
  const { privateKey, publicKey } = await generate('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  })
  return { selector: newSelector(notSelector), privateKey, publicKey: Buffer.from(publicKey).toString('base64') }
}

export const dkimRecordName = (selector: string, domain: string) => `${selector}._domainkey.${domain}`
export const dkimRecordValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`

/** RFC 6376 §3.2 tag=value list; tag names lower-cased, values with folding whitespace removed. */
export function parseTags(value: string): Map<string, string> {
  const tags = new Map<string, string>()
  for (const part of value.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    const k = part.slice(0, eq).trim().toLowerCase()
    if (k && !tags.has(k)) tags.set(k, part.slice(eq + 1).replace(/\s+/g, ''))
  }
  return tags
}
