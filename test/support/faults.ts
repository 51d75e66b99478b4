// The rig for the process-fault tests: a real `bun src/index.ts` on a data folder
// that survives it, delivering through a relay into an in-process SMTP sink, with
// a real DNS server for domain verification and a real webhook receiver. A test
// kills the process (-9 or SIGTERM), starts it again on the same folder, and
// counts what reached the sink or the receiver per marker.
import { createClient, type Client } from '@libsql/client'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, killAll, listeningUrl, start, type Started } from '../../src/build/process'
import { startDnsServer, type TestDnsServer } from './dns-server'
import { startSmtpSink, type SinkMessage, type SinkOptions, type SmtpSink } from './smtp-sink'

const ENTRY = resolve(import.meta.dir, '../../src/index.ts')
const BOOT_MS = 30_000
export const HOST = 'mx.mailroom.test'
export const KEY = 'mr_faults_bootstrap_key_0123456789'
/** Messages the delivery worker has in the transport's hands at once: the bound on SMTP-boundary duplicates. */
export const DELIVERY_CONCURRENCY = 8
export const WEBHOOK_CONCURRENCY = 4

export interface Server {
  url: string
  p: Started
  /** kill -9, and waits until the process is gone. */
  kill(): Promise<void>
}

export interface Reply {
  /** 0 when no answer came (refused, reset, or cut off by the kill). */
  status: number
  body: any
}

export interface Rig {
  dir: string
  dns: TestDnsServer
  sink: SmtpSink
  start(extra?: Record<string, string>): Promise<Server>
  call(server: Server, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>
  /** A domain added, its records published in the DNS server, and verified, through the API. */
  verifyDomain(server: Server, name: string): Promise<void>
  /** A read-only look at the data folder's database (the server may be running). */
  query<T = Record<string, unknown>>(sql: string, args?: (string | number)[]): Promise<T[]>
  close(): Promise<void>
}

export async function faultRig(sinkOpts: SinkOptions = {}): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-faults-'))
  const dns = await startDnsServer()
  const sink = await startSmtpSink({ auth: { user: 'relay', pass: 'relay-pass' }, ...sinkOpts })
  let db: Client | null = null
  const env = (extra: Record<string, string>) => ({
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    TMPDIR: tmpdir(),
    PORT: String(freePort()),
    MAILROOM_DATA_DIR: dir,
    MAILROOM_BOOTSTRAP_KEY: KEY,
    MAILROOM_SMTP_PORT: '0',
    MAILROOM_SMTP_HOST: '127.0.0.1',
    MAILROOM_HOSTNAME: HOST,
    MAILROOM_DELIVERY: 'relay',
    MAILROOM_RELAY_URL: sink.url(),
    MAILROOM_DNS_SERVERS: dns.address,
    MAILROOM_DNSBL_ZONES: '',
    MAILROOM_DBL_ZONES: '',
    MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true',
    MAILROOM_RATE_LIMIT: '1000000',
    MAILROOM_DELIVERY_CONCURRENCY: String(DELIVERY_CONCURRENCY),
    MAILROOM_WEBHOOK_CONCURRENCY: String(WEBHOOK_CONCURRENCY),
    ...extra,
  })

  const rig: Rig = {
    dir,
    dns,
    sink,
    async start(extra = {}) {
      const p = start([process.execPath, ENTRY], { cwd: dir, env: env(extra) })
      const url = await listeningUrl(p, BOOT_MS)
      return {
        url,
        p,
        async kill() {
          p.proc.kill('SIGKILL')
          await p.proc.exited
        },
      }
    },
    async call(server, method, path, body, headers = {}) {
      try {
        const res = await fetch(server.url + path, {
          method,
          headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(15_000),
        })
        const text = await res.text()
        return { status: res.status, body: text ? JSON.parse(text) : null }
      } catch {
        return { status: 0, body: null }
      }
    },
    async verifyDomain(server, name) {
      const created = await rig.call(server, 'POST', '/domains', { name })
      if (created.status !== 201) throw new Error(`POST /domains: ${created.status} ${JSON.stringify(created.body)}`)
      for (const r of created.body.records as { name: string; type: 'TXT' | 'MX' | 'CNAME'; value: string; priority?: number }[]) {
        dns.set(r.name, r.type, [r.type === 'MX' ? { exchange: r.value, priority: r.priority ?? 10 } : r.value])
      }
      const verified = await rig.call(server, 'POST', `/domains/${created.body.id}/verify`)
      if (verified.body?.status !== 'verified') throw new Error(`verify: ${verified.status} ${JSON.stringify(verified.body)}`)
    },
    async query(sql, args = []) {
      db ??= createClient({ url: `file:${join(dir, 'mailroom.db')}` })
      return (await db.execute({ sql, args })).rows as unknown as never[]
    },
    async close() {
      killAll()
      db?.close()
      await sink.close()
      await dns.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return rig
}

/** A rig whose server is running with `shop.test` verified: where most fault tests start. */
export async function shopRig(sinkOpts: SinkOptions = {}): Promise<{ rig: Rig; server: Server }> {
  const rig = await faultRig(sinkOpts)
  const server = await rig.start()
  await rig.verifyDomain(server, 'shop.test')
  return { rig, server }
}

/** Runs `fn` over `items` with at most `n` at once. */
export async function pool<T, R>(items: T[], n: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++
        out[i] = await fn(items[i])
      }
    }),
  )
  return out
}

