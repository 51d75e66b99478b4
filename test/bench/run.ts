// `npm run bench`: measures Mailroom on this machine and prints each figure beside a
// ceiling, or what Postfix does with the same work, measured in the same run (never
// as a pass/fail test), then one table of them all. `BENCH_ONLY=sends,scaling` runs
// some parts. Needs wrk, and Postfix with its smtp-sink and smtp-source (Debian:
// apt-get install wrk postfix).
import { createClient } from '@libsql/client'
import { rmSync, statSync } from 'node:fs'
import { loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { broadcastFanout } from './broadcast'
import { footprint } from './footprint'
import { inboundPerSecond } from './inbound'
import { api, BUN, fmt, freePort, has, insertVerifiedDomain, memoryMb, sendScript, startMailroom, startProcess, startSink, stop, tempDir, waitFor, wrk } from './lib'
import { metricsLatency } from './metrics'
import { postfixInbound, postfixMissing, postfixRelay, smtpSource } from './postfix'
import { scaling, type ScaleStep } from './scaling'
import { segmentResolution } from './segments'
import { webhookDeliveriesPerSecond } from './webhooks'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const DELIVER = Number(process.env.BENCH_DELIVER ?? 10_000)
const RECEIVE = Number(process.env.BENCH_RECEIVE ?? 5_000)
const WEBHOOKS = Number(process.env.BENCH_WEBHOOKS ?? 10_000)
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000)
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000)
const SCALE_MAX = Number(process.env.BENCH_SCALE_MAX ?? Infinity)
const SCALE_SIZES = (process.env.BENCH_SCALE_SIZES ?? '10000,1000000,10000000').split(',').map(Number).filter((n) => n <= SCALE_MAX)
const SCALE_SEED_MINUTES = Number(process.env.BENCH_SCALE_SEED_MINUTES ?? 15)
const rows: string[][] = []
/** Prints a figure as it comes, with the machine's load average (one minute) then, and keeps it for the table. */
const report = (what: string, value: string, ceiling: string, ratio: string) => {
  const load = loadavg()[0].toFixed(1)
  rows.push([what, value, ceiling, ratio, load])
  console.log(`  ${what}: ${value}${ceiling ? `  (against ${ceiling})` : ''}${ratio ? `  ratio ${ratio}` : ''}  [load ${load}]`)
}

async function httpCeiling() {
  const port = await freePort()
  const p = startProcess([BUN, join(import.meta.dir, 'hello.ts')], { PORT: String(port) })
  await waitFor(`http://127.0.0.1:${port}/`)
  const r = await wrk(`http://127.0.0.1:${port}/`, { seconds: SECONDS })
  await stop(p)
  return r
}

/** Bare libSQL inserts at synchronous=FULL, one row per transaction: the storage ceiling. */
async function insertCeiling() {
  const dir = tempDir('libsql')
  const c = createClient({ url: `file:${join(dir, 'x.db')}` })
  await c.execute('PRAGMA journal_mode=WAL')
  await c.execute('PRAGMA synchronous=FULL')
  await c.execute('create table t (id integer primary key, body text)')
  const body = 'x'.repeat(500)
  let n = 0
  const until = performance.now() + SECONDS * 1000
  while (performance.now() < until) {
    await c.batch([{ sql: 'insert into t (body) values (?)', args: [body] }], 'write')
    n++
  }
  c.close()
  return n / SECONDS
}

/** POST /emails at 50 connections, with the server's memory at rest before (2 s idle after boot) and its peak by the end. */
async function acceptedSends() {
  const m = await startMailroom({ MAILROOM_DELIVERY: 'capture' })
  const script = sendScript(m.dir)
  await Bun.sleep(2000)
  const rest = memoryMb(m.p.pid).rss
  const check = await api(m.url, 'POST', '/emails', { from: 'bench@bench.test', to: 'delivered@simulator.test', subject: 'x', text: 'y' })
  if (check.status !== 200) throw new Error(`POST /emails answered ${check.status}: ${await check.text()}`)
  const r = await wrk(`${m.url}/emails`, { seconds: SECONDS, script })
  const peak = memoryMb(m.p.pid).peak
  await stop(m.p)
  return { ...r, restMb: rest, peakMb: peak }
}

/**
 * Mail handed to Postfix's smtp-sink through relay mode, DKIM-signed with a verified
 * domain. The sink appends what it gets to a file, so the size of a message as sent
 * is measured, for Postfix to relay the same.
 */
