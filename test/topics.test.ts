import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { contactTopics, topics } from '../src/db/tables'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const TOPIC_FIELDS = ['object', 'id', 'name', 'description', 'default_subscribed', 'default_subscription', 'visibility', 'created_at', 'updated_at']
const missing = '01890000-0000-7000-8000-000000000000'

const makeTopic = async (h: Harness, body: Record<string, unknown> = {}) => {
  const r = await h.call('POST', '/topics', { body: { name: 'Product news', default_subscription: 'opt_in', ...body } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; name: string }
}
const twoTopics = async (h: Harness) => {
  const a = await makeTopic(h, { name: 'Alpha' })
  h.clock.advance(1000)
  const b = await makeTopic(h, { name: 'Beta' })
  return { a, b }
}

describe('Topics: scenarios', () => {
  scenarios([
    // POST /topics
    { name: 'creates an opt-in topic with the seed fields', method: 'POST', path: '/topics', body: { name: 'Product news', default_subscription: 'opt_in', description: 'Launches' }, status: 201,
      expect: { object: 'topic', name: 'Product news', description: 'Launches', default_subscribed: false, default_subscription: 'opt_in', visibility: 'private', created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:00:00.000Z' },
      check: (r) => {
        for (const f of TOPIC_FIELDS) expect(r.body).toHaveProperty(f)
        expect(r.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      } },
    { name: 'takes the seed’s boolean default: default_subscribed true is opt_out', method: 'POST', path: '/topics', body: { name: 'Digest', default_subscribed: true, visibility: 'public' }, status: 201,
      expect: { default_subscribed: true, default_subscription: 'opt_out', visibility: 'public', description: '' } },
    { name: 'takes both spellings of the default when they agree', method: 'POST', path: '/topics', body: { name: 'Digest', default_subscribed: false, default_subscription: 'opt_in' }, status: 201, expect: { default_subscribed: false } },
    { name: 'refuses both spellings of the default when they disagree', method: 'POST', path: '/topics', body: { name: 'Digest', default_subscribed: true, default_subscription: 'opt_in' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a topic without a default', method: 'POST', path: '/topics', body: { name: 'Digest' }, status: 422, code: 'missing_required_field',
      check: (r) => expect(r.body.message).toContain('default_subscription') },
    { name: 'refuses a missing name', method: 'POST', path: '/topics', body: { default_subscription: 'opt_in' }, status: 400, code: 'validation_error' },
    { name: 'refuses a name over 50 characters', method: 'POST', path: '/topics', body: { name: 'x'.repeat(51), default_subscription: 'opt_in' }, status: 400, code: 'validation_error' },
    { name: 'refuses a description over 200 characters', method: 'POST', path: '/topics', body: { name: 'x', description: 'd'.repeat(201), default_subscription: 'opt_in' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown default', method: 'POST', path: '/topics', body: { name: 'x', default_subscription: 'maybe' }, status: 400, code: 'validation_error' },
    { name: 'refuses a wrong field type', method: 'POST', path: '/topics', body: { name: 42, default_subscribed: 'yes' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown visibility', method: 'POST', path: '/topics', body: { name: 'x', default_subscription: 'opt_in', visibility: 'secret' }, status: 400, code: 'validation_error' },
    { name: 'refuses a name the account already uses, whatever its case', method: 'POST', path: '/topics', setup: (h) => makeTopic(h), body: { name: 'PRODUCT NEWS', default_subscription: 'opt_out' }, status: 409, code: 'topic_name_taken',
      check: async (_r, _t, h) => expect((await h.call('GET', '/topics')).body.data).toHaveLength(1) },
    { name: 'lets another account use the same name', method: 'POST', path: '/topics', setup: async (h) => {
      const o = await h.otherAccount()
      await h.call('POST', '/topics', { key: o.token, body: { name: 'Product news', default_subscription: 'opt_in' } })
    }, body: { name: 'Product news', default_subscription: 'opt_in' }, status: 201 },
    { name: 'refuses a sending-only key', method: 'POST', path: '/topics', as: 'sending', body: { name: 'x', default_subscription: 'opt_in' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/topics', as: 'none', body: { name: 'x', default_subscription: 'opt_in' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: '/topics', as: 'revoked', body: { name: 'x', default_subscription: 'opt_in' }, status: 403, code: 'invalid_api_key' },
    { name: 'refuses an Idempotency-Key over 256 characters', method: 'POST', path: '/topics', headers: { 'Idempotency-Key': 'k'.repeat(257) }, body: { name: 'x', default_subscription: 'opt_in' }, status: 400, code: 'invalid_idempotency_key' },

    // GET /topics
    { name: 'lists topics newest first', method: 'GET', path: '/topics', setup: twoTopics, status: 200,
      check: (r, t) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([t.b.id, t.a.id])
        for (const f of TOPIC_FIELDS) expect(r.body.data[0]).toHaveProperty(f)
      } },
    { name: 'lists nothing on a new account', method: 'GET', path: '/topics', status: 200, expect: { object: 'list', data: [], has_more: false, next_cursor: null } },
    { name: 'refuses a limit of 0', method: 'GET', path: '/topics', query: { limit: 0 }, status: 400, code: 'validation_error' },
    { name: 'refuses a limit of 501', method: 'GET', path: '/topics', query: { limit: 501 }, status: 400, code: 'validation_error' },
    { name: 'refuses a limit that is no number', method: 'GET', path: '/topics', query: { limit: 'ten' }, status: 400, code: 'validation_error' },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/topics', setup: twoTopics, query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses an after that is no topic id', method: 'GET', path: '/topics', query: { after: 'nope' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses after and before together', method: 'GET', path: '/topics', query: { after: missing, before: missing }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/topics', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/topics', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/topics', as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /topics/{id}
    { name: 'gets one topic', method: 'GET', setup: (h) => makeTopic(h), path: (t) => `/topics/${t.id}`, status: 200, expect: { object: 'topic', name: 'Product news', default_subscribed: false } },
    { name: 'gets one topic by its upper-case id', method: 'GET', setup: (h) => makeTopic(h), path: (t) => `/topics/${t.id.toUpperCase()}`, status: 200, expect: { name: 'Product news' } },
    { name: 'refuses a path id that is no UUID', method: 'GET', path: '/topics/not-a-uuid', status: 400, code: 'validation_error' },
    { name: 'answers 404 for a topic that does not exist', method: 'GET', path: `/topics/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s topic', method: 'GET', setup: async (h) => {
      const o = await h.otherAccount()
      return (await h.call('POST', '/topics', { key: o.token, body: { name: 'Theirs', default_subscription: 'opt_in' } })).body
    }, path: (t) => `/topics/${t.id}`, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/topics/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/topics/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/topics/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // PATCH /topics/{id}
    { name: 'renames a topic and changes description, visibility and default', method: 'PATCH', setup: async (h) => {
      const t = await makeTopic(h)
      h.clock.advance(60_000)
      return t
    }, path: (t) => `/topics/${t.id}`, body: { name: 'Launches', description: 'New things', visibility: 'public', default_subscription: 'opt_out' }, status: 200,
      expect: { name: 'Launches', description: 'New things', visibility: 'public', default_subscription: 'opt_out', default_subscribed: true, created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:01:00.000Z' },
      check: async (r, t, h) => expect((await h.call('GET', `/topics/${t.id}`)).body).toEqual(r.body) },
    { name: 'changes the default with the seed’s boolean', method: 'PATCH', setup: (h) => makeTopic(h), path: (t) => `/topics/${t.id}`, body: { default_subscribed: true }, status: 200, expect: { default_subscription: 'opt_out', default_subscribed: true } },
    { name: 'ignores a stray id equal to the path id (Resend’s SDK sends it)', method: 'PATCH', setup: (h) => makeTopic(h), path: (t) => `/topics/${t.id}`, body: (t: any) => ({ id: t.id, name: 'Renamed' }), status: 200,
      check: (r, t) => expect(r.body).toMatchObject({ id: t.id, name: 'Renamed' }) },
    { name: 'refuses a body id that differs from the path id', method: 'PATCH', setup: (h) => makeTopic(h), path: (t) => `/topics/${t.id}`, body: { id: missing, name: 'Renamed' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses both spellings of the default when they disagree', method: 'PATCH', setup: (h) => makeTopic(h), path: (t) => `/topics/${t.id}`, body: { default_subscribed: true, default_subscription: 'opt_in' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a rename to a name the account uses', method: 'PATCH', setup: twoTopics, path: (t) => `/topics/${t.b.id}`, body: { name: 'alpha' }, status: 409, code: 'topic_name_taken' },
    { name: 'allows a rename that only changes the case of its own name', method: 'PATCH', setup: (h) => makeTopic(h), path: (t) => `/topics/${t.id}`, body: { name: 'PRODUCT NEWS' }, status: 200, expect: { name: 'PRODUCT NEWS' } },
    { name: 'refuses an empty name', method: 'PATCH', setup: (h) => makeTopic(h), path: (t) => `/topics/${t.id}`, body: { name: '' }, status: 400, code: 'validation_error' },
    { name: 'refuses a wrong field type', method: 'PATCH', setup: (h) => makeTopic(h), path: (t) => `/topics/${t.id}`, body: { default_subscribed: 'no' }, status: 400, code: 'validation_error' },
    { name: 'refuses a path id that is no UUID', method: 'PATCH', path: '/topics/123', body: { name: 'x' }, status: 400, code: 'validation_error' },
    { name: 'answers 404 when updating a missing topic', method: 'PATCH', path: `/topics/${missing}`, body: { name: 'x' }, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'PATCH', path: `/topics/${missing}`, as: 'sending', body: { name: 'x' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'PATCH', path: `/topics/${missing}`, as: 'none', body: { name: 'x' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'PATCH', path: `/topics/${missing}`, as: 'revoked', body: { name: 'x' }, status: 403, code: 'invalid_api_key' },

    // DELETE /topics/{id}
    { name: 'deletes a topic and every answer about it', method: 'DELETE', setup: async (h) => {
      const t = await makeTopic(h)
      const keep = await makeTopic(h, { name: 'Kept' })
      for (const email of ['a@example.com', 'b@example.com']) {
        const c = await h.call('POST', '/contacts', { body: { email, topics: [{ id: t.id, subscription: 'opt_in' }, { id: keep.id, subscription: 'opt_out' }] } })
        expect(c.status).toBe(201)
      }
      expect(await h.root.db.q.select().from(contactTopics).where(eq(contactTopics.topicId, t.id))).toHaveLength(2)
      return { t, keep }
    }, path: (c) => `/topics/${c.t.id}`, status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({ object: 'topic', id: c.t.id, deleted: true })
        expect(await h.root.db.q.select().from(contactTopics).where(eq(contactTopics.topicId, c.t.id))).toEqual([])
        expect(await h.root.db.q.select().from(topics).where(eq(topics.id, c.t.id))).toEqual([])
        expect(await h.root.db.q.select().from(contactTopics).where(eq(contactTopics.topicId, c.keep.id))).toHaveLength(2)
        expectError(await h.call('GET', `/topics/${c.t.id}`), 'not_found', 404)
      } },
    { name: 'refuses a path id that is no UUID', method: 'DELETE', path: '/topics/abc', status: 400, code: 'validation_error' },
    { name: 'answers 404 when deleting a missing topic', method: 'DELETE', path: `/topics/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 when deleting another account’s topic, and leaves it', method: 'DELETE', setup: async (h) => {
      const o = await h.otherAccount()
      const t = (await h.call('POST', '/topics', { key: o.token, body: { name: 'Theirs', default_subscription: 'opt_in' } })).body
      return { o, t }
    }, path: (c) => `/topics/${c.t.id}`, status: 404, code: 'not_found',
      check: async (_r, c, h) => expect((await h.call('GET', `/topics/${c.t.id}`, { key: c.o.token })).status).toBe(200) },
    { name: 'refuses a sending-only key', method: 'DELETE', path: `/topics/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'DELETE', path: `/topics/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'DELETE', path: `/topics/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },
  ])
})

describe('Topics: rules', () => {
  test('a cursor issued for another list is refused', async () => {
    const h = await harness()
    try {
      await twoTopics(h)
      const c = await h.call('POST', '/contacts', { body: { email: 'ada@example.com' } })
      const page = await h.call('GET', `/contacts/${c.body.id}/topics`, { query: { limit: 1 } })
      expectError(await h.call('GET', '/topics', { query: { cursor: page.body.next_cursor } }), 'invalid_cursor', 400)
    } finally {
      await h.close()
    }
  })

  test('pages newest first across pages with next_cursor, and back with before', async () => {
    const h = await harness()
    try {
      const made: string[] = []
      for (let i = 0; i < 5; i++) {
        made.push((await makeTopic(h, { name: `Topic ${i}` })).id)
        h.clock.advance(1000)
      }
      const newestFirst = [...made].reverse()
      const seen: string[] = []
      let cursor: string | undefined
      let pages = 0
      do {
        const r = await h.call('GET', '/topics', { query: { limit: 2, cursor } })
        expect(r.status).toBe(200)
        seen.push(...r.body.data.map((t: { id: string }) => t.id))
        expect(r.body.has_more).toBe(r.body.next_cursor !== null)
        cursor = r.body.next_cursor ?? undefined
        pages++
      } while (cursor)
      expect(pages).toBe(3)
      expect(seen).toEqual(newestFirst)
      const after = await h.call('GET', '/topics', { query: { after: newestFirst[1], limit: 2 } })
      expect(after.body.data.map((t: { id: string }) => t.id)).toEqual(newestFirst.slice(2, 4))
      const before = await h.call('GET', '/topics', { query: { before: newestFirst[3], limit: 2 } })
      expect(before.body.data.map((t: { id: string }) => t.id)).toEqual(newestFirst.slice(1, 3))
    } finally {
      await h.close()
    }
  })

  test('an Idempotency-Key replays the create and makes no second topic', async () => {
    const h = await harness()
    try {
      const send = () => h.call('POST', '/topics', { headers: { 'Idempotency-Key': 'create-news-1' }, body: { name: 'News', default_subscription: 'opt_in' } })
      const first = await send()
      h.clock.advance(5000)
      const second = await send()
      expect(first.status).toBe(201)
      expect(second.status).toBe(201)
      expect(second.body).toEqual(first.body)
      expect(second.headers.get('idempotent-replayed')).toBe('true')
      expect((await h.root.db.q.select().from(topics)).map((t) => t.id)).toEqual([first.body.id])
      // The same key with another body is refused.
      const other = await h.call('POST', '/topics', { headers: { 'Idempotency-Key': 'create-news-1' }, body: { name: 'Other', default_subscription: 'opt_in' } })
      expectError(other, 'idempotency_payload_mismatch', 409)
    } finally {
      await h.close()
    }
  })

  test('another account can neither see nor change a topic', async () => {
    const h = await harness()
    try {
      const mine = await makeTopic(h)
      const o = await h.otherAccount()
      expect((await h.call('GET', '/topics', { key: o.token })).body.data).toEqual([])
      expectError(await h.call('GET', `/topics/${mine.id}`, { key: o.token }), 'not_found', 404)
      expectError(await h.call('PATCH', `/topics/${mine.id}`, { key: o.token, body: { name: 'Hijacked' } }), 'not_found', 404)
      expectError(await h.call('DELETE', `/topics/${mine.id}`, { key: o.token }), 'not_found', 404)
      // Their paging by my id reads nothing of mine.
      expect((await h.call('GET', '/topics', { key: o.token, query: { before: missing } })).body.data).toEqual([])
      expect((await h.call('GET', `/topics/${mine.id}`)).body.name).toBe('Product news')
    } finally {
      await h.close()
    }
  })
})
