// `npm run bench`: measures Mailroom on this machine and prints each figure beside a
// ceiling measured in the same run (never as a pass/fail test). Needs wrk and
// Postfix's smtp-sink (Debian: apt-get install wrk postfix).
import { createClient } from '@libsql/client'
import { join } from 'node:path'
import { broadcastFanout } from './broadcast'
import { inboundPerSecond } from './inbound'
import { metricsLatency } from './metrics'
import { segmentResolution } from './segments'
import { api, BUN, fmt, freePort, has, insertVerifiedDomain, sendScript, startMailroom, startProcess, stop, tempDir, waitFor, wrk } from './lib'
import { webhookDeliveriesPerSecond } from './webhooks'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const DELIVER = Number(process.env.BENCH_DELIVER ?? 10_000)
const RECEIVE = Number(process.env.BENCH_RECEIVE ?? 5_000)
const WEBHOOKS = Number(process.env.BENCH_WEBHOOKS ?? 10_000)
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000)
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000)
const rows: [string, string, string, string][] = []
const report = (what: string, value: string, ceiling: string, ratio: string) => {
  rows.push([what, value, ceiling, ratio])
  console.log(`  ${what}: ${value}${ceiling ? `  (ceiling ${ceiling}, ratio ${ratio})` : ''}`)
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

async function acceptedSends() {
  const m = await startMailroom({ MAILROOM_DELIVERY: 'capture' })
  const script = sendScript(m.dir)
  const check = await api(m.url, 'POST', '/emails', { from: 'bench@bench.test', to: 'delivered@simulator.test', subject: 'x', text: 'y' })
  if (check.status !== 200) throw new Error(`POST /emails answered ${check.status}: ${await check.text()}`)
  const r = await wrk(`${m.url}/emails`, { seconds: SECONDS, script })
  await stop(m.p)
  return r
}

/** Mail handed to Postfix's smtp-sink through relay mode, DKIM-signed with a verified domain. */
async function deliveredPerSecond() {
  const sinkPort = await freePort()
  const sink = startProcess(['smtp-sink', '-u', process.env.USER ?? 'root', `127.0.0.1:${sinkPort}`, '1000'], {})
  await Bun.sleep(300)
  const m = await startMailroom({ MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: `smtp://127.0.0.1:${sinkPort}` })
  const db = createClient({ url: `file:${join(m.dir, 'mailroom.db')}` })
  await insertVerifiedDomain(db, 'bench.test')
  const started = performance.now()
  for (let i = 0; i < DELIVER; i += 100) {
    const batch = Array.from({ length: Math.min(100, DELIVER - i) }, (_, j) => ({ from: 'Bench <bench@bench.test>', to: `user${i + j}@sink.test`, subject: `Bench ${i + j}`, text: 'Hello from the benchmark. '.repeat(8) }))
    const r = await api(m.url, 'POST', '/emails/batch', batch)
    if (r.status !== 200) throw new Error(`POST /emails/batch answered ${r.status}: ${await r.text()}`)
  }
  const enqueued = performance.now()
  let delivered = 0
  const deadline = Date.now() + 10 * 60_000
  while (delivered < DELIVER && Date.now() < deadline) {
    await Bun.sleep(200)
    delivered = Number((await db.execute("select count(*) as n from deliveries where state = 'delivered'")).rows[0].n)
  }
  const seconds = (performance.now() - started) / 1000
  db.close()
  await stop(m.p)
  await stop(sink)
  return { perSecond: delivered / seconds, delivered, enqueueSeconds: (enqueued - started) / 1000, seconds }
}

async function smtpSinkCeiling() {
  if (!has('smtp-source')) return NaN
  const sinkPort = await freePort()
  const sink = startProcess(['smtp-sink', '-u', process.env.USER ?? 'root', `127.0.0.1:${sinkPort}`, '1000'], {})
  await Bun.sleep(300)
  const n = 20_000
  const t0 = performance.now()
  const src = startProcess(['smtp-source', '-s', '20', '-m', String(n), '-l', '5120', '-f', 'a@bench.test', '-t', 'b@sink.test', `127.0.0.1:${sinkPort}`], {})
  await src.exited
  const rate = n / ((performance.now() - t0) / 1000)
  await stop(sink)
  return rate
}

async function main() {
  if (!has('wrk')) throw new Error('wrk is missing: apt-get install wrk')
  console.log(`Mailroom benchmark on ${navigator.hardwareConcurrency} cores, ${SECONDS} s per load run\n`)
  const hello = await httpCeiling()
  report('Elysia hello (ceiling)', `${fmt(hello.requestsPerSec)} req/s`, '', '')
  const inserts = await insertCeiling()
  report('libSQL insert, 1 row/transaction, synchronous=FULL (ceiling)', `${fmt(inserts)} rows/s`, '', '')
  const sends = await acceptedSends()
  report('POST /emails accepted, 50 connections', `${fmt(sends.requestsPerSec)} /s`, `${fmt(hello.requestsPerSec)} req/s`, fmt(sends.requestsPerSec / hello.requestsPerSec, 3))
  report('POST /emails vs one-row inserts', `${fmt(sends.requestsPerSec)} /s`, `${fmt(inserts)} rows/s`, fmt(sends.requestsPerSec / inserts, 2))
  report('POST /emails latency p50 / p99', `${fmt(sends.p50ms, 2)} ms / ${fmt(sends.p99ms, 2)} ms`, '', '')
  if (sends.non2xx) report('POST /emails non-2xx replies', String(sends.non2xx), '', '')
  const m = await metricsLatency(EVENTS, SECONDS)
  report(`recordEvents with rollups, seeding ${fmt(m.events)} events (${fmt(m.rollupRows)} rollup rows)`, `${fmt(m.seedPerSecond)} events/s`, '', '')
  for (const q of m.queries) {
    report(`${q.name}, over ${fmt(m.events)} events, 1 connection: p50 / p99`, `${fmt(q.r.p50ms, 2)} ms / ${fmt(q.r.p99ms, 2)} ms`, `GET /api-keys?limit=1 p99 ${fmt(m.floor.p99ms, 2)} ms`, fmt(m.floor.p99ms / q.r.p99ms, 2))
  }
  if (has('smtp-sink')) {
    const ceiling = await smtpSinkCeiling()
    const d = await deliveredPerSecond()
    report(`delivered into smtp-sink (${fmt(d.delivered)} DKIM-signed messages via relay)`, `${fmt(d.perSecond)} msgs/s`, `${fmt(ceiling)} msgs/s smtp-source`, fmt(d.perSecond / ceiling, 3))
    for (const reuse of [true, false]) {
      const r = await inboundPerSecond(RECEIVE, reuse)
      const how = reuse ? 'connections reused' : 'a connection per message'
      report(`received over SMTP from smtp-source, ${how} (${fmt(r.stored)} of ${fmt(r.sent)} stored, parsed, authenticated; resolver ${r.resolver})`, `${fmt(r.perSecond)} msgs/s`, `${fmt(ceiling)} msgs/s smtp-sink`, fmt(r.perSecond / ceiling, 3))
    }
  } else {
    console.log('  smtp-sink missing (apt-get install postfix): delivery figures skipped')
  }
  const w = await webhookDeliveriesPerSecond(WEBHOOKS)
  report(`webhook deliveries to a receiver on loopback (${fmt(w.delivered)} signed events, ${w.concurrency} in flight)`, `${fmt(w.perSecond)} /s`, `${fmt(w.ceiling)} req/s into the same receiver`, fmt(w.perSecond / w.ceiling, 3))
  const seg = await segmentResolution(CONTACTS)
  const ceiling = `${fmt(seg.scan.ms, 1)} ms reading every contact id`
  report(`rule segment members (property, topic answer, opened in 30 days) of ${fmt(seg.contacts)} contacts, ${fmt(seg.events)} events, via segmentFilter`, `${fmt(seg.rule.ms, 1)} ms`, ceiling, fmt(seg.scan.ms / seg.rule.ms, 2))
  report(`static segment members (${fmt(seg.stat.value)} of ${fmt(seg.contacts)} contacts) via segmentFilter`, `${fmt(seg.stat.ms, 1)} ms`, ceiling, fmt(seg.scan.ms / seg.stat.ms, 2))
  for (const recipients of has('smtp-sink') ? (['simulator', 'sink'] as const) : (['simulator'] as const)) {
    const b = await broadcastFanout(CONTACTS, SECONDS, recipients)
    const what = `broadcast to ${fmt(b.contacts)} contacts (${recipients === 'sink' ? 'real addresses, delivered DKIM-signed into smtp-sink meanwhile' : 'simulator addresses'})`
    report(`${what}: send reply (recipients counted) / every email enqueued`, `${fmt(b.replyMs)} ms / ${fmt(b.enqueueSeconds, 1)} s`, 'target 10 s', fmt(10 / b.enqueueSeconds, 2))
    report(`${what}: server peak memory`, `${fmt(b.rssAfterMb)} MB (${fmt(b.rssBeforeMb)} MB before)`, '', '')
    report(`${what}: POST /emails p50 / p99 while it fans out`, `${fmt(b.during.p50ms, 1)} ms / ${fmt(b.during.p99ms, 1)} ms`, `alone ${fmt(b.alone.p50ms, 1)} ms / ${fmt(b.alone.p99ms, 1)} ms`, fmt(b.alone.p99ms / b.during.p99ms, 2))
  }
  console.log('\n| figure | value | ceiling | ratio |\n| --- | --- | --- | --- |')
  for (const r of rows) console.log(`| ${r.join(' | ')} |`)
}

await main()
