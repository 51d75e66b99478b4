// DKIM signatures made two ways, the system's libcrypto through bun:ffi (when the host
// has OpenSSL 3) and node:crypto (where it does not): the same bytes, and mailauth
// verifies both; messages composed and signed on the composing thread verify too.
import { afterEach, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { generateKeyPairSync } from 'node:crypto'
import { dkimSignHere, signingLibrary, type SigningDomain } from '../src/delivery/dkim'
import { systemLibcrypto } from '../src/delivery/libcrypto'
import { composeHere, composeMessage } from '../src/delivery/mime'
import { insertDomain, insertEmail, testDkimKey } from './support/delivery-fixtures'
import { harness, type Harness } from './support/harness'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

async function verify(raw: Buffer, publicKey = testDkimKey().publicKey) {
  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === 'mailroom._domainkey.acme.test') return [[`v=DKIM1; k=rsa; p=${publicKey}`]]
    throw Object.assign(new Error(`no ${type} for ${name}`), { code: 'ENOTFOUND' })
  }
  const r = await dkimVerify(raw, { resolver: resolver as never })
  return r.results.map((x: { status: { result: string } }) => x.status.result)
}

const domain = (dkimPrivateKey = testDkimKey().privateKey): SigningDomain => ({ id: crypto.randomUUID(), name: 'acme.test', dkimSelector: 'mailroom', dkimPrivateKey })

test('libcrypto and node:crypto make the same signature, and mailauth verifies it; libcrypto is what this host signs with', async () => {
  h = await harness()
  const d = await insertDomain(h.root, h.accountId)
  const { email } = await insertEmail(h.root, { accountId: h.accountId, domain: d, to: ['ann@example.net'], headers: { 'X-Entity-Ref-ID': 'ref-1' } })
  const unsigned = await composeHere({ email, attachments: [], domain: null, config: h.config })
  // OpenSSL 3 is installed on this machine (as on current Debian and Ubuntu).
  expect(systemLibcrypto()).not.toBeNull()
  expect(signingLibrary()).toBe('libcrypto')
  const viaLibcrypto = await dkimSignHere(unsigned, d, 'libcrypto')
  const viaNode = await dkimSignHere(unsigned, d, 'node:crypto')
  expect(viaLibcrypto.equals(viaNode)).toBe(true)
  expect(await verify(viaLibcrypto)).toEqual(['pass'])
  expect(await verify(viaNode)).toEqual(['pass'])
  // A tampered body does not pass (mailauth says neutral for a body hash mismatch): the signature covers it.
  expect(await verify(Buffer.from(viaLibcrypto.toString('latin1').replace('Hello there', 'Hello thera'), 'latin1'))).not.toEqual(['pass'])
})

test('a rotated key is picked up by both libraries; a PKCS #1 key signs through libcrypto too', async () => {
  const d = domain()
  const raw = Buffer.from('From: a@acme.test\r\nTo: b@example.net\r\nSubject: hi\r\n\r\nbody\r\n')
  expect(await verify(await dkimSignHere(raw, d, 'libcrypto'))).toEqual(['pass'])
  const next = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const pkcs1 = next.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()
  const publicKey = next.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
  const rotated = { ...d, dkimPrivateKey: pkcs1 }
  expect(systemLibcrypto()!.rsaKey(pkcs1)).not.toBeNull()
  for (const library of ['libcrypto', 'node:crypto'] as const) expect(await verify(await dkimSignHere(raw, rotated, library), publicKey)).toEqual(['pass'])
})

test('a key neither library can read is the DKIM error, whichever signs; an EC key is not taken by libcrypto as RSA', async () => {
  const raw = Buffer.from('From: a@acme.test\r\n\r\nbody\r\n')
  const broken = domain('-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n')
  for (const library of ['libcrypto', 'node:crypto'] as const) {
    await expect(dkimSignHere(raw, broken, library)).rejects.toThrow('the DKIM private key of acme.test cannot be read')
  }
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  expect(systemLibcrypto()!.rsaKey(ec)).toBeNull()
})

test('composed and signed on the composing thread: attachments intact, DKIM passes, the same message as composed here', async () => {
  h = await harness()
  const d = await insertDomain(h.root, h.accountId)
  const content = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 251))
  const { email } = await insertEmail(h.root, {
    accountId: h.accountId,
    domain: d,
    to: ['ann@example.net'],
    attachments: [{ filename: 'data.bin', content, contentType: 'application/octet-stream', contentId: null, disposition: 'attachment' }],
  })
  const attachments = await h.root.db.q.query.emailAttachments.findMany()
  const offThread = await composeMessage({ email, attachments, domain: d, config: h.config })
  const here = await composeHere({ email, attachments, domain: d, config: h.config })
  for (const raw of [offThread, here]) {
    expect(await verify(raw)).toEqual(['pass'])
    const p = await simpleParser(raw)
    expect(p.messageId).toBe(`<${email.messageId}>`)
    expect(p.attachments).toHaveLength(1)
    expect(Buffer.compare(p.attachments[0].content, content)).toBe(0)
  }
  // Only the MIME boundaries (random per composition) differ.
  const boundaries = (raw: Buffer) => raw.toString('latin1').replace(/--_NmP-[0-9a-f-]+/g, 'B').replace(/boundary="[^"]+"/g, 'b').replace(/^DKIM-Signature:[\s\S]*?(?=^\S)/m, '')
  expect(boundaries(offThread)).toBe(boundaries(here))
})