/** Polls `fn` until it is true (every 50 ms, at most `ms`). */
export async function until(what: string, ms: number, fn: () => boolean | Promise<boolean>) {
  const end = Date.now() + ms
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await Bun.sleep(50)
  }
}

/** A header field of a raw message (first occurrence, unfolded). */
export function header(raw: Buffer, name: string): string | undefined {
  const head = raw.toString('utf8').split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, ' ')
  return head.match(new RegExp(`^${name}:[ \\t]*(.*)$`, 'im'))?.[1].trim()
}

/** What reached the sink, by subject, in arrival order. */
export function bySubject(messages: SinkMessage[]): Map<string, SinkMessage[]> {
  const out = new Map<string, SinkMessage[]>()
  for (const m of messages) {
    const subject = header(m.raw, 'subject') ?? ''
    out.set(subject, [...(out.get(subject) ?? []), m])
  }
  return out
}

/** How long before the kill a message's first copy may have been accepted and still not be recorded: a group commit on a busy machine. */
export const RECORD_WINDOW_MS = 2000

/**
 * The exactly-once check at the SMTP boundary: every expected subject arrived;
 * one that arrived twice did so with one Message-ID (the same email sent again,
 * never a second email), and only when its first copy was accepted by the sink
 * in the last moments before the kill and not recorded as delivered: an SMTP
 * transaction in flight, or its reply waiting for the group commit. Returns the
 * subjects delivered twice and what broke the rule.
 */
export function exactlyOnceAtTheBoundary(opts: {
  messages: SinkMessage[]
  expected: string[]
  killedAt: number
  /** Message-IDs of the rows recorded as delivered when the process died. */
  recordedBeforeKill: Set<string>
}): { duplicates: string[]; problems: string[] } {
  const seen = bySubject(opts.messages)
  const problems: string[] = []
  const duplicates: string[] = []
  for (const s of opts.expected) {
    const copies = seen.get(s)
    if (!copies) {
      problems.push(`${s}: never arrived`)
      continue
    }
    const ids = copies.map((m) => header(m.raw, 'message-id'))
    if (new Set(ids).size !== 1) problems.push(`${s}: ${ids.length} different emails (${ids.join(', ')})`)
    if (copies.length === 1) continue
    duplicates.push(s)
    const firstAt = copies[0].at
    if (copies.length > 2) problems.push(`${s}: arrived ${copies.length} times`)
    if (firstAt > opts.killedAt || firstAt < opts.killedAt - RECORD_WINDOW_MS) problems.push(`${s}: delivered twice, its first copy ${opts.killedAt - firstAt} ms before the kill`)
    if (opts.recordedBeforeKill.has(ids[0]!)) problems.push(`${s}: recorded as delivered before the kill, then sent again`)
  }
  for (const s of seen.keys()) if (!opts.expected.includes(s)) problems.push(`${s}: not expected`)
  // The worker hands the transport at most twice its concurrency of messages whose outcome is not committed.
  if (duplicates.length > DELIVERY_CONCURRENCY * 2) problems.push(`${duplicates.length} duplicates, more than the messages the worker can have sent and not recorded`)
  return { duplicates, problems }
}

/** Message-IDs (`<id@host>`) of the emails whose every row is recorded delivered. */
export async function recordedDelivered(rig: Rig): Promise<Set<string>> {
  const rows = await rig.query<{ email_id: string }>("SELECT email_id FROM deliveries WHERE state = 'delivered'")
  return new Set(rows.map((r) => `<${r.email_id}@${HOST}>`))
}

/** Rows still to deliver, and rows leased by anyone. */
export async function queueState(rig: Rig) {
  const [row] = await rig.query<{ due: number; leased: number }>(
    "SELECT sum(state IN ('queued','deferred','scheduled')) AS due, sum(lease_owner IS NOT NULL) AS leased FROM deliveries",
  )
  return { due: Number(row.due ?? 0), leased: Number(row.leased ?? 0) }
}
