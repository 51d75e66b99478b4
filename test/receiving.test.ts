// Every receiving operation with every code it gives, each on a fresh app. Messages
// are put in through the listener's own store (no socket): stored raw, then processed.
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { domains } from '../src/db/tables'
import { processRaw, storeRaw } from '../src/inbound/store'
import { harness, expectError, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const MISSING = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee'
// Authentication checks ask a DNS server that refuses at once, so they end fast.
const env = () => ({ MAILROOM_DNS_SERVERS: '127.0.0.1:9', MAILROOM_HOSTNAME: 'mx.mailroom.test' })

const MESSAGE = [
  'From: Grace <grace@sender.test>',
  'To: help@inbox.test',
  'Subject: Hello there',
  'Message-ID: <hello-1@sender.test>',
  'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary="b1"',
  '',
  '--b1',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'Hi!',
  '--b1',
  'Content-Type: text/csv; name="data.csv"',
  'Content-Disposition: attachment; filename="data.csv"',
  '',
  'a,b',
  '--b1--',
  '',
].join('\r\n')

/** A receiving domain verified on the account (its status set directly: DNS is not what these tests are about). */
async function receivingDomain(h: Harness, name = 'inbox.test', sending = true) {
  const d = await h.call('POST', '/domains', { body: { name, capabilities: { sending: sending ? 'enabled' : 'disabled', receiving: 'enabled' } } })
  expect(d.status, JSON.stringify(d.body)).toBe(201)
  await h.root.db.write((tx) => tx.update(domains).set({ status: 'verified', verifiedAt: '2026-03-02T10:00:00.000Z' }).where(eq(domains.id, d.body.id)))
  return d.body.id as string
}

async function received(h: Harness, opts: { sending?: boolean } = {}) {
  await receivingDomain(h, 'inbox.test', opts.sending ?? true)
  const rawId = await storeRaw(h.root, { remoteAddress: '127.0.0.1', helo: 'client.test', mailFrom: 'grace@sender.test', rcptTo: ['help@inbox.test'], secure: false }, Buffer.from(MESSAGE), 'mail')
  const r = await processRaw(h.root, rawId)
  const id = r.emails[0].id
  const email = (await h.call('GET', `/emails/receiving/${id}`)).body
  return { id, threadId: email.thread_id as string, attachmentId: email.attachments[0].id as string }
}

describe('receiving operations', () => {
  scenarios(
    [
      { name: 'lists received mail', method: 'GET', path: '/emails/receiving', setup: received, status: 200, expect: { object: 'list', has_more: false, data: [{ subject: 'Hello there', received_for: ['help@inbox.test'] }] } },
      { name: 'without a key', method: 'GET', path: '/emails/receiving', as: 'none', status: 401, code: 'missing_api_key' },
      { name: 'with an unknown key', method: 'GET', path: '/emails/receiving', as: 'unknown', status: 403, code: 'invalid_api_key' },
      { name: 'with a sending-only key', method: 'GET', path: '/emails/receiving', as: 'sending', status: 403, code: 'restricted_api_key' },
      { name: 'a forged cursor', method: 'GET', path: '/emails/receiving', query: { cursor: 'abc.def' }, status: 400, code: 'invalid_cursor' },
      { name: 'since after until', method: 'GET', path: '/emails/receiving', query: { since: '2026-03-05', until: '2026-03-01' }, status: 422, code: 'invalid_parameter' },
      { name: 'a date that is no date', method: 'GET', path: '/emails/receiving', query: { since: 'yesterday' }, status: 400, code: 'validation_error' },
      { name: 'an unknown filter', method: 'GET', path: '/emails/receiving', query: { colour: 'red' }, status: 400, code: 'validation_error' },
      {
        name: 'one received email with headers and authentication',
        method: 'GET',
        path: (c) => `/emails/receiving/${c.id}`,
        setup: received,
        status: 200,
        expect: { object: 'email', from: 'Grace <grace@sender.test>', text: 'Hi!', headers: { Subject: 'Hello there' }, authentication: { spf: { result: 'temperror' }, dkim: [{ result: 'none' }], header: expect.stringContaining('mx.mailroom.test; dkim=none') }, message_id: '<hello-1@sender.test>' },
      },
      { name: 'an unknown id', method: 'GET', path: `/emails/receiving/${MISSING}`, status: 404, code: 'not_found' },
      { name: 'an id that is no UUID', method: 'GET', path: '/emails/receiving/not-a-uuid', status: 400, code: 'validation_error' },
      { name: 'its attachments', method: 'GET', path: (c) => `/emails/receiving/${c.id}/attachments`, setup: received, status: 200, expect: { object: 'list', data: [{ object: 'attachment', filename: 'data.csv', content_type: 'text/csv', content_disposition: 'attachment' }] } },
      { name: 'attachments of an unknown email', method: 'GET', path: `/emails/receiving/${MISSING}/attachments`, status: 404, code: 'not_found' },
      { name: 'one attachment', method: 'GET', path: (c) => `/emails/receiving/${c.id}/attachments/${c.attachmentId}`, setup: received, status: 200, expect: { filename: 'data.csv', size: 3 } },
      { name: 'an unknown attachment', method: 'GET', path: (c) => `/emails/receiving/${c.id}/attachments/${MISSING}`, setup: received, status: 404, code: 'not_found' },
      { name: 'the raw message', method: 'GET', path: (c) => `/emails/receiving/${c.id}/raw`, setup: received, status: 200, check: (r) => void expect(String(r.body)).toContain('Message-ID: <hello-1@sender.test>') },
      { name: 'raw of an unknown email', method: 'GET', path: `/emails/receiving/${MISSING}/raw`, status: 404, code: 'not_found' },
      { name: 'threads', method: 'GET', path: '/emails/receiving/threads', setup: received, status: 200, expect: { object: 'list', data: [{ object: 'thread', subject: 'Hello there', message_count: 1 }] } },
      { name: 'threads with a forged cursor', method: 'GET', path: '/emails/receiving/threads', query: { cursor: 'x.y' }, status: 400, code: 'invalid_cursor' },
      { name: 'one thread', method: 'GET', path: (c) => `/emails/receiving/threads/${c.threadId}`, setup: received, status: 200, expect: { object: 'thread', messages: [{ direction: 'inbound', subject: 'Hello there' }] } },
      { name: 'an unknown thread', method: 'GET', path: `/emails/receiving/threads/${MISSING}`, status: 404, code: 'not_found' },
      {
        name: 'a reply (a sending-only key may reply)',
        method: 'POST',
        path: (c) => `/emails/receiving/${c.id}/reply`,
        as: 'sending',
        setup: received,
        body: { text: 'Thanks, Grace.' },
        status: 200,
        check: async (r, c, h) => {
          expect(r.body).toMatchObject({ object: 'email', thread_id: c.threadId, in_reply_to: '<hello-1@sender.test>' })
          const sent = (await h.call('GET', `/emails/${r.body.id}`)).body
          expect(sent).toMatchObject({ from: 'help@inbox.test', to: ['Grace <grace@sender.test>'], subject: 'Re: Hello there' })
        },
      },
      { name: 'a reply to an unknown email', method: 'POST', path: `/emails/receiving/${MISSING}/reply`, body: { text: 'x' }, status: 404, code: 'not_found' },
      { name: 'a reply from a domain that receives but does not send', method: 'POST', path: (c) => `/emails/receiving/${c.id}/reply`, setup: (h) => received(h, { sending: false }), body: { text: 'x' }, status: 403, code: 'domain_sending_disabled' },
      { name: 'a reply with no content', method: 'POST', path: (c) => `/emails/receiving/${c.id}/reply`, setup: received, body: {}, status: 422, code: 'content_refused' },
      { name: 'a reply with an unknown field', method: 'POST', path: (c) => `/emails/receiving/${c.id}/reply`, setup: received, body: { text: 'x', colour: 'red' }, status: 400, code: 'validation_error' },
      { name: 'a reply that is not JSON', method: 'POST', path: (c) => `/emails/receiving/${c.id}/reply`, setup: received, raw: 'text=x', headers: { 'content-type': 'text/plain' }, status: 415, code: 'unsupported_media_type' },
    ],
    { env },
  )
})

test('another account sees none of it: 404 on the email, empty lists', async () => {
  const h = await harness(env())
  try {
    const c = await received(h)
    const other = await h.otherAccount()
    expectError(await h.call('GET', `/emails/receiving/${c.id}`, { key: other.token }), 'not_found', 404)
    expectError(await h.call('GET', `/emails/receiving/threads/${c.threadId}`, { key: other.token }), 'not_found', 404)
    expect((await h.call('GET', '/emails/receiving', { key: other.token })).body.data).toEqual([])
    expect((await h.call('GET', '/emails/receiving/threads', { key: other.token })).body.data).toEqual([])
  } finally {
    await h.close()
  }
})

test('`/emails/receiving…` routes win over `/emails/{id}`, and `/emails/{id}` still works', async () => {
  const h = await harness(env())
  try {
    expect((await h.call('GET', '/emails/receiving')).body.object).toBe('list')
    expect((await h.call('GET', '/emails/receiving/threads')).body.object).toBe('list')
    expectError(await h.call('GET', `/emails/${MISSING}`), 'not_found', 404)
  } finally {
    await h.close()
  }
})
