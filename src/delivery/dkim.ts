import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { createHash, createPrivateKey, sign as cryptoSign, type KeyObject } from 'node:crypto'
import { domainToASCII } from 'node:url'
import type { DomainRow } from './types'

/**
 * Parsed DKIM keys, one per domain and selector. Parsing a PEM costs more than the
 * signature itself under Bun, so each key is parsed once and reused; the PEM is kept
 * beside it so a rotated key is noticed. Bounded: the oldest entry leaves first.
 */
const MAX_KEYS = 1000
const keys = new Map<string, { pem: string; key: KeyObject }>()

export function dkimKey(domainId: string, selector: string, pem: string): KeyObject {
  const id = `${domainId}:${selector}`
  const hit = keys.get(id)
  if (hit && hit.pem === pem) return hit.key
  const key = createPrivateKey({ key: pem, format: 'pem' })
  keys.delete(id)
  keys.set(id, { pem, key })
  if (keys.size > MAX_KEYS) keys.delete(keys.keys().next().value!)
  return key
}

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
export async function dkimSignHere(raw: Buffer, domain: SigningDomain): Promise<Buffer> {
  let privateKey: KeyObject
  try {
    privateKey = dkimKey(domain.id, domain.dkimSelector, domain.dkimPrivateKey)
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
    signature = cryptoSign('sha256', Buffer.from(canonical, 'latin1'), privateKey).toString('base64')
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

interface Job {
  resolve(b: Buffer): void
  reject(e: Error): void
  raw: Buffer
  domain: SigningDomain
}

/**
 * RSA signatures are most of the CPU a signed message costs (about 0.6 ms each under
 * Bun), so they run on worker threads and the main thread keeps the database and the
 * sockets. A pool that cannot start (for instance a build without the worker file)
 * falls back to signing here, so signing never stops.
 */
class SignerPool {
  private workers: { w: Worker; busy: number }[] = []
  private jobs = new Map<number, Job>()
  private seq = 0
  private broken = false

  constructor(private readonly size: number) {}

  sign(raw: Buffer, domain: SigningDomain): Promise<Buffer> {
    if (this.broken || this.size < 1) return dkimSignHere(raw, domain)
    if (!this.workers.length && !this.start()) return dkimSignHere(raw, domain)
    const id = ++this.seq
    const slot = this.workers.reduce((a, b) => (b.busy < a.busy ? b : a))
    slot.busy++
    return new Promise<Buffer>((resolve, reject) => {
      this.jobs.set(id, {
        raw,
        domain,
        resolve: (b) => {
          slot.busy--
          resolve(b)
        },
        reject: (e) => {
          slot.busy--
          reject(e)
        },
      })
      const d = { id: domain.id, name: domain.name, dkimSelector: domain.dkimSelector, dkimPrivateKey: domain.dkimPrivateKey }
      slot.w.postMessage({ id, raw, domain: d })
    })
  }

  private start(): boolean {
    const entry = workerEntry()
    if (!entry) {
      this.broken = true
      return false
    }
    try {
      for (let i = 0; i < this.size; i++) {
        const w = new Worker(entry)
        w.unref()
        w.onmessage = (e: MessageEvent<{ id: number; signed?: Uint8Array; error?: string; keyError?: boolean }>) => {
          const job = this.jobs.get(e.data.id)
          if (!job) return
          this.jobs.delete(e.data.id)
          if (e.data.signed) job.resolve(Buffer.from(e.data.signed.buffer, e.data.signed.byteOffset, e.data.signed.byteLength))
          else job.reject(new DkimSignError(e.data.error ?? 'signing failed'))
        }
        w.onerror = () => this.fail()
        this.workers.push({ w, busy: 0 })
      }
      return true
    } catch {
      this.fail()
      return false
    }
  }

  /** Signing threads at work (0: signing on the main thread). */
  get threads() {
    return this.broken ? 0 : this.workers.length
  }

  /** A worker died or never started: sign everything here from now on, including what was waiting. */
  private fail() {
    if (this.broken) return
    this.broken = true
    for (const { w } of this.workers) w.terminate()
    this.workers = []
    const waiting = [...this.jobs.values()]
    this.jobs.clear()
    for (const j of waiting) dkimSignHere(j.raw, j.domain).then(j.resolve, j.reject)
  }
}

/**
 * Where the signing thread's code is: beside this file when running from source; in a
 * compiled binary, at `delivery/sign-worker.js` inside it, present only when the build
 * lists src/delivery/sign-worker.ts as a second entrypoint. Null: sign on the main thread.
 */
function workerEntry(): string | null {
  if (!import.meta.path.includes('$bunfs')) return new URL('./sign-worker.ts', import.meta.url).href
  const compiled = join(dirname(import.meta.path), 'delivery', 'sign-worker.js')
  return existsSync(compiled) ? compiled : null
}

let pool: SignerPool | null = null

/** Threads used for DKIM signatures (0 signs on the main thread); set before the first signature. */
export function configureSigning(threads: number) {
  pool = new SignerPool(threads)
}

/** Prepends a DKIM-Signature made with the domain's active key, on a signing thread when there is one. */
export function dkimSign(raw: Buffer, domain: SigningDomain): Promise<Buffer> {
  pool ??= new SignerPool(Math.max(1, Math.min(4, availableParallelism() - 1)))
  return pool.sign(raw, domain)
}

/** Signing threads at work (0 when signatures are made on the main thread); for status pages and benchmarks. */
export function signingThreads(): number {
  return pool?.threads ?? 0
}
