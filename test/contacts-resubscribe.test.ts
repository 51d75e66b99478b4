// POST /contacts/{id}/resubscribe and the page where the contact confirms: only the
// contact can lift an unsubscribe they made.
import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { auditEntries, contactResubscribes, emails, suppressions, webhookDeliveries } from '../src/db/tables'
import { unsubscribeToken } from '../src/delivery/unsubscribe'
import { insertEmail } from './support/delivery-fixtures'
import { makeContact, makeSegment, missing, optedOutContact, suppress } from './support/contact-fixtures'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const page = async (h: Harness, url: string, method = 'GET', body?: string) => {
  const res = await h.app.handle(new Request(url, { method, body, ...(method === 'POST' ? { headers: { 'content-type': 'application/x-www-form-urlencoded' } } : {}) }))
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() }
}
const suppressionsOf = (h: Harness, email: string) => h.root.db.q.select({ reason: suppressions.reason }).from(suppressions).where(eq(suppressions.email, email))
const request = async (h: Harness, ref = 'ada@example.com') => {
  const r = await h.call('POST', `/contacts/${ref}/resubscribe`)
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body as { id: string; confirm_url: string; status: string }
}

describe('Resubscribe: scenarios', () => {
  scenarios([
    { name: 'answers a single-use confirmation link for a contact who unsubscribed themselves', method: 'POST', setup: (h) => optedOutContact(h), path: (c) => `/contacts/${c.id}/resubscribe`, status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({
          object: 'contact_resubscribe',
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          contact_id: c.id,
          email: 'ada@example.com',
          status: 'pending',
          confirm_url: expect.stringMatching(/^http:\/\/mailroom\.test\/resubscribe\/[0-9a-f-]{36}\.[A-Za-z0-9_-]{32}$/),
          expires_at: '2026-03-09T10:00:00.000Z',
        })
        // Asking changes nothing yet.
        expect((await h.call('GET', `/contacts/${c.id}`)).body.unsubscribed).toBe(true)
        const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'resubscribe_requested'))
        expect(audit).toMatchObject({ resource: 'contact', resourceId: c.id, after: { status: 'pending' } })
        expect(JSON.stringify(audit.after)).not.toContain('resubscribe/')
      } },
    { name: 'asks a contact the API flagged unsubscribed too', method: 'POST', setup: (h) => makeContact(h, { unsubscribed: true }), path: '/contacts/ada@example.com/resubscribe', status: 200, expect: { status: 'pending' } },
    { name: 'asks a subscribed contact whose address a complaint suppressed', method: 'POST', setup: async (h) => {
      const c = await makeContact(h)
      await suppress(h, 'ada@example.com', 'complaint')
      return c
    }, path: (c) => `/contacts/${c.id}/resubscribe`, status: 200, expect: { status: 'pending' } },
    { name: 'needs nothing for a contact who receives mail', method: 'POST', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}/resubscribe`, status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({ object: 'contact_resubscribe', id: null, contact_id: c.id, email: 'ada@example.com', status: 'subscribed', confirm_url: null, expires_at: null })
        expect(await h.root.db.q.select().from(contactResubscribes)).toEqual([])
      } },
    { name: 'a bounce suppression is no unsubscribe', method: 'POST', setup: async (h) => {
      await makeContact(h)
      await suppress(h, 'ada@example.com', 'bounce')
    }, path: '/contacts/ada@example.com/resubscribe', status: 200, expect: { status: 'subscribed' } },
    { name: 'answers the pending request again instead of making another', method: 'POST', setup: async (h) => {
      await optedOutContact(h)
      const first = await request(h)
      h.clock.advance(3_600_000)
      return first
    }, path: '/contacts/ada@example.com/resubscribe', status: 200,
      check: async (r, first, h) => {
        expect(r.body).toMatchObject({ id: first.id, confirm_url: first.confirm_url, expires_at: '2026-03-09T10:00:00.000Z' })
        expect(await h.root.db.q.select().from(contactResubscribes)).toHaveLength(1)
      } },
    { name: 'makes a new request once the old one expired', method: 'POST', setup: async (h) => {
      await optedOutContact(h)
      const first = await request(h)
      h.clock.advance(7 * 86_400_000)
      return first
    }, path: '/contacts/ada@example.com/resubscribe', status: 200,
      check: (r, first) => expect(r.body).toMatchObject({ status: 'pending', expires_at: '2026-03-16T10:00:00.000Z', id: expect.not.stringMatching(first.id) }) },
    { name: 'answers 404 for an unknown contact', method: 'POST', path: '/contacts/nobody@example.com/resubscribe', status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s contact', method: 'POST', setup: async (h) => makeContact(h, {}, (await h.otherAccount()).token), path: (c) => `/contacts/${c.id}/resubscribe`, status: 404, code: 'not_found' },
    { name: 'refuses a path over 320 characters', method: 'POST', path: `/contacts/${'a'.repeat(321)}/resubscribe`, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'POST', path: `/contacts/${missing}/resubscribe`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/contacts/${missing}/resubscribe`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/contacts/${missing}/resubscribe`, as: 'revoked', status: 403, code: 'invalid_api_key' },
  ])
})

describe('Resubscribe: the contact confirms', () => {
  test('after a real one-click unsubscribe, only the contact’s confirmation lets mail and segments in again', async () => {
    const h = await harness()
    try {
      const seg = await makeSegment(h)
      const c = await makeContact(h, { first_name: 'Ada' })
      // The one-click unsubscribe of a broadcast: the contact is flagged and the address suppressed.
      const { email } = await insertEmail(h.root, { accountId: h.accountId, domain: null, to: ['ada@example.com'] })
      await h.root.db.write((tx) => tx.update(emails).set({ broadcastId: 'launch' }).where(eq(emails.id, email.id)))
      expect((await page(h, `http://mailroom.test/unsubscribe/${unsubscribeToken(h.root.secret, email.id, 'ada@example.com')}`, 'POST')).status).toBe(200)
      expect((await h.call('GET', `/contacts/${c.id}`)).body.unsubscribed).toBe(true)
      expect(await suppressionsOf(h, 'ada@example.com')).toEqual([{ reason: 'unsubscribe' }])

      // The API can neither flip the flag, nor add the contact to a segment, nor clear the suppression.
      expectError(await h.call('PATCH', `/contacts/${c.id}`, { body: { unsubscribed: false } }), 'contact_resubscribe_required', 409)
      expectError(await h.call('POST', `/contacts/${c.id}/segments/${seg.id}`), 'contact_resubscribe_required', 409)
      expectError(await h.call('DELETE', '/suppressions/ada@example.com'), 'contact_resubscribe_required', 409)

      const asked = await request(h)
      // GET only asks: a link scanner resubscribes nobody.
      for (let i = 0; i < 2; i++) {
        const p = await page(h, asked.confirm_url)
        expect(p.status).toBe(200)
        expect(p.type).toBe('text/html; charset=utf-8')
        expect(p.body).toContain('<strong>ada@example.com</strong> unsubscribed from mail sent by')
        expect(p.body).toContain(`<form method="post" action="/resubscribe/${asked.confirm_url.split('/').pop()}">`)
        expect(p.body).not.toMatch(/<script|https?:\/\/(?!mailroom)/)
      }
      expect((await h.call('GET', `/contacts/${c.id}`)).body.unsubscribed).toBe(true)

      h.clock.advance(60_000)
      // A form body of any kind is fine: the token in the path is all the page needs.
      const done = await page(h, asked.confirm_url, 'POST', 'confirm=yes')
      expect(done.status).toBe(200)
      expect(done.body).toContain('You are subscribed again')
      expect((await h.call('GET', `/contacts/${c.id}`)).body).toMatchObject({ unsubscribed: false, first_name: 'Ada', updated_at: '2026-03-02T10:01:00.000Z' })
      expect(await suppressionsOf(h, 'ada@example.com')).toEqual([])
      const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'resubscribed'))
      expect(audit).toMatchObject({ resource: 'contact', resourceId: c.id, actorKind: 'system', actorKeyId: null, before: { unsubscribed: true }, after: { unsubscribed: false } })
      expect((await h.call('POST', `/contacts/${c.id}/segments/${seg.id}`)).body).toMatchObject({ added: true })

      // The link is used up: a second POST changes and records nothing, and still reads as done.
      expect((await page(h, asked.confirm_url, 'POST')).body).toContain('You are subscribed again')
      expect(await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'resubscribed'))).toHaveLength(1)
      expect((await h.call('POST', `/contacts/${c.id}/resubscribe`)).body.status).toBe('subscribed')

      // Unsubscribed again later, the old link is no longer valid.
      await h.call('PATCH', `/contacts/${c.id}`, { body: { unsubscribed: true } })
      expect((await page(h, asked.confirm_url)).status).toBe(404)
      expect((await page(h, asked.confirm_url, 'POST')).status).toBe(404)
      expect((await h.call('GET', `/contacts/${c.id}`)).body.unsubscribed).toBe(true)
    } finally {
      await h.close()
    }
  })

  test('a confirmation clears a complaint suppression but keeps a bounce, and sends contact.updated', async () => {
    // A loopback endpoint: the events are read from the outbox, nothing leaves the machine.
    const h = await harness({ MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' })
    try {
      expect((await h.call('POST', '/webhooks', { body: { endpoint: 'http://127.0.0.1:9/hooks', events: ['contact.updated'] } })).status).toBe(201)
      await makeContact(h, { email: 'ada@example.com', unsubscribed: true })
      await suppress(h, 'ada@example.com', 'complaint')
      await makeContact(h, { email: 'bob@example.com', unsubscribed: true })
      await suppress(h, 'bob@example.com', 'bounce')
      for (const who of ['ada@example.com', 'bob@example.com']) expect((await page(h, (await request(h, who)).confirm_url, 'POST')).status).toBe(200)
      expect(await suppressionsOf(h, 'ada@example.com')).toEqual([])
      expect(await suppressionsOf(h, 'bob@example.com')).toEqual([{ reason: 'bounce' }])
      expect((await h.call('GET', '/contacts/bob@example.com')).body.unsubscribed).toBe(false)
      const events = (await h.root.db.q.select().from(webhookDeliveries)).map((d) => [d.type, JSON.parse(d.payload).data.email, JSON.parse(d.payload).data.unsubscribed])
      expect(events).toEqual([['contact.updated', 'ada@example.com', false], ['contact.updated', 'bob@example.com', false]])
    } finally {
      await h.close()
    }
  })

  test('a forged, expired or outdated link is refused with a plain page and changes nothing', async () => {
    const h = await harness()
    try {
      const c = await optedOutContact(h)
      const { confirm_url: url } = await request(h)
      const [, token] = url.split('/resubscribe/')
      const [id, mac] = token.split('.')
      const forged = [`${id}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`, `${missing}.${mac}`, id, `${token}.x`, 'nonsense']
      for (const t of forged) {
        const p = await page(h, `http://mailroom.test/resubscribe/${t}`, 'POST')
        expect(p.status, t).toBe(404)
        expect(p.body).toContain('This link is not valid')
      }
      // The address changed: the link asked about the old one.
      await h.call('PATCH', `/contacts/${c.id}`, { body: { email: 'ada@new.example' } })
      expect((await page(h, url)).status).toBe(404)
      await h.call('PATCH', `/contacts/${c.id}`, { body: { email: 'ada@example.com' } })
      expect((await page(h, url)).status).toBe(200)
      // Expired after 7 days.
      h.clock.advance(7 * 86_400_000)
      expect((await page(h, url, 'POST')).status).toBe(404)
      expect((await h.call('GET', `/contacts/${c.id}`)).body.unsubscribed).toBe(true)
      expect(await h.root.db.q.select().from(contactResubscribes).where(and(eq(contactResubscribes.contactId, c.id), eq(contactResubscribes.status, 'confirmed')))).toEqual([])
    } finally {
      await h.close()
    }
  })

  test('deleting the contact removes its requests, so their links stop working', async () => {
    const h = await harness()
    try {
      const c = await optedOutContact(h)
      const { confirm_url: url } = await request(h)
      await h.call('DELETE', `/contacts/${c.id}`)
      expect(await h.root.db.q.select().from(contactResubscribes)).toEqual([])
      expect((await page(h, url)).status).toBe(404)
    } finally {
      await h.close()
    }
  })
})
