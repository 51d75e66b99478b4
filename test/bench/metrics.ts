// Metrics over a year of events: a million events recorded into a fresh database
// through recordEvents (so the rollups are the ones the service keeps), then
// GET /metrics and GET /emails/metrics timed with wrk against the running server.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensureFirstAccount } from '../../src/accounts/service'
import { openRoot } from '../../src/boot'
import { loadConfig } from '../../src/config'
import { emails, type EmailEventType } from '../../src/db/tables'
import { recordEvents, type NewEvent } from '../../src/emails/events'
import { DAY, HOUR } from '../../src/lib/clock'
import { BUN, freePort, startProcess, stop, tempDir, waitFor, wrk, type WrkResult } from './lib'

const KEY = 'mr_bench_bench_bench_bench_bench_bench_1234'
const DOMAINS = ['acme.test', 'news.acme.test', 'billing.acme.test']
/** Events per recording transaction: about what the delivery recorder writes at a time under load. */
const EVENTS_PER_WRITE = 500

/** A small deterministic generator, so every run seeds the same year. */
export function random(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * One email's events as a realistic mix: sent, then delivered (or a bounce, a delay
 * first now and then), opens, clicks, a rare complaint or unsubscribe.
 */
export function lifeOf(rand: () => number, at: number): [EmailEventType, number, Record<string, unknown>?][] {
  const out: [EmailEventType, number, Record<string, unknown>?][] = [['sent', at]]
  if (rand() < 0.03) out.push(['delivery_delayed', at + 60_000])
  if (rand() < 0.05) return [...out, ['bounced', at + 120_000, { bounce: { type: rand() < 0.7 ? 'Permanent' : 'Transient' } }]]
  out.push(['delivered', at + 2000])
  for (let t = at + HOUR; rand() < 0.45; t += HOUR) out.push(['opened', t])
  if (rand() < 0.15) out.push(['clicked', at + 2 * HOUR])
  if (rand() < 0.004) out.push(['complained', at + 3 * HOUR])
  if (rand() < 0.01) out.push(['unsubscribed', at + 4 * HOUR])
  return out
}

/**
 * Seeds `total` events over the year before `now`, a day at a time in the order they
 * happen, as delivery and tracking would record them: transactional mail through
 * the day from three domains and four keys (a few simulator sends among it), and a
 * weekly broadcast sent within an hour. Answers how fast recordEvents took them.
 */
async function seed(dir: string, total: number, now: number) {
  const root = await openRoot(loadConfig({ MAILROOM_DATA_DIR: dir, MAILROOM_BOOTSTRAP_KEY: KEY }), { log: { info() {}, error() {} } })
  const first = (await ensureFirstAccount(root))!
  const keys = [null, ...Array.from({ length: 3 }, () => root.ids.uuid())]
  const domainIds = DOMAINS.map(() => root.ids.uuid())
  const rand = random(42)
  // lifeOf averages about three events an email.
  const perDay = total / 365 / 3
  let recorded = 0
  let spent = 0
  const start = now - 365 * DAY
  // Whatever the year falls short of is sent on its last day.
  for (let n = 0; recorded < total; n++) {
    const day = Math.min(n, 364)
    const rows: (typeof emails.$inferInsert)[] = []
    const events: NewEvent[] = []
    const broadcast = day % 7 === 3 ? root.ids.uuid() : null
    const count = Math.round(perDay * (broadcast ? 2 : 0.83))
    for (let i = 0; i < count; i++) {
      const id = root.ids.uuid()
      const inBroadcast = broadcast !== null && i < count / 2
      const d = inBroadcast ? 1 : Math.floor(rand() * DOMAINS.length)
      const simulator = !inBroadcast && rand() < 0.05
      const at = start + day * DAY + (inBroadcast ? 9 * HOUR + Math.floor(rand() * HOUR) : Math.floor(rand() * DAY))
      const from = `hello@${DOMAINS[d]}`
      rows.push({
        id, accountId: first.accountId, apiKeyId: inBroadcast ? null : keys[Math.floor(rand() * keys.length)], domainId: simulator ? null : domainIds[d], from, fromEmail: from,
        to: ['someone@customer.test'], cc: [], bcc: [], replyTo: [], subject: 'Hello', headers: {}, tags: [], broadcastId: inBroadcast ? broadcast : null,
        messageId: `${id}@bench.local`, priority: inBroadcast ? 'bulk' : 'transactional', simulator, openTracking: false, clickTracking: false, lastEvent: 'queued',
        createdAt: new Date(at).toISOString(), updatedAt: new Date(at).toISOString(),
      })
      for (const [type, t, data] of lifeOf(rand, at)) events.push({ accountId: first.accountId, emailId: id, type, at: new Date(Math.min(t, now)).toISOString(), data, recipient: 'someone@customer.test' })
    }
    events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
    await root.db.write(async (tx) => {
      for (let i = 0; i < rows.length; i += 50) await tx.insert(emails).values(rows.slice(i, i + 50))
    })
    const todo = events.slice(0, total - recorded)
    for (let i = 0; i < todo.length; i += EVENTS_PER_WRITE) {
      const batch = todo.slice(i, i + EVENTS_PER_WRITE)
      const t0 = performance.now()
      await root.db.write((tx) => recordEvents(tx, root.ids, batch))
      spent += performance.now() - t0
      recorded += batch.length
    }
  }
  const [{ n }] = await root.db.execute('select count(*) as n from metric_counts')
  root.db.close()
  return { events: recorded, perSecond: recorded / (spent / 1000), rollupRows: Number(n) }
}

