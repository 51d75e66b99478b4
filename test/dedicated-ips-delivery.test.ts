// The MTA binds a domain's dedicated IP: real deliveries to a real SMTP server on
// 127.0.0.1, which sees the connection come from 127.0.0.2 (Linux loopback answers
// for all of 127/8), and the warm-up cap sending overflow from the default address
// or holding it to the next UTC day.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { deliveries, deliveryAttempts, dedicatedIpUsage } from '../src/db/tables'
import { customerMx, type CustomerMx } from './support/customer-mx'
import type { TestDnsServer } from './support/dns-server'
import { message, sent, verifiedDomain } from './support/emails'
import { expectError, harness, type Harness } from './support/harness'
import { asCookie, person } from './support/people'
import { startSmtpSink, type SmtpSink } from './support/smtp-sink'

let dns: TestDnsServer
let sink: SmtpSink
let mx: CustomerMx
beforeAll(async () => {
  mx = await customerMx()
  ;({ dns, sink } = mx)
})
afterAll(() => mx.close())
beforeEach(() => {
  sink.messages.length = 0
})

async function dedicated(h: Harness, ip: string, domains: string[]) {
  const p = await person(h)
  const r = await h.call('POST', '/dedicated-ips', { ...asCookie(p.cookie), body: { ip } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  const patched = await h.call('PATCH', `/dedicated-ips/${r.body.id}`, { body: { domains } })
  expect(patched.status, JSON.stringify(patched.body)).toBe(200)
  return r.body.id as string
}

/** Sends one message, runs the MTA, and answers the address the sink saw it come from. */
async function deliver(h: Harness, from: string) {
  const before = sink.messages.length
  await sent(h, message({ from, to: 'ada@customer.test' }))
  await h.worker.runOnce()
  await sink.waitFor(before + 1)
  return sink.messages[before]!.remoteAddress
}

const setUsage = (h: Harness, ipId: string, n: number) =>
  h.root.db.write((tx) =>
    tx
      .insert(dedicatedIpUsage)
      .values({ ipId, day: '2026-03-02', sent: n })
      .onConflictDoUpdate({ target: [dedicatedIpUsage.ipId, dedicatedIpUsage.day], set: { sent: n } }),
  )

describe('direct to MX', () => {
  let h: Harness
  let ipId: string
  beforeAll(async () => {
    h = await harness(mx.env)
    await verifiedDomain(h, 'shop.test')
    await verifiedDomain(h, 'other.test')
    ipId = await dedicated(h, '127.0.0.2', ['shop.test'])
  })
  afterAll(() => h.close())

  test('an assigned domain’s mail leaves from its dedicated IP and counts against today’s cap; others from the default address', async () => {
    expect(await deliver(h, 'Shop <orders@shop.test>')).toBe('127.0.0.2')
    expect(await deliver(h, 'Other <hi@other.test>')).toBe('127.0.0.1')
    expect((await h.call('GET', `/dedicated-ips/${ipId}`)).body.warmup).toMatchObject({ daily_limit: 50, sent_today: 1, remaining_today: 49 })
  })

  test('over the cap, overflow goes out from the default address (shared)', async () => {
    await setUsage(h, ipId, 50)
    expect(await deliver(h, 'Shop <orders@shop.test>')).toBe('127.0.0.1')
    expect((await h.call('GET', `/dedicated-ips/${ipId}`)).body.warmup).toMatchObject({ sent_today: 50, remaining_today: 0 })
  })

  test('an address that holds overflow refuses new sends at the cap, and holds mail already accepted until the next UTC day without spending an attempt', async () => {
    await h.call('PATCH', `/dedicated-ips/${ipId}`, { body: { overflow: 'hold' } })
    expectError(await h.call('POST', '/emails', { body: message({ from: 'orders@shop.test', to: 'ada@customer.test' }) }), 'daily_limit_reached', 429)

    await setUsage(h, ipId, 49)
    const id = await sent(h, message({ from: 'orders@shop.test', to: 'bob@customer.test' }))
    await setUsage(h, ipId, 50)
    await h.worker.runOnce()
    expect(sink.messages).toHaveLength(0)
    const [row] = await h.root.db.q.select().from(deliveries).where(eq(deliveries.emailId, id))
    expect(row).toMatchObject({ state: 'queued', attempts: 0, nextAttemptAt: '2026-03-03T00:00:00.000Z' })
    const [attempt] = await h.root.db.q.select().from(deliveryAttempts).where(eq(deliveryAttempts.deliveryId, row!.id))
    expect(attempt).toMatchObject({ outcome: 'deferred', host: null })
    expect(attempt!.response).toContain('held: the dedicated IP 127.0.0.2 has sent its 50 warm-up messages for 2026-03-02')

    h.clock.set('2026-03-03T00:00:01.000Z')
    await h.worker.runOnce()
    await sink.waitFor(1)
    expect(sink.messages[0]).toMatchObject({ to: ['bob@customer.test'], remoteAddress: '127.0.0.2' })
    const [after] = await h.root.db.q.select().from(deliveries).where(eq(deliveries.emailId, id))
    expect(after).toMatchObject({ state: 'delivered', attempts: 1 })
    expect((await h.call('GET', `/dedicated-ips/${ipId}`)).body.warmup).toMatchObject({ day: 2, daily_limit: 100, sent_today: 1 })
  })
})

describe('through a relay', () => {
  let h: Harness
  let relay: SmtpSink
  beforeAll(async () => {
    relay = await startSmtpSink()
    h = await harness({ MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: relay.url(), MAILROOM_DEDICATED_IP_PINS: 'pinned.test=127.0.0.3' })
    await verifiedDomain(h, 'shop.test')
    await verifiedDomain(h, 'pinned.test')
    await dedicated(h, '127.0.0.2', ['shop.test'])
  })
  afterAll(async () => {
    await h.close()
    await relay.close()
  })

  test('each source address has its own pool to the relay; an operator’s pin binds even an unregistered address', async () => {
    await sent(h, message({ from: 'orders@shop.test', to: 'ada@customer.test' }))
    await sent(h, message({ from: 'hello@pinned.test', to: 'bob@customer.test' }))
    await h.worker.runOnce()
    await relay.waitFor(2)
    const from = Object.fromEntries(relay.messages.map((m) => [m.to[0], m.remoteAddress]))
    expect(from).toEqual({ 'ada@customer.test': '127.0.0.2', 'bob@customer.test': '127.0.0.3' })
  })
})
