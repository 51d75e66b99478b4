// Two Mailroom processes (`bun src/index.ts`) on one libSQL server (sqld), the way
// several instances run behind a load balancer: sends spread over both, the same
// Idempotency-Key sent to both at once, scheduled sends, a webhook endpoint. Every
// email arrives exactly once at one SMTP sink, both instances deliver, every
// scheduled send fires once, every webhook event arrives once, and the
// deployment-wide jobs run once per tick.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createClient, type Client } from '@libsql/client'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { openRoot } from '../src/boot'
import { freePort, killAll, listeningUrl, start, type Started } from '../src/build/process'
import { loadConfig } from '../src/config'
import type { RootDeps } from '../src/deps'
import { Scheduler, type Job } from '../src/jobs'
import { insertDomain } from './support/delivery-fixtures'
import { pool } from './support/faults'
import { silentLog } from './support/harness'
import { startSmtpSink, type SmtpSink } from './support/smtp-sink'
import { SQLD, startSqld } from './support/sqld'
import { startReceiver, type Receiver } from './support/webhook-receiver'

const ROOT = resolve(import.meta.dir, '..')
const ENTRY = join(ROOT, 'src/index.ts')
const BOOT_MS = 20_000
const SENDS = 300
const SCHEDULED = 50
const PAIRS = 20
const TOTAL = SENDS + SCHEDULED + PAIRS

const work = mkdtempSync(join(tmpdir(), 'mailroom-multi-'))
let dbUrl = ''
let sink: SmtpSink
let rx: Receiver
let db: Client
/** The test's own view of the shared database (fixtures and the scheduler check). */
let root: RootDeps

beforeAll(async () => {
  if (!SQLD) return
  dbUrl = (await startSqld(work)).url
  sink = await startSmtpSink({ starttls: false })
  rx = await startReceiver()
  db = createClient({ url: dbUrl })
})

afterAll(async () => {
  killAll()
  root?.db.close()
  db?.close()
  await sink?.close()
  await rx?.close()
  rmSync(work, { recursive: true, force: true })
})

interface Instance {
  p: Started
  url: string
}

async function startInstance(name: string): Promise<Instance> {
  const cwd = join(work, name)
  mkdirSync(cwd)
  const p = start([process.execPath, ENTRY], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: cwd,
      TMPDIR: tmpdir(),
      PORT: String(freePort()),
      MAILROOM_DATABASE_URL: dbUrl,
      MAILROOM_SMTP_PORT: '0',
      MAILROOM_SMTP_HOST: '127.0.0.1',
      MAILROOM_HOSTNAME: `${name}.mailroom.test`,
      MAILROOM_DELIVERY: 'relay',
      MAILROOM_RELAY_URL: sink.url(),
      MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true',
      MAILROOM_TRUST_START_LEVEL: 'trusted',
      // Exactly what the test sends: the quota is counted in the database, so it holds across both.
      MAILROOM_MONTHLY_QUOTA: String(TOTAL),
      MAILROOM_DNSBL_ZONES: '',
      MAILROOM_DBL_ZONES: '',
    },
  })
  return { p, url: await listeningUrl(p, BOOT_MS) }
}

interface Reply {
  status: number
  body: any
  text: string
}

async function call(i: Instance, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(`${i.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  })
  const text = await res.text()
  return { status: res.status, text, body: text ? JSON.parse(text) : null }
}

async function until(what: string, ms: number, check: () => Promise<boolean> | boolean) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`)
    await Bun.sleep(100)
  }
}

const subjectOf = (raw: Buffer) => raw.toString('latin1').match(/^Subject: (.*)$/m)?.[1].trim() ?? ''
const openShared = () => openRoot(loadConfig({ MAILROOM_DATA_DIR: work, MAILROOM_DATABASE_URL: dbUrl }), { log: silentLog })
const rows = async (text: string, args: (string | number)[] = []) => (await db.execute({ sql: text, args })).rows