export interface MetricsBench {
  events: number
  seedPerSecond: number
  rollupRows: number
  queries: { name: string; r: WrkResult }[]
  floor: WrkResult
}

/** Latency with one connection (the query's own time) for each query, and an authenticated one-row read as the floor. */
export async function metricsLatency(total: number, seconds: number): Promise<MetricsBench> {
  const dir = tempDir('metrics')
  const now = Date.now()
  const s = await seed(dir, total, now)
  const port = await freePort()
  const p = startProcess([BUN, 'src/index.ts'], { PORT: String(port), MAILROOM_DATA_DIR: dir, MAILROOM_BOOTSTRAP_KEY: KEY, MAILROOM_RATE_LIMIT: '1000000', MAILROOM_HOSTNAME: 'bench.local', MAILROOM_DELIVERY: 'capture' })
  try {
    await waitFor(`http://127.0.0.1:${port}/health`)
    const script = join(dir, 'auth.lua')
    writeFileSync(script, `wrk.headers["Authorization"] = "Bearer ${KEY}"\n`)
    const yearAgo = new Date(now - 365 * DAY).toISOString().slice(0, 10)
    const queries: [string, string][] = [
      ['GET /metrics, the last 7 days', '/metrics'],
      ['GET /metrics, a year, by domain and by key', `/metrics?since=${yearAgo}&group_by=domain,api_key`],
      ['GET /emails/metrics, a year, daily in America/New_York', `/emails/metrics?start_date=${yearAgo}&dimensions=period&timezone=America/New_York`],
      ['GET /emails/metrics, a year, weekly by domain in Asia/Kolkata', `/emails/metrics?start_date=${yearAgo}&dimensions=period,domain&granularity=weekly&timezone=Asia/Kolkata`],
    ]
    const out: MetricsBench['queries'] = []
    for (const [name, path] of queries) {
      const check = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${KEY}` } })
      if (check.status !== 200) throw new Error(`${path} answered ${check.status}: ${await check.text()}`)
      out.push({ name, r: await wrk(`http://127.0.0.1:${port}${path}`, { connections: 1, threads: 1, seconds, script }) })
    }
    const floor = await wrk(`http://127.0.0.1:${port}/api-keys?limit=1`, { connections: 1, threads: 1, seconds, script })
    return { events: s.events, seedPerSecond: s.perSecond, rollupRows: s.rollupRows, queries: out, floor }
  } finally {
    await stop(p)
  }
}
