import { createHash, createPrivateKey, sign as cryptoSign, type KeyObject } from 'node:crypto'
import { domainToASCII } from 'node:url'
import { systemLibcrypto } from './libcrypto'
import type { DomainRow } from './types'

/** How a message's signature is made: the system's libcrypto when it loads (see libcrypto.ts), else node:crypto. */
export type SigningLibrary = 'libcrypto' | 'node:crypto'

/** A parsed private key that signs (RSASSA-PKCS1-v1_5 over SHA-256). */
interface Signer {
  sign(data: Buffer): Buffer
  free?(): void
}

/**
 * Parsed DKIM keys, one per domain, selector and library. Parsing a PEM costs more
 * than the signature itself, so each key is parsed once and reused; the PEM is kept
 * beside it so a rotated key is noticed. Bounded: the oldest entry leaves first.
 */
const MAX_KEYS = 1000
const keys = new Map<string, { pem: string; signer: Signer }>()

/** The library this thread signs with. */
export function signingLibrary(): SigningLibrary {
  return systemLibcrypto() ? 'libcrypto' : 'node:crypto'
}

function dkimKey(domainId: string, selector: string, pem: string, library: SigningLibrary): Signer {
  const id = `${library}:${domainId}:${selector}`
  const hit = keys.get(id)
  if (hit && hit.pem === pem) return hit.signer
  // A key libcrypto cannot read as RSA goes to node:crypto, which signs it or says why it cannot.
  const native = library === 'libcrypto' ? systemLibcrypto()?.rsaKey(pem) : null
  const signer: Signer = native ?? nodeSigner(createPrivateKey({ key: pem, format: 'pem' }))
  hit?.signer.free?.()
  keys.delete(id)
  keys.set(id, { pem, signer })
  if (keys.size > MAX_KEYS) {
    const [oldest, entry] = keys.entries().next().value!
    keys.delete(oldest)
    entry.signer.free?.()
  }
  return signer
}

const nodeSigner = (key: KeyObject): Signer => ({ sign: (data) => cryptoSign('sha256', data, key) })

/** Header fields we sign (nodemailer's RFC list plus the one-click unsubscribe field). */
const SIGNED_FIELD_NAMES = (
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:Content-ID:' +
  'In-Reply-To:References:List-Id:List-Unsubscribe:List-Unsubscribe-Post'
)
  .toLowerCase()
  .split(':')

export class DkimSignError extends Error {}

export type SigningDomain = Pick<DomainRow, 'id' | 'name' | 'dkimSelector' | 'dkimPrivateKey'>

/**
 * Signs on this thread (relaxed/relaxed, rsa-sha256) with the cached key. Done in
 * one synchronous pass rather than through nodemailer's DKIM stream, whose
 * event-loop hops cost more than the canonicalization itself and held each
 * signature up behind every other message in flight.
 */
export async function dkimSignHere(raw: Buffer, domain: SigningDomain, library = signingLibrary()): Promise<Buffer> {
  let privateKey: Signer
  try {
    privateKey = dkimKey(domain.id, domain.dkimSelector, domain.dkimPrivateKey, library)
  } catch (e) {
    throw new DkimSignError(`the DKIM private key of ${domain.name} cannot be read: ${(e as Error).message}`)
  }
  const { header, body } = splitMessage(raw)
  const fields = signedFields(header.toString('latin1'))
  const tags = [
    'v=1',
    'a=rsa-sha256',
    'c=relaxed/relaxed',
    `d=${domainToASCII(tagValue(domain.name))}`,
    'q=dns/txt',
    `s=${tagValue(domain.dkimSelector)}`,
    `bh=${createHash('sha256').update(relaxedBody(body), 'latin1').digest('base64')}`,
    `h=${fields.map((f) => f.name).join(':')}`,
  ]
  const unsigned = `DKIM-Signature: ${tags.slice(0, 5).join('; ')};\r\n ${tags.slice(5).join(';\r\n ')};\r\n b=`
  const canonical = fields.map((f) => `${f.name}:${f.value}\r\n`).join('') + `dkim-signature:${relaxedValue(unsigned.slice(unsigned.indexOf(':') + 1))}`
  let signature: string
  try {
    signature = privateKey.sign(Buffer.from(canonical, 'latin1')).toString('base64')
  } catch (e) {
    throw new DkimSignError(`the message could not be DKIM-signed for ${domain.name}: ${(e as Error).message}`)
  }
  return Buffer.concat([Buffer.from(`${unsigned}${signature.match(/.{1,72}/g)!.join('\r\n ')}\r\n`, 'latin1'), raw])
}

/** The header block (with the empty line that ends it) and the body after it. */
function splitMessage(raw: Buffer) {
  const crlf = raw.indexOf('\r\n\r\n')
  const lf = raw.indexOf('\n\n')
  const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : raw.length
  return { header: raw.subarray(0, end), body: raw.subarray(end) }
}

const tagValue = (v: string) => v.replace(/[\x00-\x1f\x7f;=]/g, '')

/** Relaxed canonicalization of a header field's value (RFC 6376 3.4.2): unfolded, each run of WSP one SP, trimmed. */
const relaxedValue = (v: string) => v.replace(/\r?\n/g, '').replace(/[ \t]+/g, ' ').trim()

/** The fields of SIGNED_FIELDS the header has, each its last occurrence (RFC 6376 5.4.2), canonicalized. */
function signedFields(header: string): { name: string; value: string }[] {
  const lines: string[] = []
  for (const line of header.split(/\r?\n/)) {
    if (lines.length && /^[ \t]/.test(line)) lines[lines.length - 1] += `\r\n${line}`
    else if (/[^ \t\r]/.test(line)) lines.push(line)
  }
  const last = new Map<string, string>()
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) last.set(line.slice(0, colon).replace(/[ \t]+$/, '').toLowerCase(), relaxedValue(line.slice(colon + 1)))
  }
  return SIGNED_FIELD_NAMES.filter((n) => last.has(n)).map((name) => ({ name, value: last.get(name)! }))
}

/** Relaxed body canonicalization (RFC 6376 3.4.4): each run of WSP one SP, none at line ends, no empty lines at the end. */
function relaxedBody(body: Buffer): string {
  const lines = body.toString('latin1').split(/\r?\n/).map((l) => l.replace(/[ \t]+/g, ' ').replace(/ $/, ''))
  while (lines.length && lines[lines.length - 1] === '') lines.pop()
  return lines.length ? `${lines.join('\r\n')}\r\n` : ''
}
