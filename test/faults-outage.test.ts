// Outages with an injected clock (issue 10, "Faults"): the relay (a real SMTP sink)
// down for ten minutes with 300 emails queued, and a webhook receiver (a real HTTP
// server) down for an hour while fifty emails keep producing events. The clock moves
// by hand and the worker and dispatcher run as it passes (one test runs the worker's
// own loop, polling real time only to see it act).
//
// The claims: no email lost or sent twice, no attempt burned by the outage, delivery
// resuming within a minute of the relay's return; every webhook event delivered
// afterwards, signed, once, in the order it happened per email, and the endpoint
// still enabled.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq, gt } from 'drizzle-orm'
import { auditEntries, deliveries, deliveryAttempts, emailEvents, webhookAttempts, webhookDeliveries, webhookEndpoints } from '../src/db/tables'
import { HOUR, iso } from '../src/lib/clock'
import { clickToken, openToken } from '../src/tracking/links'
import { DeliveryWorker } from '../src/delivery/worker'
import { message, simulated, verifiedDomain } from './support/emails'
import { harness, type Harness } from './support/harness'
import { until } from './support/inbound'
import { startSmtpSink, type SmtpSink } from './support/smtp-sink'
import { startReceiver, verifyDelivery, type Receiver } from './support/webhook-receiver'
import { advanceToNextDue, makeEndpoint, rowsByState, type Endpoint } from './support/webhooks'

const SEC = 1000
const MIN = 60 * SEC

/** A harness delivering through a relay (a real SMTP sink on loopback) from the verified acme.dev. */
async function relayed() {
  const sink = await startSmtpSink({ auth: { user: 'mailroom', pass: 's3cret' } })
  const h = await harness({ MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: sink.url(), MAILROOM_HOSTNAME: 'mta.mailroom.test', MAILROOM_RATE_LIMIT: '100000' })
  await verifiedDomain(h)
  return { sink, h }
}

/** `n` receipts to distinct customers, sent through the API 100 at a time; their ids. */
async function sendReceipts(h: Harness, n: number) {
  const ids: string[] = []
  for (let b = 0; b < n; b += 100) {
    const batch = Array.from({ length: Math.min(100, n - b) }, (_, i) => message({ to: `r${b + i}@customer.io`, subject: `Receipt ${b + i}` }))
    const r = await h.call('POST', '/emails/batch', { body: batch })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    ids.push(...r.body.data.map((d: { id: string }) => d.id))
  }
  return ids
}

/** The header field `name` of a raw message. */
const headerOf = (raw: Buffer, name: string) => raw.toString('latin1').match(new RegExp(`^${name}:\\s*(.+)$`, 'im'))?.[1]?.trim()

