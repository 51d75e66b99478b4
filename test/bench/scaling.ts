// Cost as work grows: one database seeded straight into the service's own tables and
// indexes to each size in turn (10 thousand, 1 million, 10 million stored emails by
// default), and at each size the server started on it and timed: sends at 50
// connections and the reads of lists and metrics with one connection.
import Libsql from 'libsql'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensureFirstAccount } from '../../src/accounts/service'
import { openRoot } from '../../src/boot'
import { loadConfig } from '../../src/config'
import type { EmailEventType } from '../../src/db/tables'
import type { NewEvent } from '../../src/emails/events'
import { DAY } from '../../src/lib/clock'
import { uuidV7 } from '../../src/lib/ids'
import { rollUp } from '../../src/metrics/rollup'
import { api, KEY, sendScript, startMailroom, stop, tempDir, wrk, type WrkResult } from './lib'
import { lifeOf, random } from './metrics'

/** The largest size sets the pace: its emails span the year before now, so every size holds the most recent ones at the same rate. */
const GAP_MS = (365 * DAY) / 10_000_000
const EMAILS_PER_TRANSACTION = 20_000
const DOMAINS = ['acme.test', 'news.acme.test', 'billing.acme.test']
const TAGS = ['welcome', 'receipt', 'reset', 'digest'].map((value) => JSON.stringify([{ name: 'category', value }]))
const BODY = 'Hello from the benchmark. '.repeat(8)

/** Multi-row inserts of one table's columns, a statement prepared per row count and reused. */
function inserter(db: Libsql.Database, table: string, columns: string[]) {
  const perStatement = Math.floor(32_000 / columns.length)
  const statements = new Map<number, Libsql.Statement>()
  const statement = (n: number) => {
    let s = statements.get(n)
    if (!s) {
      const row = `(${columns.map(() => '?').join(',')})`
      statements.set(n, (s = db.prepare(`insert into ${table} (${columns.map((c) => `"${c}"`).join(',')}) values ${Array(n).fill(row).join(',')}`)))
    }
    return s
  }
  return (rows: unknown[][]) => {
    for (let i = 0; i < rows.length; i += perStatement) {
      const part = rows.slice(i, i + perStatement)
      statement(part.length).run(part.flat())
    }
  }
}

const EMAIL_COLUMNS = ['id', 'account_id', 'api_key_id', 'domain_id', 'from', 'from_email', 'to', 'cc', 'bcc', 'reply_to', 'subject', 'text', 'headers', 'tags', 'message_id', 'priority', 'simulator', 'open_tracking', 'click_tracking', 'last_event', 'created_at', 'updated_at']
const DELIVERY_COLUMNS = ['id', 'email_id', 'account_id', 'recipient', 'recipient_domain', 'kind', 'state', 'priority', 'next_attempt_at', 'attempts', 'last_code', 'last_response', 'created_at', 'updated_at']
const EVENT_COLUMNS = ['id', 'account_id', 'email_id', 'type', 'recipient', 'data', 'created_at']

/**
 * A database that grows: `growTo(n)` adds emails further back in time until it holds
 * n, each a transactional send with its delivery row and its events (sent, delivered
 * or bounced, opens, clicks, the odd complaint), the metric rollups kept by the
 * service's own `rollUp` before the events are written, as `recordEvents` does.
 */
