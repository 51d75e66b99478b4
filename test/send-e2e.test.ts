// The whole sending path through the public API only: add a domain, publish its records
// in a real DNS server, verify, send, deliver to the recipient's MX (a real SMTP server
// found through that DNS server), and check what arrived with mailauth.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { simpleParser } from 'mailparser'
import { dnsClient } from '../src/domains/dns'
import { customerMx, type CustomerMx } from './support/customer-mx'
import type { TestDnsServer } from './support/dns-server'
import { expectError, harness, type Harness } from './support/harness'
import { verifiedDomain as publishedAndVerified } from './support/inbound'
import type { SmtpSink } from './support/smtp-sink'

let dns: TestDnsServer
let sink: SmtpSink
let h: Harness
let mx: CustomerMx

beforeAll(async () => {
  mx = await customerMx()
  ;({ dns, sink } = mx)
  h = await harness(mx.env)
})
afterAll(async () => {
  await h.close()
  await mx.close()
})

/** Added through the API, its records published in the DNS server, verified. */
const verifiedDomain = (name: string) => publishedAndVerified(h, dns, name, false)

test('send from a verified domain, deliver to the MX, DKIM verifies against the published key, the timeline ends delivered', async () => {
  const before = await h.call('POST', '/emails', { body: { from: 'Shop <orders@shop.test>', to: 'ada@customer.test', subject: 'Receipt', text: 'Thanks' } })
  expectError(before, 'domain_not_verified', 403)

  await verifiedDomain('shop.test')
  const sent = await h.call('POST', '/emails', {
    body: { from: 'Shop <orders@shop.test>', to: 'ada@customer.test', cc: ['bob@customer.test'], bcc: 'audit@customer.test', subject: 'Receipt #42', html: '<p>Thanks for <b>your</b> order</p>', text: 'Thanks for your order', tags: [{ name: 'kind', value: 'receipt' }] },
    headers: { 'Idempotency-Key': 'receipt-42' },
  })
  expect(sent.status, JSON.stringify(sent.body)).toBe(200)
  const id = sent.body.id

  await h.worker.runOnce()
  await sink.waitFor(3)
  expect(sink.messages.map((m) => m.to).flat().sort()).toEqual(['ada@customer.test', 'audit@customer.test', 'bob@customer.test'])
  for (const m of sink.messages) {
    expect(m.from).toMatch(/^bounces\+.+@send\.shop\.test$/)
    const parsed = await simpleParser(m.raw)
    expect(parsed.subject).toBe('Receipt #42')
    expect(parsed.headers.has('bcc')).toBe(false)
    expect(parsed.messageId).toBe(`<${id}@mx.mailroom.test>`)
    // DKIM checked the way a receiver does: the key comes from DNS.
    const client = dnsClient([dns.address])
    const resolver = async (name: string, type: string) => {
      const r = type === 'TXT' ? await client.txt(name) : { kind: 'nxdomain' as const }
      if (r.kind !== 'found' || !r.values.length) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
      return r.values.map((v) => [v])
    }
    const result = await dkimVerify(m.raw, { resolver: resolver as never })
    expect(result.results.map((x: { status: { result: string }; signingDomain?: string }) => [x.status.result, x.signingDomain])).toEqual([['pass', 'shop.test']])
  }

  const email = await h.call('GET', `/emails/${id}`)
  expect(email.body).toMatchObject({ id, last_event: 'delivered', tags: [{ name: 'kind', value: 'receipt' }] })
  const events = await h.call('GET', `/emails/${id}/events`)
  const types = events.body.data.map((e: { type: string }) => e.type)
  expect(types).toContain('queued')
  expect(types.filter((t: string) => t === 'delivered')).toHaveLength(3)
  const explain = await h.call('GET', `/emails/${id}/explain`)
  expect(JSON.stringify(explain.body)).toContain('250')

  // A retry with the same Idempotency-Key sends nothing again.
  const retry = await h.call('POST', '/emails', {
    body: { from: 'Shop <orders@shop.test>', to: 'ada@customer.test', cc: ['bob@customer.test'], bcc: 'audit@customer.test', subject: 'Receipt #42', html: '<p>Thanks for <b>your</b> order</p>', text: 'Thanks for your order', tags: [{ name: 'kind', value: 'receipt' }] },
    headers: { 'Idempotency-Key': 'receipt-42' },
  })
  expect(retry.body.id).toBe(id)
  await h.worker.runOnce()
  expect(sink.messages).toHaveLength(3)
})

test('mail under a topic reaches only those who said yes; the others get a suppressed event and no message', async () => {
  sink.messages.length = 0
  const topic = (await h.call('POST', '/topics', { body: { name: 'Product news', default_subscription: 'opt_in' } })).body.id
  await h.call('POST', '/contacts', { body: { email: 'yes@customer.test' } })
  await h.call('PATCH', '/contacts/yes@customer.test/topics', { body: { topics: [{ topic_id: topic, subscribed: true }] } })
  const sent = await h.call('POST', '/emails', { body: { from: 'News <news@shop.test>', to: ['yes@customer.test', 'silent@customer.test'], subject: 'New things', text: 'Look', topic_id: topic } })
  expect(sent.status, JSON.stringify(sent.body)).toBe(200)
  await h.worker.runOnce()
  await sink.waitFor(1)
  expect(sink.messages.map((m) => m.to).flat()).toEqual(['yes@customer.test'])
  expect(sink.messages[0].raw.toString()).toContain('List-Unsubscribe-Post: List-Unsubscribe=One-Click')
  const events = (await h.call('GET', `/emails/${sent.body.id}/events`)).body.data as { type: string; recipient: string }[]
  expect(events.find((e) => e.type === 'suppressed')?.recipient).toBe('silent@customer.test')
})