describe('the relay down for ten minutes with 300 emails queued, then back', () => {
  const EMAILS = 300
  const STEP = 5 * SEC
  let h: Harness
  let sink: SmtpSink
  let ids: string[] = []
  let downAt = 0
  let backAt = 0
  /** The longest the breaker ever paused the queue for. */
  let longestPause = 0
  /** Rows claimed by each run that took any while the relay was down: the first batch, then the probes. */
  const claims: number[] = []
  /** The outbox and event record as the outage left them, just before the relay came back. */
  let atReturn: { states: Record<string, number>; attempts: number; events: string[]; sinkMessages: number; tries: number }

  beforeAll(async () => {
    ;({ sink, h } = await relayed())
    ids = await sendReceipts(h, EMAILS)

    await sink.stop()
    downAt = h.clock.now()
    const step = async () => {
      const n = await h.worker.runOnce()
      if (n) claims.push(n)
      const now = h.clock.now()
      if (h.worker.breaker.isOpen(now)) longestPause = Math.max(longestPause, h.worker.breaker.resumeAt - now)
    }
    while (h.clock.now() < downAt + 10 * MIN) {
      await step()
      h.clock.advance(STEP)
    }
    // Back at the worst moment: right after a probe found it still down, so the breaker has its longest pause ahead.
    for (const before = claims.length; ; h.clock.advance(STEP)) {
      await step()
      if (claims.length > before) break
    }

    const db = h.root.db.q
    const rows = await db.select({ state: deliveries.state, attempts: deliveries.attempts }).from(deliveries)
    const states: Record<string, number> = {}
    for (const r of rows) states[r.state] = (states[r.state] ?? 0) + 1
    atReturn = {
      states,
      attempts: rows.reduce((n, r) => n + r.attempts, 0),
      events: [...new Set((await db.select({ type: emailEvents.type }).from(emailEvents)).map((e) => e.type))],
      sinkMessages: sink.messages.length,
      tries: (await db.select().from(deliveryAttempts)).length,
    }

    await sink.restart()
    backAt = h.clock.now()
    for (let i = 0; i < 100 && sink.messages.length < EMAILS; i++) {
      h.clock.advance(STEP)
      await h.worker.runOnce()
    }
  }, 60_000)

  afterAll(async () => {
    await h?.close()
    await sink?.close()
  })

  test('while it was down nothing was spent: every email queued, no attempt counted, no event but queued, one message per probe', () => {
    expect(backAt - downAt).toBeGreaterThanOrEqual(10 * MIN)
    expect(atReturn).toMatchObject({ states: { queued: EMAILS }, attempts: 0, events: ['queued'], sinkMessages: 0 })
    // The first batch found it down (what was already in the transport's hands is on record); after that each pause ended with one message probing the relay, not a batch.
    const [first, ...probes] = claims
    expect(first).toBeGreaterThan(1)
    expect(probes.length).toBeGreaterThan(5)
    expect(probes.every((n) => n === 1)).toBe(true)
    expect(atReturn.tries - probes.length).toBeGreaterThanOrEqual(1)
    expect(atReturn.tries - probes.length).toBeLessThanOrEqual(h.config.deliveryConcurrency)
    // Pauses are capped at a minute, so the relay's return is noticed within one.
    expect(longestPause).toBeLessThanOrEqual(MIN)
  })

  test('every email arrived exactly once', () => {
    expect(sink.messages).toHaveLength(EMAILS)
    expect(new Set(sink.messages.map((m) => m.to.join(','))).size).toBe(EMAILS)
    expect(new Set(sink.messages.map((m) => headerOf(m.raw, 'Message-ID'))).size).toBe(EMAILS)
    expect(new Set(sink.messages.map((m) => headerOf(m.raw, 'Subject'))).size).toBe(EMAILS)
  })

  test('explain shows one attempt each: the outage’s probes are network errors outside the count, and the schedule never started', async () => {
    let probed = 0
    for (const id of ids) {
      const r = await h.call('GET', `/emails/${id}/explain`)
      expect(r.status).toBe(200)
      const [d] = r.body.deliveries
      expect(d).toMatchObject({ state: 'delivered', attempts: 1, next_attempt_at: null, last_code: 250 })
      const outcomes = d.history.map((a: { outcome: string }) => a.outcome)
      expect(outcomes.at(-1)).toBe('delivered')
      expect(outcomes.slice(0, -1).every((o: string) => o === 'network_error')).toBe(true)
      probed += outcomes.length - 1
      // A deferral would have meant delivery_delayed and a place on the retry schedule.
      const events = await h.call('GET', `/emails/${id}/events`, { query: { limit: 10 } })
      expect(events.body.data.map((e: { type: string }) => e.type)).toEqual(['queued', 'sent', 'delivered'])
    }
    expect(probed).toBe(atReturn.tries)
  })

  test('delivery resumed within a minute of the relay coming back', async () => {
    const delivered = await h.root.db.q.select({ at: deliveryAttempts.startedAt }).from(deliveryAttempts).where(eq(deliveryAttempts.outcome, 'delivered'))
    expect(delivered).toHaveLength(EMAILS)
    const first = Math.min(...delivered.map((a) => Date.parse(a.at)))
    expect(first).toBeGreaterThan(backAt)
    expect(first - backAt).toBeLessThanOrEqual(MIN)
    // And once the probe got through, the whole queue went in the same run.
    expect(Math.max(...delivered.map((a) => Date.parse(a.at))) - first).toBeLessThanOrEqual(STEP)
  })
})