async function deliveredPerSecond() {
  const dump = join(tempDir('sink'), 'dump')
  const sink = await startSink(dump)
  const m = await startMailroom({ MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: `smtp://127.0.0.1:${sink.port}` })
  const db = createClient({ url: `file:${join(m.dir, 'mailroom.db')}` })
  await db.execute('PRAGMA busy_timeout = 10000')
  await insertVerifiedDomain(db, 'bench.test')
  const started = performance.now()
  for (let i = 0; i < DELIVER; i += 100) {
    const batch = Array.from({ length: Math.min(100, DELIVER - i) }, (_, j) => ({ from: 'Bench <bench@bench.test>', to: `user${i + j}@sink.test`, subject: `Bench ${i + j}`, text: 'Hello from the benchmark. '.repeat(8) }))
    const r = await api(m.url, 'POST', '/emails/batch', batch)
    if (r.status !== 200) throw new Error(`POST /emails/batch answered ${r.status}: ${await r.text()}`)
  }
  const enqueued = performance.now()
  const deliveredCount = async () => Number((await db.execute("select count(*) as n from deliveries where state = 'delivered'")).rows[0].n)
  const atEnqueued = await deliveredCount()
  let delivered = atEnqueued
  const deadline = Date.now() + 10 * 60_000
  while (delivered < DELIVER && Date.now() < deadline) {
    await Bun.sleep(200)
    delivered = await deliveredCount()
  }
  const finished = performance.now()
  const seconds = (finished - started) / 1000
  db.close()
  await stop(m.p)
  await sink.close()
  const bytes = Math.round(statSync(dump).size / delivered)
  rmSync(dirname(dump), { recursive: true, force: true })
  // Once every email is accepted the MTA has the cores to itself: its own rate, apart from the enqueueing's share
  // (none to measure when everything was delivered while the batches were still going in).
  const afterEnqueuePerSecond = delivered > atEnqueued ? (delivered - atEnqueued) / ((finished - enqueued) / 1000) : NaN
  return { perSecond: delivered / seconds, afterEnqueuePerSecond, delivered, enqueueSeconds: (enqueued - started) / 1000, seconds, bytes }
}

async function smtpSinkCeiling() {
  const sink = await startSink()
  const n = 20_000
  const seconds = await smtpSource(sink.port, n, { bytes: 5120 })
  await sink.close()
  return n / seconds
}

const PARTS = ['sends', 'metrics', 'delivery', 'inbound', 'webhooks', 'segments', 'broadcast', 'footprint', 'scaling'] as const
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').map((s) => s.trim()).filter(Boolean)
const unknown = ONLY.filter((p) => !(PARTS as readonly string[]).includes(p))
if (unknown.length) throw new Error(`BENCH_ONLY: unknown part ${unknown.join(', ')}; the parts are ${PARTS.join(', ')}`)
const runs = (part: (typeof PARTS)[number]) => !ONLY.length || ONLY.includes(part)

