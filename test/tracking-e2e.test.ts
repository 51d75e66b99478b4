// Click tracking through the real pipeline: POST /emails from a domain whose tracking
// host verified, the MTA delivers through a relay (a real SMTP server on loopback),
// the received HTML's link is followed through the app, and the click shows on the
// email's timeline.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { insertDomain } from './support/delivery-fixtures'
import { harness, type Harness } from './support/harness'
import { startSmtpSink, type SmtpSink } from './support/smtp-sink'

let sink: SmtpSink
let h: Harness

beforeAll(async () => {
  sink = await startSmtpSink({ auth: { user: 'mailroom', pass: 's3cret' } })
  h = await harness({ MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: sink.url(), MAILROOM_HOSTNAME: 'mx.mailroom.test' })
  await insertDomain(h.root, h.accountId, 'shop.test', {
    clickTracking: true,
    trackingSubdomain: 'links',
    records: [{ record: 'Tracking', name: 'links.shop.test', type: 'CNAME', value: 'mx.mailroom.test', ttl: 'Auto', status: 'verified', required: false }],
  })
})
afterAll(async () => {
  await h.close()
  await sink.close()
})

test('a link in a sent email is rewritten onto the tracking host, redirects to the original and shows as a clicked event', async () => {
  const sent = await h.call('POST', '/emails', {
    body: { from: 'Shop <orders@shop.test>', to: 'ada@customer.test', subject: 'Your order', html: '<p>Track it <a href="https://shop.test/orders/42?utm=mail">here</a>.</p>', text: 'Track it at https://shop.test/orders/42' },
  })
  expect(sent.status, JSON.stringify(sent.body)).toBe(200)
  await h.worker.runOnce()
  await sink.waitFor(1)
  const parsed = await simpleParser(sink.messages[0].raw)
  const link = (parsed.html as string).match(/href="([^"]+)"/)![1]
  expect(link).toMatch(/^https:\/\/links\.shop\.test\/t\/c\/[A-Za-z0-9_.-]+$/)
  // Open tracking is never on for transactional mail: no pixel.
  expect(parsed.html).not.toContain('/t/o/')
  expect(parsed.text).toContain('https://shop.test/orders/42')

  for (let i = 0; i < 2; i++) {
    const res = await h.app.handle(new Request(link, { headers: { 'user-agent': 'Mozilla/5.0 test' } }))
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('https://shop.test/orders/42?utm=mail')
  }
  const events = (await h.call('GET', `/emails/${sent.body.id}/events`)).body.data as { type: string; recipient: string; data: any }[]
  const clicks = events.filter((e) => e.type === 'clicked')
  expect(clicks.map((c) => [c.recipient, c.data.click.link, c.data.unique])).toEqual([
    ['ada@customer.test', 'https://shop.test/orders/42?utm=mail', true],
    ['ada@customer.test', 'https://shop.test/orders/42?utm=mail', false],
  ])
  expect(clicks[0].data.click.userAgent).toBe('Mozilla/5.0 test')

  // A tampered signature is refused.
  const tampered = await h.app.handle(new Request(link.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))))
  expect(tampered.status).toBe(404)
  expect(tampered.headers.get('location')).toBeNull()
})

test('each recipient of a tracked email gets links of their own, so a click counts for the person who clicked', async () => {
  sink.messages.length = 0
  const sent = await h.call('POST', '/emails', {
    body: { from: 'Shop <orders@shop.test>', to: ['ada@customer.test', 'bob@customer.test'], subject: 'Sale', html: '<p><a href="https://shop.test/sale">Sale</a></p>', text: 'Sale' },
  })
  expect(sent.status, JSON.stringify(sent.body)).toBe(200)
  await h.worker.runOnce()
  await sink.waitFor(2)
  const linkFor = async (to: string) => {
    const m = sink.messages.find((x) => x.to.includes(to))!
    return ((await simpleParser(m.raw)).html as string).match(/href="([^"]+)"/)![1]
  }
  const [ada, bob] = [await linkFor('ada@customer.test'), await linkFor('bob@customer.test')]
  expect(ada).not.toBe(bob)
  await h.app.handle(new Request(bob))
  const events = (await h.call('GET', `/emails/${sent.body.id}/events`)).body.data as { type: string; recipient: string }[]
  expect(events.filter((e) => e.type === 'clicked').map((e) => e.recipient)).toEqual(['bob@customer.test'])
})

test('open tracking stays refused on API sends', async () => {
  const r = await h.call('POST', '/emails', { body: { from: 'orders@shop.test', to: 'ada@customer.test', subject: 'x', html: '<p>x</p>', open_tracking: true } })
  expect(r.status).toBe(422)
  expect(r.body.code).toBe('open_tracking_on_transactional')
})