describe('the running worker (start()) through the same kind of outage', () => {
  test('after each pause one message alone probes the relay; once it is back everything goes, once, with one attempt each', async () => {
    const { sink, h } = await relayed()
    const w = new DeliveryWorker(h.root, { pollMs: 20 })
    const tries = async () => (await h.root.db.q.select().from(deliveryAttempts)).length
    /** The attempts on record once the recorder has caught up: one for every message handed to the transport. */
    const settled = () => until(async () => ((await tries()) === w.sentCount ? w.sentCount : undefined))
    try {
      await sink.stop()
      const ids = await sendReceipts(h, 40)
      w.start()
      await until(async () => (w.breaker.tripCount >= 1 ? true : undefined))
      const first = await settled()
      expect(first).toBeGreaterThanOrEqual(1)
      for (let pause = 1; pause <= 3; pause++) {
        h.clock.set(w.breaker.resumeAt)
        await until(async () => (w.breaker.tripCount > pause ? true : undefined))
        expect(await settled()).toBe(first + pause)
      }
      await sink.restart()
      h.clock.set(w.breaker.resumeAt)
      await sink.waitFor(ids.length)
      await until(async () => ((await h.root.db.q.select().from(deliveries).where(eq(deliveries.state, 'delivered'))).length === ids.length ? true : undefined))
      expect(sink.messages).toHaveLength(ids.length)
      expect(await settled()).toBe(first + 3 + ids.length)
      for (const r of await h.root.db.q.select().from(deliveries)) expect(r.attempts).toBe(1)
    } finally {
      await w.stop()
      await h.close()
      await sink.close()
    }
  }, 30_000)
})