async function seeder(dir: string, now: number) {
  const root = await openRoot(loadConfig({ MAILROOM_DATA_DIR: dir, MAILROOM_BOOTSTRAP_KEY: KEY }), { log: { info() {}, error() {} } })
  const { accountId } = (await ensureFirstAccount(root))!
  const [{ id: keyId }] = await root.db.execute('select id from api_keys limit 1')
  const keys = [String(keyId), null, crypto.randomUUID(), crypto.randomUUID()]
  const domainIds = DOMAINS.map(() => crypto.randomUUID())
  const raw = new Libsql(join(dir, 'mailroom.db'), { timeout: 10_000 } as never)
  // A seed, not a send: what a crash would lose is rerun, so it skips the fsyncs.
  raw.exec('PRAGMA synchronous = OFF')
  raw.exec('PRAGMA cache_size = -1000000')
  const insertEmails = inserter(raw, 'emails', EMAIL_COLUMNS)
  const insertDeliveries = inserter(raw, 'deliveries', DELIVERY_COLUMNS)
  const insertEvents = inserter(raw, 'email_events', EVENT_COLUMNS)
  let clock = 0
  const ids = uuidV7({ now: () => clock })
  const rand = random(7)
  let stored = 0
  let events = 0

  /** Emails number k = from..to-1 back from now; written oldest first. */
  async function chunk(from: number, to: number) {
    const emails: unknown[][] = []
    const deliveries: unknown[][] = []
    const evs: (NewEvent & { id: string })[] = []
    for (let k = to - 1; k >= from; k--) {
      const at = now - k * GAP_MS
      clock = at
      const id = ids.uuid()
      const d = Math.floor(rand() * DOMAINS.length)
      const simulator = rand() < 0.05
      const from = `hello@${DOMAINS[d]}`
      const to = `user${k % 200_000}@customer${k % 50}.test`
      const life = lifeOf(rand, at).filter(([, t]) => t <= now)
      const last = life.reduce((a, b) => (b[1] >= a[1] ? b : a))
      const bounced = life.some(([type]) => type === 'bounced')
      const iso = new Date(at).toISOString()
      emails.push([id, accountId, keys[Math.floor(rand() * keys.length)], simulator ? null : domainIds[d], from, from, JSON.stringify([to]), '[]', '[]', '[]', 'Hello', BODY, '{}', TAGS[k % TAGS.length], `${id}@bench.local`, 'transactional', simulator ? 1 : 0, 0, 0, last[0], iso, new Date(last[1]).toISOString()])
      deliveries.push([ids.uuid(), id, accountId, to, to.slice(to.indexOf('@') + 1), 'to', bounced ? 'bounced' : 'delivered', 0, iso, 1, bounced ? 550 : 250, bounced ? '550 5.1.1 unknown user' : '250 2.0.0 ok', iso, new Date(at + 2000).toISOString()])
      for (const [type, t, data] of life as [EmailEventType, number, Record<string, unknown>?][]) {
        clock = t
        evs.push({ id: ids.uuid(), accountId, emailId: id, type, at: new Date(t).toISOString(), data: data ?? {}, recipient: to })
      }
    }
    raw.exec('BEGIN IMMEDIATE')
    insertEmails(emails)
    insertDeliveries(deliveries)
    raw.exec('COMMIT')
    // rollUp reads which opens and clicks came first from the events already stored, so it runs before they are.
    await root.db.write((tx) => rollUp(tx, evs))
    raw.exec('BEGIN IMMEDIATE')
    insertEvents(evs.map((e) => [e.id, e.accountId, e.emailId, e.type, e.recipient, JSON.stringify(e.data), e.at]))
    raw.exec('COMMIT')
    stored += to - from
    events += evs.length
  }

  return {
    /** Grows to `n` emails, or as far as it gets before `deadline` (ms since the epoch). */
    async growTo(n: number, deadline: number) {
      const t0 = performance.now()
      const before = { stored, events }
      while (stored < n && Date.now() < deadline) await chunk(stored, Math.min(n, stored + EMAILS_PER_TRANSACTION))
      raw.exec('PRAGMA wal_checkpoint(TRUNCATE)')
      const seconds = (performance.now() - t0) / 1000
      return { stored, events, seconds, emailsPerSecond: (stored - before.stored) / seconds, eventsPerSecond: (events - before.events) / seconds }
    },
    close() {
      raw.close()
      root.db.close()
    },
  }
}

