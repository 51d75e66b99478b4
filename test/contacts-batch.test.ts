// GET /contacts (filters and paging) and POST /contacts/batch (create or update, all or nothing).
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { auditEntries, contactTopics, contacts, segmentContacts } from '../src/db/tables'
import { makeContact, makeProperty, makeSegment, missing, optedOutContact } from './support/contact-fixtures'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const emails = (r: { body: { data: { email: string }[] } }) => r.body.data.map((c) => c.email)

/** Three contacts a day apart (ada, bob, cy); bob unsubscribed; ada and cy in one segment. */
async function three(h: Harness) {
  const seg = await makeSegment(h, 'Customers')
  const ada = await makeContact(h, { email: 'ada@example.com', segments: [seg.id] })
  h.clock.advance(86_400_000)
  const bob = await makeContact(h, { email: 'bob@example.com', unsubscribed: true })
  h.clock.advance(86_400_000)
  const cy = await makeContact(h, { email: 'cy@example.com', segments: [{ id: seg.id }] })
  return { seg, ada, bob, cy }
}

const topic = async (h: Harness, name = 'News') => (await h.call('POST', '/topics', { body: { name, default_subscription: 'opt_in' } })).body as { id: string }

describe('Contacts list and batch: scenarios', () => {
  scenarios([
    // GET /contacts
    { name: 'lists every contact newest first', method: 'GET', path: '/contacts', setup: three, status: 200,
      check: (r) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(emails(r)).toEqual(['cy@example.com', 'bob@example.com', 'ada@example.com'])
        expect(r.body.data[0]).toMatchObject({ object: 'contact', first_name: null, unsubscribed: false, properties: {}, created_at: '2026-03-04T10:00:00.000Z' })
      } },
    { name: 'lists nothing on a new account', method: 'GET', path: '/contacts', status: 200, expect: { object: 'list', data: [], has_more: false, next_cursor: null } },
    { name: 'filters by segment', method: 'GET', path: '/contacts', setup: three, query: {}, status: 200,
      check: async (_r, w, h) => expect(emails(await h.call('GET', '/contacts', { query: { segment_id: w.seg.id } }))).toEqual(['cy@example.com', 'ada@example.com']) },
    { name: 'filters by segment under the legacy audience_id', method: 'GET', path: '/contacts', setup: three, status: 200,
      check: async (_r, w, h) => expect(emails(await h.call('GET', '/contacts', { query: { audience_id: w.seg.id.toUpperCase() } }))).toEqual(['cy@example.com', 'ada@example.com']) },
    { name: 'filters by address, whatever its case', method: 'GET', path: '/contacts', setup: three, query: { email: 'BOB@Example.com' }, status: 200, check: (r) => expect(emails(r)).toEqual(['bob@example.com']) },
    { name: 'filters unsubscribed contacts', method: 'GET', path: '/contacts', setup: three, query: { unsubscribed: 'true' }, status: 200, check: (r) => expect(emails(r)).toEqual(['bob@example.com']) },
    { name: 'filters subscribed contacts', method: 'GET', path: '/contacts', setup: three, query: { unsubscribed: 'false' }, status: 200, check: (r) => expect(emails(r)).toEqual(['cy@example.com', 'ada@example.com']) },
    { name: 'filters by created range (a bare until date covers its day)', method: 'GET', path: '/contacts', setup: three, query: { since: '2026-03-03', until: '2026-03-03' }, status: 200, check: (r) => expect(emails(r)).toEqual(['bob@example.com']) },
    { name: 'combines filters', method: 'GET', path: '/contacts', setup: three, query: { since: '2026-03-02T10:00:00Z', unsubscribed: 'false' }, status: 200,
      check: async (r, w, h) => {
        expect(emails(r)).toEqual(['cy@example.com', 'ada@example.com'])
        expect(emails(await h.call('GET', '/contacts', { query: { segment_id: w.seg.id, since: '2026-03-03' } }))).toEqual(['cy@example.com'])
      } },
    { name: 'answers 404 for an unknown segment', method: 'GET', path: '/contacts', query: { segment_id: missing }, status: 404, code: 'not_found' },
    { name: 'refuses segment_id and audience_id naming different segments', method: 'GET', path: '/contacts', setup: three, query: { segment_id: missing, audience_id: '01890000-0000-7000-8000-000000000001' }, status: 422, code: 'invalid_parameter' },
    { name: 'answers 404 for another account’s segment', method: 'GET', path: '/contacts', setup: async (h) => makeSegment(h, 'Theirs', (await h.otherAccount()).accountId), query: {}, status: 200,
      check: async (_r, seg, h) => expectError(await h.call('GET', '/contacts', { query: { segment_id: seg.id } }), 'not_found', 404) },
    { name: 'refuses an unsubscribed filter that is no boolean', method: 'GET', path: '/contacts', query: { unsubscribed: 'maybe' }, status: 400, code: 'validation_error' },
    { name: 'refuses a since that is no date', method: 'GET', path: '/contacts', query: { since: 'yesterday' }, status: 400, code: 'validation_error' },
    { name: 'refuses a since after the until', method: 'GET', path: '/contacts', query: { since: '2026-03-05', until: '2026-03-01' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a limit of 501', method: 'GET', path: '/contacts', query: { limit: 501 }, status: 400, code: 'validation_error' },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/contacts', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses an after that is no contact id', method: 'GET', path: '/contacts', query: { after: 'ada@example.com' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/contacts', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/contacts', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/contacts', as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /contacts/batch
    { name: 'creates new addresses and updates existing ones, in order', method: 'POST', path: '/contacts/batch', setup: async (h) => {
      await makeProperty(h, 'plan', 'string')
      await makeProperty(h, 'seats', 'number')
      const ada = await makeContact(h, { first_name: 'Ada', last_name: 'King', properties: { plan: 'free', seats: 1 } })
      h.clock.advance(60_000)
      return ada
    }, body: { contacts: [{ email: 'grace@example.com', first_name: 'Grace' }, { email: 'ADA@example.com', last_name: 'Lovelace', properties: { plan: 'pro' } }] }, status: 200,
      check: async (r, ada, h) => {
        expect(r.body).toMatchObject({ object: 'contact_batch', created: 1, updated: 1 })
        expect(r.body.data).toEqual([
          expect.objectContaining({ action: 'created', object: 'contact', email: 'grace@example.com', first_name: 'Grace', created_at: '2026-03-02T10:01:00.000Z' }),
          expect.objectContaining({ action: 'updated', id: ada.id, email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', properties: { plan: 'pro', seats: 1 }, updated_at: '2026-03-02T10:01:00.000Z' }),
        ])
        expect((await h.call('GET', `/contacts/${ada.id}`)).body).toMatchObject({ last_name: 'Lovelace', properties: { plan: 'pro', seats: 1 } })
        expect(await h.root.db.q.select().from(contacts)).toHaveLength(2)
      } },
    { name: 'takes a bare array', method: 'POST', path: '/contacts/batch', body: [{ email: 'a@example.com' }, { email: 'b@example.com', unsubscribed: true }], status: 200,
      check: (r) => {
        expect(r.body).toMatchObject({ created: 2, updated: 0 })
        expect(r.body.data.map((c: { email: string; unsubscribed: boolean }) => [c.email, c.unsubscribed])).toEqual([['a@example.com', false], ['b@example.com', true]])
      } },
    { name: 'records topic answers and joins segments for new and existing contacts', method: 'POST', path: '/contacts/batch', setup: async (h) => ({ t: await topic(h), seg: await makeSegment(h), ada: await makeContact(h) }),
      body: (x: any) => [
        { email: 'ada@example.com', topics: [{ id: x.t.id, subscription: 'opt_in' }], segments: [x.seg.id] },
        { email: 'new@example.com', topics: [{ topic_id: x.t.id, subscribed: false }], segments: [{ id: x.seg.id }] },
      ], status: 200,
      check: async (r, x, h) => {
        const [ada, made] = r.body.data
        expect(await h.root.db.q.select({ c: contactTopics.contactId, s: contactTopics.subscribed }).from(contactTopics).where(eq(contactTopics.topicId, x.t.id))).toEqual(
          expect.arrayContaining([{ c: ada.id, s: true }, { c: made.id, s: false }]),
        )
        expect((await h.root.db.q.select().from(segmentContacts)).map((m) => m.contactId).sort()).toEqual([ada.id, made.id].sort())
      } },
    { name: 'refuses the whole batch on one bad item, naming its index, and keeps nothing', method: 'POST', path: '/contacts/batch', setup: async (h) => {
      await makeProperty(h, 'seats', 'number')
      return makeContact(h, { first_name: 'Ada' })
    }, body: [{ email: 'ada@example.com', first_name: 'Changed' }, { email: 'new@example.com' }, { email: 'bad@example.com', properties: { seats: 'many' } }], status: 400, code: 'validation_error',
      check: async (r, ada, h) => {
        expect(r.body).toMatchObject({ index: 2, message: expect.stringContaining('Contact 2 of the batch') })
        expect(r.body.details).toEqual([{ field: '[2].properties.seats', message: expect.stringContaining('must be a number') }])
        expect((await h.root.db.q.select().from(contacts)).map((c) => c.email)).toEqual(['ada@example.com'])
        expect((await h.call('GET', `/contacts/${ada.id}`)).body.first_name).toBe('Ada')
        expect(await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'updated'))).toEqual([])
      } },
    { name: 'answers 404 naming an unknown topic in an item', method: 'POST', path: '/contacts/batch', body: [{ email: 'a@example.com' }, { email: 'b@example.com', topics: [{ id: missing, subscription: 'opt_in' }] }], status: 404, code: 'not_found',
      check: async (r, _x, h) => {
        expect(r.body).toMatchObject({ index: 1 })
        expect(await h.root.db.q.select().from(contacts)).toEqual([])
      } },
    { name: 'answers 404 naming an unknown segment for an existing contact', method: 'POST', path: '/contacts/batch', setup: (h) => makeContact(h), body: [{ email: 'ada@example.com', segments: [missing] }], status: 404, code: 'not_found' },
    { name: 'refuses the same address twice', method: 'POST', path: '/contacts/batch', body: [{ email: 'a@example.com' }, { email: 'b@example.com' }, { email: 'A@example.com' }], status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body).toMatchObject({ index: 2, message: expect.stringContaining('Contacts 0 and 2') }) },
    { name: 'refuses an item without an address', method: 'POST', path: '/contacts/batch', body: [{ email: 'a@example.com' }, { first_name: 'Nobody' }], status: 422, code: 'missing_required_field',
      check: (r) => expect(r.body.details).toEqual([{ field: '[1].email', message: expect.any(String) }]) },
    { name: 'refuses a body without contacts', method: 'POST', path: '/contacts/batch', body: {}, status: 422, code: 'missing_required_field' },
    { name: 'refuses an empty batch', method: 'POST', path: '/contacts/batch', body: [], status: 400, code: 'validation_error' },
    { name: 'refuses more than 100 contacts', method: 'POST', path: '/contacts/batch', body: Array.from({ length: 101 }, (_, i) => ({ email: `c${i}@example.com` })), status: 400, code: 'validation_error' },
    { name: 'refuses an item with a field POST /contacts does not take', method: 'POST', path: '/contacts/batch', body: [{ email: 'a@example.com', nickname: 'A' }], status: 400, code: 'validation_error',
      check: async (_r, _x, h) => expect(await h.root.db.q.select().from(contacts)).toEqual([]) },
    { name: 'refuses an item with a wrong field type', method: 'POST', path: '/contacts/batch', body: [{ email: 'a@example.com', unsubscribed: 'no' }], status: 400, code: 'validation_error' },
    { name: 'refuses to resubscribe an existing contact who unsubscribed themselves', method: 'POST', path: '/contacts/batch', setup: (h) => optedOutContact(h), body: [{ email: 'new@example.com' }, { email: 'ada@example.com', unsubscribed: false }], status: 409, code: 'contact_resubscribe_required',
      check: async (r, _c, h) => {
        expect(r.body.index).toBe(1)
        expect(await h.root.db.q.select().from(contacts)).toHaveLength(1)
      } },
    { name: 'refuses to add an unsubscribed contact to a segment', method: 'POST', path: '/contacts/batch', setup: async (h) => ({ seg: await makeSegment(h), c: await makeContact(h, { unsubscribed: true }) }), body: (x: any) => [{ email: 'ada@example.com', segments: [x.seg.id] }], status: 409, code: 'contact_resubscribe_required',
      check: async (_r, _x, h) => expect(await h.root.db.q.select().from(segmentContacts)).toEqual([]) },
    { name: 'refuses a sending-only key', method: 'POST', path: '/contacts/batch', as: 'sending', body: [{ email: 'a@example.com' }], status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/contacts/batch', as: 'none', body: [{ email: 'a@example.com' }], status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: '/contacts/batch', as: 'revoked', body: [{ email: 'a@example.com' }], status: 403, code: 'invalid_api_key' },
    { name: 'refuses a body that is not JSON', method: 'POST', path: '/contacts/batch', raw: 'email=a@example.com', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, code: 'unsupported_media_type' },
  ])
})

describe('Contacts list and batch: rules', () => {
  test('the list pages newest first; its cursor is bound to its filters', async () => {
    const h = await harness()
    try {
      const seg = await makeSegment(h)
      const made: string[] = []
      for (let i = 0; i < 5; i++) {
        made.push((await makeContact(h, { email: `c${i}@example.com`, segments: [seg.id] })).id)
        h.clock.advance(1000)
      }
      const seen: string[] = []
      let cursor: string | undefined
      do {
        const r = await h.call('GET', '/contacts', { query: { limit: 2, cursor, segment_id: seg.id } })
        expect(r.status).toBe(200)
        seen.push(...r.body.data.map((c: { id: string }) => c.id))
        cursor = r.body.next_cursor ?? undefined
        if (cursor) expectError(await h.call('GET', '/contacts', { query: { cursor } }), 'invalid_cursor', 400)
      } while (cursor)
      expect(seen).toEqual([...made].reverse())
      const before = await h.call('GET', '/contacts', { query: { before: made[1], limit: 2 } })
      expect(before.body.data.map((c: { id: string }) => c.id)).toEqual([made[3], made[2]])
    } finally {
      await h.close()
    }
  })

  test('another account sees none of the list and cannot reach a contact through a batch', async () => {
    const h = await harness()
    try {
      const mine = await makeContact(h, { first_name: 'Ada' })
      const o = await h.otherAccount()
      expect((await h.call('GET', '/contacts', { key: o.token })).body.data).toEqual([])
      const theirs = await h.call('POST', '/contacts/batch', { key: o.token, body: [{ email: 'ada@example.com', first_name: 'Theirs' }] })
      expect(theirs.body).toMatchObject({ created: 1, updated: 0 })
      expect(theirs.body.data[0].id).not.toBe(mine.id)
      expect((await h.call('GET', `/contacts/${mine.id}`)).body.first_name).toBe('Ada')
    } finally {
      await h.close()
    }
  })

  test('a batch records one audit entry per contact, created or updated', async () => {
    const h = await harness()
    try {
      const ada = await makeContact(h)
      await h.call('POST', '/contacts/batch', { body: [{ email: 'ada@example.com', first_name: 'Ada' }, { email: 'grace@example.com' }] })
      const rows = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resource, 'contact'))
      expect(rows.map((r) => [r.action, r.resourceId === ada.id])).toEqual([['created', true], ['updated', true], ['created', false]])
    } finally {
      await h.close()
    }
  })

  test('an Idempotency-Key replays the batch and does the work once', async () => {
    const h = await harness()
    try {
      const send = () => h.call('POST', '/contacts/batch', { headers: { 'Idempotency-Key': 'batch-1' }, body: [{ email: 'a@example.com' }] })
      const first = await send()
      const again = await send()
      expect(again.body).toEqual(first.body)
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      expect(await h.root.db.q.select().from(contacts)).toHaveLength(1)
      expectError(await h.call('POST', '/contacts/batch', { headers: { 'Idempotency-Key': 'batch-1' }, body: [{ email: 'b@example.com' }] }), 'idempotency_payload_mismatch', 409)
    } finally {
      await h.close()
    }
  })
})