describe('a webhook receiver down for an hour while fifty emails keep producing events', () => {
  const EMAILS = 50
  const KINDS = ['email.sent', 'email.delivered', 'email.delivery_delayed', 'email.opened', 'email.clicked']
  let h: Harness
  let rx: Receiver
  let hook: Endpoint
  const ids: string[] = []
  let downAt = 0
  let backAt = 0
  let atReturn: { states: Record<string, number>; endpoint: { disabled: boolean; failingSince: string | null }; reached: number; refused: number; tried: Map<string, string[]> }

  /** Every third email is delayed a minute by the simulator. */
  const recipient = (m: number) => `${m % 3 === 0 ? 'delayed' : 'delivered'}+m${m}@simulator.test`

  /** Fetches the open pixel or follows a tracked link, as the recipient's mail client would. */
  async function visit(path: string) {
    const r = await h.app.handle(new Request(`http://mailroom.test${path}`))
    expect(r.status, path).toBeLessThan(400)
  }

  beforeAll(async () => {
    h = await harness({ MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true', MAILROOM_RATE_LIMIT: '100000' })
    rx = await startReceiver()
    hook = await makeEndpoint(h, { url: rx.url, events: KINDS })
    await rx.down()
    downAt = h.clock.now()

    // One email a minute for fifty minutes, each opened two minutes after it is sent and clicked a minute later.
    for (let m = 0; m < 60; m++) {
      if (m < EMAILS) {
        const r = await h.call('POST', '/emails', { body: simulated({ to: recipient(m), subject: `Minute ${m}` }) })
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        ids.push(r.body.id)
      }
      const opened = ids[m - 2]
      if (opened) await visit(`/t/o/${openToken(h.root.secret, opened, recipient(m - 2))}`)
      const clicked = ids[m - 3]
      if (clicked) await visit(`/t/c/${clickToken(h.root.secret, clicked, recipient(m - 3), `https://acme.dev/order/${m - 3}`)}`)
      await h.worker.runOnce()
      await h.dispatcher.runOnce()
      h.clock.advance(MIN)
    }

    const [ep] = await h.root.db.q.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, hook.id))
    const attempts = await h.root.db.q.select({ status: webhookAttempts.status }).from(webhookAttempts)
    const tried = new Map<string, string[]>()
    for (const r of await h.root.db.q.select().from(webhookDeliveries).where(gt(webhookDeliveries.attempts, 0))) tried.set(r.orderKey!, [...(tried.get(r.orderKey!) ?? []), r.type])
    atReturn = {
      states: await rowsByState(h),
      endpoint: { disabled: ep!.disabled, failingSince: ep!.failingSince },
      reached: rx.received.length,
      refused: attempts.filter((a) => a.status === null).length,
      tried,
    }

    rx.up()
    backAt = h.clock.now()
    for (let i = 0; i < 500; i++) {
      await h.worker.runOnce()
      await h.dispatcher.runOnce()
      if (!(await advanceToNextDue(h))) break
    }
  }, 60_000)

  afterAll(async () => {
    await rx?.close()
    await h?.close()
  })

  /** Each email's events as recorded, in the order they happened (id order), limited to the kinds the endpoint takes. */
  async function recordedOrder() {
    const rows = await h.root.db.q.select().from(emailEvents).orderBy(emailEvents.id)
    const out = new Map<string, string[]>()
    for (const e of rows) {
      const kind = `email.${e.type}`
      if (KINDS.includes(kind)) out.set(e.emailId, [...(out.get(e.emailId) ?? []), kind])
    }
    return out
  }

  test('during the hour nothing got through, nothing was given up, and the endpoint stayed enabled', () => {
    expect(backAt - downAt).toBe(60 * MIN)
    expect(atReturn.reached).toBe(0)
    expect(atReturn.refused).toBeGreaterThan(EMAILS * 3)
    // Only the head of each email's queue was tried: its later events wait behind its first instead of going ahead.
    expect([...atReturn.tried.keys()].sort()).toEqual([...ids].sort())
    for (const kinds of atReturn.tried.values()) expect(kinds).toEqual(['email.sent'])
    expect(Object.keys(atReturn.states)).toEqual(['pending'])
    expect(atReturn.endpoint).toEqual({ disabled: false, failingSince: iso(downAt) })
  })

  test('afterwards every event was delivered, once, and the outbox is empty', async () => {
    const recorded = await recordedOrder()
    const expected = [...recorded.values()].reduce((n, kinds) => n + kinds.length, 0)
    // sent, delivered, opened, clicked for each; delivery_delayed as well for every third.
    expect(expected).toBe(EMAILS * 4 + Math.ceil(EMAILS / 3))
    expect(await rowsByState(h)).toEqual({ delivered: expected })
    expect(rx.received).toHaveLength(expected)
    expect(rx.received.every((r) => r.status === 200)).toBe(true)
    expect(new Set(rx.received.map((r) => r.headers['webhook-id'])).size).toBe(expected)
    expect(new Set(rx.received.map((r) => r.body)).size).toBe(expected)
    // The wait after the return is the retry schedule's (its 2-hour step is the longest an hour's outage reaches), not the outage's.
    const signedAt = rx.received.map((r) => Number(r.headers['webhook-timestamp']) * 1000)
    expect(Math.min(...signedAt)).toBeGreaterThanOrEqual(backAt)
    expect(Math.max(...signedAt) - backAt).toBeLessThanOrEqual(2 * HOUR)
  })

  test('every request is signed: standardwebhooks verifies it, and a tampered body fails', () => {
    for (const r of rx.received) verifyDelivery(hook.signing_secret, r)
    const r = rx.received[0]!
    expect(() => verifyDelivery(hook.signing_secret, { ...r, body: r.body.replace('email.', 'email_') })).toThrow()
  })

  test('for each email the events arrived in the order they happened', async () => {
    const recorded = await recordedOrder()
    const arrived = new Map<string, { type: string; at: string }[]>()
    for (const r of rx.received) {
      const p = JSON.parse(r.body)
      arrived.set(p.data.email_id, [...(arrived.get(p.data.email_id) ?? []), { type: p.type, at: p.created_at }])
    }
    expect(arrived.size).toBe(EMAILS)
    for (const [i, id] of ids.entries()) {
      const got = arrived.get(id)!
      expect(got.map((e) => e.type), id).toEqual(recorded.get(id)!)
      expect(got.map((e) => e.type), id).toEqual(i % 3 === 0 ? ['email.sent', 'email.delivery_delayed', 'email.delivered', 'email.opened', 'email.clicked'] : ['email.sent', 'email.delivered', 'email.opened', 'email.clicked'])
      expect(got.map((e) => e.at), id).toEqual(got.map((e) => e.at).sort())
    }
  })

  test('the endpoint is enabled, its failure clock stopped, and nothing disabled it', async () => {
    expect((await h.call('GET', `/webhooks/${hook.id}`)).body).toMatchObject({ disabled: false, status: 'enabled' })
    const [ep] = await h.root.db.q.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, hook.id))
    expect(ep!.failingSince).toBeNull()
    expect(await h.root.db.q.select().from(auditEntries).where(and(eq(auditEntries.resourceId, hook.id), eq(auditEntries.action, 'disabled')))).toHaveLength(0)
    // Nothing was left behind for a later attempt either.
    expect(await h.root.db.q.select().from(webhookDeliveries).where(eq(webhookDeliveries.state, 'failed'))).toHaveLength(0)
  })
})
