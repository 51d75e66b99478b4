// Metrics from the real paths that record events: our MTA delivering over SMTP to
// our own listener (MX at 127.0.0.1 in a real DNS server), which stores the message
// as received; the simulator; the open pixel and click redirect. The figures must
// match what was done and what the event record holds.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { clickToken, openToken } from '../src/tracking/links'
import type { Harness } from './support/harness'
import { mxLoopback, until } from './support/inbound'

let loop: Awaited<ReturnType<typeof mxLoopback>>
let h: Harness

beforeAll(async () => {
  loop = await mxLoopback(['shop.test', 'support.test'])
  h = loop.h
})
afterAll(() => loop.close())

test('delivered over SMTP, received, opened, clicked and simulated mail is counted as it happened', async () => {
  const send = async (from: string, to: string) => {
    const r = await h.call('POST', '/emails', { body: { from, to, subject: 'Order 42', html: '<p>Hi</p>' } })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    return r.body.id as string
  }
  const real = await send('Shop <orders@shop.test>', 'help@support.test')
  for (const to of ['bounced@simulator.test', 'complained@simulator.test', 'delivered@simulator.test']) await send('bot@shop.test', to)
  await h.worker.runOnce()
  await until(async () => (await h.call('GET', '/emails/receiving')).body.data[0])
  await until(async () => ((await h.call('GET', `/emails/${real}`)).body.last_event === 'delivered' ? true : undefined))
  for (let i = 0; i < 2; i++) expect((await h.call('GET', `/t/o/${openToken(h.root.secret, real, 'help@support.test')}`, { key: null })).status).toBe(200)
  expect((await h.call('GET', `/t/c/${clickToken(h.root.secret, real, 'help@support.test', 'https://shop.test/track')}`, { key: null })).status).toBe(302)

  const legacy = (await h.call('GET', '/emails/metrics', { query: { metrics: 'received,sent,delivered,bounced,complained,opened,unique_opened,clicked,unique_clicked,delivery_rate,open_rate' } })).body
  expect(legacy.totals).toEqual({ received: 1, sent: 1, delivered: 1, bounced: 0, complained: 0, opened: 2, unique_opened: 1, clicked: 1, unique_clicked: 1, delivery_rate: 1, open_rate: 1 })
  const byDomain = (await h.call('GET', '/emails/metrics', { query: { dimensions: 'domain', metrics: 'sent,received' } })).body.data
  expect(byDomain.map((r: { domain_name: string; sent: number; received: number }) => [r.domain_name, r.sent, r.received])).toEqual([['shop.test', 1, 0], ['support.test', 0, 1]])

  // GET /metrics counts the simulator too: three more sent, two delivered, a bounce and a complaint.
  const all = (await h.call('GET', '/metrics', { query: { group_by: 'domain' } })).body
  expect(all.totals).toEqual({ sent: 4, delivered: 3, bounced: 1, complaints: 1, opens: 2, clicks: 1 })
  expect(all.by_domain).toEqual([{ domain: 'shop.test', sent: 4, delivered: 3, bounced: 1, complaints: 1, opens: 2, clicks: 1 }])

  // And the event record says the same, counted directly.
  const counted = await h.root.db.q.all<{ type: string; n: number }>(sql`select type, count(*) as n from email_events group by type`)
  const n = Object.fromEntries(counted.map((r) => [r.type, Number(r.n)]))
  expect([n.sent, n.delivered, n.bounced, n.complained, n.opened, n.clicked, n.received]).toEqual([4, 3, 1, 1, 2, 1, 1])
})