async function main() {
  if (!has('wrk')) throw new Error('wrk is missing: apt-get install wrk')
  console.log(`Mailroom benchmark on ${navigator.hardwareConcurrency} cores, ${SECONDS} s per load run; parts: ${PARTS.filter(runs).join(', ')}\n`)
  const noPostfix = postfixMissing()
  if (noPostfix && (runs('delivery') || runs('inbound'))) console.log(`  Postfix cannot run here: ${noPostfix}; its figures are left out`)
  if (runs('sends')) {
    const hello = await httpCeiling()
    report('Elysia hello (ceiling)', `${fmt(hello.requestsPerSec)} req/s`, '', '')
    const inserts = await insertCeiling()
    report('libSQL insert, 1 row/transaction, synchronous=FULL (ceiling)', `${fmt(inserts)} rows/s`, '', '')
    const sends = await acceptedSends()
    report('POST /emails accepted, 50 connections', `${fmt(sends.requestsPerSec)} /s`, `${fmt(hello.requestsPerSec)} req/s Elysia hello`, fmt(sends.requestsPerSec / hello.requestsPerSec, 3))
    report('POST /emails vs one-row inserts', `${fmt(sends.requestsPerSec)} /s`, `${fmt(inserts)} rows/s libSQL`, fmt(sends.requestsPerSec / inserts, 2))
    report('POST /emails latency p50 / p99', `${fmt(sends.p50ms, 2)} ms / ${fmt(sends.p99ms, 2)} ms`, '', '')
    if (sends.non2xx) report('POST /emails non-2xx replies', String(sends.non2xx), '', '')
    report('server memory at rest (VmRSS, 2 s idle after boot)', `${fmt(sends.restMb)} MB`, '', '')
    report('server memory under load (VmHWM by the end of the sends run)', `${fmt(sends.peakMb)} MB`, '', '')
  }
  if (runs('metrics')) {
    const m = await metricsLatency(EVENTS, SECONDS)
    report(`recordEvents with rollups, seeding ${fmt(m.events)} events (${fmt(m.rollupRows)} rollup rows)`, `${fmt(m.seedPerSecond)} events/s`, '', '')
    for (const q of m.queries) {
      report(`${q.name}, over ${fmt(m.events)} events, 1 connection: p50 / p99`, `${fmt(q.r.p50ms, 2)} ms / ${fmt(q.r.p99ms, 2)} ms`, `GET /api-keys?limit=1 p99 ${fmt(m.floor.p99ms, 2)} ms`, fmt(m.floor.p99ms / q.r.p99ms, 2))
    }
  }
  const sinkMissing = !has('smtp-sink') || !has('smtp-source')
  if (sinkMissing && (runs('delivery') || runs('inbound'))) console.log('  smtp-sink or smtp-source missing (apt-get install postfix): delivery and inbound figures skipped')
  const ceiling = !sinkMissing && (runs('delivery') || runs('inbound')) ? await smtpSinkCeiling() : NaN
  if (!sinkMissing && runs('delivery')) {
    const d = await deliveredPerSecond()
    const what = `delivered into smtp-sink (${fmt(d.delivered)} DKIM-signed messages of ${fmt(d.bytes)} bytes via relay)`
    report(what, `${fmt(d.perSecond)} msgs/s`, `${fmt(ceiling)} msgs/s smtp-source into smtp-sink`, fmt(d.perSecond / ceiling, 3))
    report(`${what}, after the last was accepted (enqueued in ${fmt(d.enqueueSeconds, 1)} s)`, `${fmt(d.afterEnqueuePerSecond)} msgs/s`, `${fmt(ceiling)} msgs/s smtp-source into smtp-sink`, fmt(d.afterEnqueuePerSecond / ceiling, 3))
    if (!noPostfix) {
      const pf = await postfixRelay(DELIVER, d.bytes)
      report(`${what}, against Postfix relaying the same count and size into the same sink`, `${fmt(d.perSecond)} msgs/s`, `${fmt(pf.perSecond)} msgs/s Postfix (${fmt(pf.relayed)} relayed)`, fmt(d.perSecond / pf.perSecond, 2))
    }
  }
  if (!sinkMissing && runs('inbound')) {
    // A connection per message twice: 20 senders at once (each waits out the 100 ms greeting pause), and 100, as a listener meets many senders.
    for (const [reuse, sessions] of [[true, 20], [false, 20], [false, 100]] as const) {
      const r = await inboundPerSecond(RECEIVE, reuse, sessions)
      const how = `${reuse ? 'connections reused' : 'a connection per message'}, ${sessions} sessions`
      const what = `received over SMTP from smtp-source, ${how} (${fmt(r.stored)} of ${fmt(r.sent)} stored, parsed, authenticated; resolver ${r.resolver})`
      report(what, `${fmt(r.perSecond)} msgs/s`, `${fmt(ceiling)} msgs/s smtp-sink`, fmt(r.perSecond / ceiling, 3))
      if (!noPostfix) {
        const pf = await postfixInbound(RECEIVE, reuse, sessions)
        report(`${what}, against Postfix queueing the same load (relayed on to smtp-sink)`, `${fmt(r.perSecond)} msgs/s`, `${fmt(pf.perSecond)} msgs/s Postfix (${fmt(pf.relayed)} of ${fmt(pf.accepted)} relayed)`, fmt(r.perSecond / pf.perSecond, 2))
      }
    }
  }
  if (runs('webhooks')) {
    const w = await webhookDeliveriesPerSecond(WEBHOOKS)
    report(`webhook deliveries to a receiver on loopback (${fmt(w.delivered)} signed events, ${w.concurrency} in flight)`, `${fmt(w.perSecond)} /s`, `${fmt(w.ceiling)} req/s into the same receiver`, fmt(w.perSecond / w.ceiling, 3))
  }
  if (runs('segments')) {
    const seg = await segmentResolution(CONTACTS)
    const scan = `${fmt(seg.scan.ms, 1)} ms reading every contact id`
    report(`rule segment members (property, topic answer, opened in 30 days) of ${fmt(seg.contacts)} contacts, ${fmt(seg.events)} events, via segmentFilter`, `${fmt(seg.rule.ms, 1)} ms`, scan, fmt(seg.scan.ms / seg.rule.ms, 2))
    report(`static segment members (${fmt(seg.stat.value)} of ${fmt(seg.contacts)} contacts) via segmentFilter`, `${fmt(seg.stat.ms, 1)} ms`, scan, fmt(seg.scan.ms / seg.stat.ms, 2))
  }
  if (runs('broadcast')) {
    for (const recipients of has('smtp-sink') ? (['simulator', 'sink'] as const) : (['simulator'] as const)) {
      const b = await broadcastFanout(CONTACTS, SECONDS, recipients)
      const what = `broadcast to ${fmt(b.contacts)} contacts (${recipients === 'sink' ? 'real addresses, delivered DKIM-signed into smtp-sink meanwhile' : 'simulator addresses'})`
      report(`${what}: send reply (recipients counted) / every email enqueued`, `${fmt(b.replyMs)} ms / ${fmt(b.enqueueSeconds, 1)} s`, 'target 10 s', fmt(10 / b.enqueueSeconds, 2))
      report(`${what}: server peak memory`, `${fmt(b.rssAfterMb)} MB (${fmt(b.rssBeforeMb)} MB before)`, '', '')
      report(`${what}: POST /emails p50 / p99 while it fans out`, `${fmt(b.during.p50ms, 1)} ms / ${fmt(b.during.p99ms, 1)} ms`, `alone ${fmt(b.alone.p50ms, 1)} ms / ${fmt(b.alone.p99ms, 1)} ms`, fmt(b.alone.p99ms / b.during.p99ms, 2))
    }
  }
  if (runs('footprint')) {
    const f = await footprint()
    report('compiled binary (npm run build)', `${fmt(f.mb, 1)} MB`, '', '')
    report('cold start, spawn to first 200 on /health, median of 5: fresh data folder / existing one', `${fmt(f.freshMs)} ms / ${fmt(f.existingMs)} ms`, '', '')
    report('binary memory at rest (VmRSS 1 s after its first answer, median of 5)', `${fmt(f.restMb)} MB`, '', '')
  }
  if (runs('scaling')) scaled(await scaling(SCALE_SIZES, SECONDS, SCALE_SEED_MINUTES, (line) => console.log(`  scaling: ${line}`)))
  console.log('\n| figure | value | ceiling or Postfix | ratio | load average |\n| --- | --- | --- | --- | --- |')
  for (const r of rows) console.log(`| ${r.join(' | ')} |`)
}

