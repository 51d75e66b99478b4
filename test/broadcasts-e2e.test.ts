// A broadcast end to end through the public API: contacts made and imported, topic
// answers recorded, a segment chosen by rules, a broadcast under an opt-in topic
// delivered to the recipients' MX (a real SMTP server found through a real DNS
// server), the recipients listing, and a one-click unsubscribe that keeps the
// person out of the next broadcast.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { fanOut } from './support/broadcasts'
import { customerMx, type CustomerMx } from './support/customer-mx'
import type { TestDnsServer } from './support/dns-server'
import { verifiedDomain } from './support/emails'
import { harness, type Harness } from './support/harness'
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

const at = (name: string) => `${name}@customer.test`
const ok = async (r: Promise<{ status: number; body: any }>, status = 200) => {
  const res = await r
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  return res.body
}

/** Every message that reached the sink so far, parsed, by recipient. */
async function arrived() {
  const out = new Map<string, Awaited<ReturnType<typeof simpleParser>>>()
  for (const m of sink.messages) for (const to of m.to) out.set(to, await simpleParser(m.raw))
  return out
}

/** Sending starts now; the fan-out writes the emails, the MTA delivers them, and the broadcast settles. */
async function deliver(id: string) {
  await fanOut(h)
  await h.worker.runOnce()
  await fanOut(h)
  return ok(h.call('GET', `/broadcasts/${id}`))
}

test('an opt-in topic broadcast reaches exactly the right people; a one-click unsubscribe keeps one out of the next', async () => {
  await verifiedDomain(h, 'shop.test')
  // Contacts: made by address, then filled in by a CSV import.
  await ok(h.call('POST', '/contact-properties', { body: { key: 'plan', type: 'string' } }), 201)
  const people = ['ada', 'bob', 'cy', 'dee', 'eve', 'fay', 'gus']
  await ok(h.call('POST', '/contacts/batch', { body: { contacts: people.map((p) => ({ email: at(p) })) } }))
  const imported = await ok(
    h.call('POST', '/contacts/imports', {
      body: {
        csv: ['email,first_name,unsubscribed,plan', ...people.map((p) => `${at(p)},${p[0].toUpperCase()}${p.slice(1)},${p === 'dee'},${p === 'eve' ? 'free' : 'pro'}`)].join('\n'),
        on_conflict: 'upsert',
      },
    }),
  )
  expect(imported).toMatchObject({ status: 'completed', counts: { updated: 7, failed: 0 } })

  // Topic answers: ada, bob, dee, eve and gus said yes, cy said no, fay never answered.
  const topic = await ok(h.call('POST', '/topics', { body: { name: 'Product news', default_subscription: 'opt_in' } }), 201)
  for (const [p, subscribed] of [['ada', true], ['bob', true], ['cy', false], ['dee', true], ['eve', true], ['gus', true]] as const) {
    await ok(h.call('PATCH', `/contacts/${at(p)}/topics`, { body: { topics: [{ topic_id: topic.id, subscribed }] } }))
  }
  // gus's address is on the suppression list.
  await ok(h.call('POST', '/suppressions', { body: { email: at('gus') } }), 201)

  const segment = await ok(h.call('POST', '/segments', { body: { name: 'Pro customers', rules: [{ field: 'property', key: 'plan', op: 'eq', value: 'pro' }] } }), 201)
  const first = await ok(
    h.call('POST', '/broadcasts', {
      body: {
        segment_id: segment.id,
        topic_id: topic.id,
        name: 'Launch',
        from: 'Shop <news@shop.test>',
        subject: 'New for you, {{{FIRST_NAME|friend}}}',
        html: '<p>Hi {{{FIRST_NAME}}}, it is here.</p><p><a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Unsubscribe</a></p>',
        text: 'Hi {{{FIRST_NAME}}}, it is here.',
        send: true,
      },
    }),
    201,
  )
  // Pro customers who said yes, less the unsubscribed dee and the suppressed gus.
  expect(first).toMatchObject({ status: 'queued', recipient_count: 2 })
  expect(await deliver(first.id)).toMatchObject({ status: 'sent', recipient_count: 2, counts: { enqueued: 2, sent: 2, delivered: 2, suppressed: 1 } })

  await sink.waitFor(2)
  const got = await arrived()
  expect([...got.keys()].sort()).toEqual([at('ada'), at('bob')])
  const bob = got.get(at('bob'))!
  expect(bob.subject).toBe('New for you, Bob')
  expect(bob.text?.trim()).toBe('Hi Bob, it is here.')
  const raw = sink.messages.find((m) => m.to.includes(at('bob')))!.raw.toString()
  const unsubscribe = raw.match(/^List-Unsubscribe:\s+<(http[^>]+)>/m)![1]
  expect(bob.html).toContain(`href="${unsubscribe}"`)
  expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r$/m)

  // The recipients listing agrees with what arrived.
  const listed = async (id: string, type: string) => (await ok(h.call('GET', `/broadcasts/${id}/recipients`, { query: { type } }))).data.map((r: { email: string }) => r.email).sort()
  expect(await listed(first.id, 'delivered')).toEqual([at('ada'), at('bob')])
  expect(await listed(first.id, 'sent')).toEqual([at('ada'), at('bob')])
  expect(await listed(first.id, 'suppressed')).toEqual([at('gus')])
  expect(await listed(first.id, 'bounced')).toEqual([])

  // Bob unsubscribes with one click, as a mailbox provider does it (RFC 8058).
  const url = new URL(unsubscribe)
  const done = await h.call('POST', url.pathname, { key: null, raw: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  expect(done.status).toBe(200)
  const answers = await ok(h.call('GET', `/contacts/${at('bob')}/topics`))
  expect(answers.data.find((t: { id: string }) => t.id === topic.id)).toMatchObject({ subscribed: false })

  // The next broadcast under the topic leaves him out.
  const copy = await ok(h.call('POST', `/broadcasts/${first.id}/duplicate`), 201)
  const second = await ok(h.call('POST', `/broadcasts/${copy.id}/send`))
  expect(second).toMatchObject({ status: 'queued', recipient_count: 1 })
  expect(await deliver(copy.id)).toMatchObject({ status: 'sent', counts: { delivered: 1 } })
  await sink.waitFor(3)
  expect(sink.messages.slice(2).flatMap((m) => m.to)).toEqual([at('ada')])
  expect(await listed(copy.id, 'delivered')).toEqual([at('ada')])
})