describe.skipIf(!SQLD)('two instances on one libSQL server', () => {
  test('share sends, deliveries, idempotency, scheduled sends and webhooks with nothing twice and nothing lost', async () => {
    // The first instance alone first: it migrates the database and makes the owner's key.
    const a = await startInstance('a')
    const [, key] = await a.p.waitFor(/^API key: (mr_\S+)$/m, 5000)
    const b = await startInstance('b')
    const both = [a, b]

    root = await openShared()
    const [account] = await rows('SELECT id FROM accounts')
    await insertDomain(root, String(account.id), 'acme.test')
    const hook = await call(a, key, 'POST', '/webhooks', { url: rx.url, events: ['email.delivered'] })
    expect(hook.status, hook.text).toBe(201)

    const send = (i: Instance, subject: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
      call(i, key, 'POST', '/emails', { from: 'Acme <hello@acme.test>', to: `${subject}@example.net`, subject, text: `marker ${subject}`, ...extra }, headers)

    // Scheduled a few seconds ahead, alternately on each instance: they fire while the rest is being delivered.
    const fireAt = new Date(Date.now() + 5000).toISOString()
    const scheduled = await pool([...Array(SCHEDULED).keys()], 8, (n) => send(both[n % 2], `sched-${n}`, { scheduled_at: fireAt }))
    for (const r of scheduled) expect(r.status, r.text).toBe(200)

    // The same key to both instances at once: one email, and the same answer from both (or one
    // idempotency_in_flight, after which the retry replays the first answer).
    const pairs = await pool([...Array(PAIRS).keys()], 4, async (n) => {
      const headers = { 'Idempotency-Key': `pair-${n}` }
      const replies = await Promise.all(both.map((i) => send(i, `pair-${n}`, {}, headers)))
      for (const [j, r] of replies.entries()) {
        if (r.status === 409) {
          expect(r.body).toMatchObject({ code: 'idempotency_in_flight' })
          await until(`pair-${n} replayed`, 10_000, async () => (replies[j] = await send(both[j], `pair-${n}`, {}, headers)).status !== 409)
        }
      }
      return replies
    })
    for (const [x, y] of pairs) {
      expect(x.status, x.text).toBe(200)
      expect(y.status).toBe(x.status)
      expect(y.body).toEqual(x.body)
    }

    const sent = await pool([...Array(SENDS).keys()], 16, (n) => send(both[n % 2], `bulk-${n}`))
    for (const r of sent) expect(r.status, r.text).toBe(200)

    await sink.waitFor(TOTAL, 60_000)
    // Everything settled: nothing left due or leased that could still arrive a second time.
    await until('every delivery settled', 20_000, async () => Number((await rows("SELECT count(*) AS n FROM deliveries WHERE state <> 'delivered' OR lease_owner IS NOT NULL"))[0].n) === 0)
    const bySubject = new Map<string, number>()
    for (const m of sink.messages) bySubject.set(subjectOf(m.raw), (bySubject.get(subjectOf(m.raw)) ?? 0) + 1)
    expect(sink.messages).toHaveLength(TOTAL)
    expect(bySubject.size).toBe(TOTAL)
    expect([...bySubject.values()].every((n) => n === 1)).toBe(true)
    expect(Number((await rows('SELECT count(*) AS n FROM emails'))[0].n)).toBe(TOTAL)
    // Half the quota was spent on each instance; neither lets one more through.
    for (const i of both) expect((await send(i, 'one-too-many')).body).toMatchObject({ code: 'monthly_quota_exceeded' })

    // Both instances' workers delivered, and each attempt names its worker (host:pid:…).
    const workers = await rows('SELECT worker, count(*) AS n FROM delivery_attempts GROUP BY worker')
    const byPid = new Map(workers.map((w) => [Number(String(w.worker).split(':')[1]), Number(w.n)]))
    expect(Number((await rows('SELECT count(*) AS n FROM delivery_attempts'))[0].n)).toBe(TOTAL)
    expect([...byPid.keys()].sort()).toEqual([a.p.proc.pid, b.p.proc.pid].sort())
    for (const n of byPid.values()) expect(n).toBeGreaterThan(TOTAL / 10)
    // Which instance sent it also shows in the EHLO name each gave the relay.
    expect(new Set(sink.messages.map((m) => m.helo))).toEqual(new Set(['a.mailroom.test', 'b.mailroom.test']))
    const explained = await call(b, key, 'GET', `/emails/${sent[0].body.id}/explain`)
    expect(explained.body.deliveries[0].history).toEqual([expect.objectContaining({ outcome: 'delivered', worker: expect.stringMatching(new RegExp(`:(${a.p.proc.pid}|${b.p.proc.pid}):`)) })])

    // Each scheduled send fired once, not before its time.
    const fired = await rows("SELECT e.subject AS subject, count(*) AS n, min(a.started_at) AS at FROM delivery_attempts a JOIN emails e ON e.id = a.email_id WHERE e.subject LIKE 'sched-%' GROUP BY e.id")
    expect(fired).toHaveLength(SCHEDULED)
    for (const f of fired) {
      expect(Number(f.n)).toBe(1)
      expect(String(f.at) >= fireAt).toBe(true)
    }

    // Every email.delivered event reached the endpoint once (each webhook-id once, each email once).
    await until('every webhook event received', 30_000, () => rx.received.length >= TOTAL)
    await Bun.sleep(500)
    const ids = rx.received.map((r) => r.headers['webhook-id'])
    const emailsNotified = rx.received.map((r) => JSON.parse(r.body).data.email_id)
    expect(rx.received).toHaveLength(TOTAL)
    expect(new Set(ids).size).toBe(TOTAL)
    expect(new Set(emailsNotified).size).toBe(TOTAL)

    // Both stop cleanly, handing back what they hold.
    expect(await a.p.stop()).toBe(0)
    expect(await b.p.stop()).toBe(0)
  }, 90_000)

  test('a deployment-wide job runs once per tick however many instances schedule it', async () => {
    const ran: string[] = []
    const job = (who: string): Job => ({ name: 'count-ticks', pattern: '* * * * * *', run: async () => void ran.push(who) })
    const [x, y] = [await openShared(), await openShared()]
    const schedulers = [new Scheduler(x, [job('x')]).start(), new Scheduler(y, [job('y')]).start()]
    try {
      await Bun.sleep(3300)
    } finally {
      for (const s of schedulers) s.stop()
    }
    await Bun.sleep(300)
    x.db.close()
    y.db.close()
    const [tick] = await rows("SELECT tick, owner FROM job_ticks WHERE name = 'count-ticks'")
    // Three or four ticks in 3.3 s, each run by one scheduler only.
    expect(ran.length).toBeGreaterThanOrEqual(3)
    expect(ran.length).toBeLessThanOrEqual(4)
    expect([schedulers[0].id, schedulers[1].id]).toContain(String(tick.owner))
  }, 20_000)
})