/**
 * Each figure at each size, then its ratio from the smallest size to the largest
 * (how many times slower), flagged past the factor of two allowed.
 */
function scaled(steps: ScaleStep[]) {
  const label = (s: ScaleStep) => `${fmt(s.emails)} emails${s.short ? ` (seeding stopped at the ${SCALE_SEED_MINUTES}-minute limit)` : ''}`
  for (const s of steps) report(`scaling: seeded ${label(s)}, ${fmt(s.events)} events, with rollups`, `${fmt(s.seedSeconds)} s (${fmt(s.seedEmailsPerSecond)} emails/s)`, '', '')
  const first = steps[0]
  const last = steps[steps.length - 1]
  const growth = (slower: number) => `${fmt(slower, 2)}${slower > 2 ? ' OVER 2' : ''}`
  const across = (get: (s: ScaleStep) => string) => steps.map((s) => `${fmt(s.emails)}: ${get(s)}`).join('; ')
  report('scaling: POST /emails at 50 connections, sends/s', across((s) => fmt(s.sends.requestsPerSec)), '', growth(first.sends.requestsPerSec / last.sends.requestsPerSec))
  report('scaling: POST /emails at 50 connections, p99', across((s) => `${fmt(s.sends.p99ms, 1)} ms`), '', growth(last.sends.p99ms / first.sends.p99ms))
  first.reads.forEach((q, i) => {
    report(`scaling: ${q.name}, 1 connection, p50`, across((s) => `${fmt(s.reads[i].r.p50ms, 2)} ms`), '', growth(last.reads[i].r.p50ms / q.r.p50ms))
    report(`scaling: ${q.name}, 1 connection, p99`, across((s) => `${fmt(s.reads[i].r.p99ms, 2)} ms`), '', growth(last.reads[i].r.p99ms / q.r.p99ms))
  })
}

await main()