export interface ScaleStep {
  emails: number
  events: number
  seedSeconds: number
  seedEmailsPerSecond: number
  /** The seed deadline came before the size asked for. */
  short: boolean
  sends: WrkResult
  reads: { name: string; r: WrkResult }[]
}

/**
 * `sizes` in stored emails; the seeding of them all stops at `seedMinutes` and the
 * size reached is measured. One server per size, started on the grown database while
 * the seeder waits, its connections idle.
 */
export async function scaling(sizes: number[], seconds: number, seedMinutes: number, progress: (line: string) => void = () => {}): Promise<ScaleStep[]> {
  const dir = tempDir('scaling')
  const now = Date.now()
  const deadline = now + seedMinutes * 60_000
  const out: ScaleStep[] = []
  try {
    const seed = await seeder(dir, now)
    try {
      for (const size of sizes) {
        const s = await seed.growTo(size, deadline)
        progress(`seeded ${s.stored} emails, ${s.events} events in ${s.seconds.toFixed(0)} s (${s.emailsPerSecond.toFixed(0)} emails/s)`)
        out.push({ emails: s.stored, events: s.events, seedSeconds: s.seconds, seedEmailsPerSecond: s.emailsPerSecond, short: s.stored < size, ...(await measure(dir, seconds)) })
        if (s.stored < size) break
      }
    } finally {
      seed.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return out
}

async function measure(dir: string, seconds: number) {
  const m = await startMailroom({ MAILROOM_DELIVERY: 'capture' }, dir)
  try {
    const script = join(dir, 'auth.lua')
    writeFileSync(script, `wrk.headers["Authorization"] = "Bearer ${KEY}"\n`)
    const first = (await (await api(m.url, 'GET', '/emails?limit=20')).json()) as { data: { id: string }[]; next_cursor: string }
    const paths: [string, string][] = [
      ['GET /emails?limit=20', '/emails?limit=20'],
      ['GET /emails?limit=20&status=bounced', '/emails?limit=20&status=bounced'],
      ['GET /emails?limit=20&tag=category:receipt', '/emails?limit=20&tag=category:receipt'],
      ['GET /emails?limit=20, the second page by cursor', `/emails?limit=20&cursor=${encodeURIComponent(first.next_cursor)}`],
      ['GET /emails/{id}', `/emails/${first.data[10].id}`],
      ['GET /metrics', '/metrics'],
      ['GET /emails/metrics', '/emails/metrics'],
    ]
    for (const [, path] of paths) {
      const check = await api(m.url, 'GET', path)
      if (check.status !== 200) throw new Error(`${path} answered ${check.status}: ${await check.text()}`)
    }
    // Warmed first, so the first figure is not the one that pays for the compiler and the page cache.
    for (let i = 0; i < 50; i++) for (const [, path] of paths) await (await api(m.url, 'GET', path)).arrayBuffer()
    const reads: ScaleStep['reads'] = []
    for (const [name, path] of paths) {
      reads.push({ name, r: await wrk(m.url + path, { connections: 1, threads: 1, seconds, script }) })
    }
    const sends = await wrk(`${m.url}/emails`, { seconds, script: sendScript(dir) })
    return { sends, reads }
  } finally {
    await stop(m.p)
  }
}

if (import.meta.main) {
  const sizes = (process.env.BENCH_SCALE_SIZES ?? '10000,100000').split(',').map(Number)
  for (const s of await scaling(sizes, Number(process.env.BENCH_SECONDS ?? 3), Number(process.env.BENCH_SCALE_SEED_MINUTES ?? 15), console.log)) {
    console.log(s.emails, s.events, `seed ${s.seedSeconds.toFixed(1)} s`, `sends ${s.sends.requestsPerSec.toFixed(0)}/s p99 ${s.sends.p99ms} ms`)
    for (const q of s.reads) console.log(`  ${q.name}: p50 ${q.r.p50ms} ms p99 ${q.r.p99ms} ms`)
  }
}
