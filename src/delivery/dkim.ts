import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { createPrivateKey, type KeyObject } from 'node:crypto'
import DKIM from 'nodemailer/lib/dkim'
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
const SIGNED_FIELDS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:Content-ID:' +
  'In-Reply-To:References:List-Id:List-Unsubscribe:List-Unsubscribe-Post'

export class DkimSignError extends Error {}

export type SigningDomain = Pick<DomainRow, 'id' | 'name' | 'dkimSelector' | 'dkimPrivateKey'>

/** Signs on this thread: nodemailer's DKIM signer (relaxed/relaxed, rsa-sha256) with the cached key. */
export async function dkimSignHere(raw: Buffer, domain: SigningDomain): Promise<Buffer> {
  let privateKey: KeyObject
  try {
    privateKey = dkimKey(domain.id, domain.dkimSelector, domain.dkimPrivateKey)
  } catch (e) {
    throw new DkimSignError(`the DKIM private key of ${domain.name} cannot be read: ${(e as Error).message}`)
  }
  const signer = new DKIM({ domainName: domain.name, keySelector: domain.dkimSelector, privateKey, headerFieldNames: SIGNED_FIELDS })
  const chunks: Buffer[] = []
  for await (const chunk of signer.sign(raw)) chunks.push(chunk as Buffer)
  const signed = Buffer.concat(chunks)
  // nodemailer leaves a message unsigned (rather than failing) when signing throws.
  if (signed.length === raw.length || !signed.subarray(0, 16).toString('latin1').startsWith('DKIM-Signature:')) {
    throw new DkimSignError(`the message could not be DKIM-signed for ${domain.name}`)
  }
  return signed
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
