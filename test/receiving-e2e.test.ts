// The whole loop on loopback: two verified domains with receiving on, their MX at
// 127.0.0.1 in a real DNS server; our MTA (mx mode, MAILROOM_MX_PORT = the listener's
// port) delivers to our own listener; a reply through the API goes back the same way,
// and all of it is one thread.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Harness } from './support/harness'
import { mxLoopback, until } from './support/inbound'

let loop: Awaited<ReturnType<typeof mxLoopback>>
let h: Harness

beforeAll(async () => {
  loop = await mxLoopback(['shop.test', 'support.test'])
  h = loop.h
})
afterAll(() => loop.close())

test('send → received (SPF, DKIM, DMARC pass) → reply through the API → received → one thread', async () => {
  const sent = await h.call('POST', '/emails', { body: { from: 'Ada <ada@shop.test>', to: 'Help Desk <help@support.test>', subject: 'Where is my parcel?', text: 'Order 42 has not arrived.' } })
  expect(sent.status, JSON.stringify(sent.body)).toBe(200)
  await h.worker.runOnce()
  const inbound = await until(async () => (await h.call('GET', '/emails/receiving', { query: { to: 'help@support.test' } })).body.data[0])
  expect(inbound).toMatchObject({ from: 'Ada <ada@shop.test>', subject: 'Where is my parcel?', message_id: `<${sent.body.id}@mx.mailroom.test>` })
  expect((await h.call('GET', `/emails/${sent.body.id}`)).body.last_event).toBe('delivered')
  const full = (await h.call('GET', `/emails/receiving/${inbound.id}`)).body
  expect(full.authentication.spf.result).toBe('pass')
  expect(full.authentication.dkim.map((d: { result: string; domain: string }) => [d.result, d.domain])).toEqual([['pass', 'shop.test']])
  expect(full.authentication.dmarc.result).toBe('pass')

  const reply = await h.call('POST', `/emails/receiving/${inbound.id}/reply`, { body: { text: 'It left our depot this morning.' } })
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  expect(reply.body).toMatchObject({ object: 'email', thread_id: inbound.thread_id, in_reply_to: inbound.message_id, references: [inbound.message_id] })
  const out = (await h.call('GET', `/emails/${reply.body.id}`)).body
  expect(out).toMatchObject({ from: 'Help Desk <help@support.test>', to: ['Ada <ada@shop.test>'], subject: 'Re: Where is my parcel?' })
  await h.worker.runOnce()
  const back = await until(async () => (await h.call('GET', '/emails/receiving', { query: { to: 'ada@shop.test' } })).body.data[0])
  expect(back).toMatchObject({ subject: 'Re: Where is my parcel?', in_reply_to: inbound.message_id, thread_id: inbound.thread_id })
  const raw = await (await h.app.handle(new Request(`http://localhost/emails/receiving/${back.id}/raw`, { headers: { authorization: `Bearer ${h.token}` } }))).text()
  expect(raw).toContain(`In-Reply-To: ${inbound.message_id}`)

  const threads = await h.call('GET', '/emails/receiving/threads')
  expect(threads.body.data).toHaveLength(1)
  expect(threads.body.data[0]).toMatchObject({ id: inbound.thread_id, subject: 'Where is my parcel?', message_count: 4 })
  const thread = await h.call('GET', `/emails/receiving/threads/${inbound.thread_id}`)
  expect(thread.body.messages.map((m: { direction: string; id: string }) => [m.direction, m.id])).toEqual([
    ['outbound', sent.body.id],
    ['inbound', inbound.id],
    ['outbound', reply.body.id],
    ['inbound', back.id],
  ])
  const events = (await h.call('GET', `/emails/${reply.body.id}/events`)).body.data.map((e: { type: string }) => e.type)
  expect(events).toContain('delivered')
})

test('a reply goes through every send check: a suppressed recipient refuses it and nothing is sent', async () => {
  const inbound = (await h.call('GET', '/emails/receiving', { query: { to: 'help@support.test' } })).body.data[0]
  await h.call('POST', '/suppressions', { body: { email: 'ada@shop.test' } })
  const r = await h.call('POST', `/emails/receiving/${inbound.id}/reply`, { body: { text: 'again' } })
  expect(r.status).toBe(422)
  expect(r.body.code).toBe('suppressed_recipient')
  await h.call('DELETE', '/suppressions/ada@shop.test')
})
