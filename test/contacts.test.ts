import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { contactTopics, contacts, segmentContacts } from '../src/db/tables'
import { makeContact, makeProperty, makeSegment, missing, optedOutContact, suppress } from './support/contact-fixtures'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const CONTACT_FIELDS = ['object', 'id', 'email', 'first_name', 'last_name', 'unsubscribed', 'properties', 'created_at', 'updated_at']

const makeTopic = async (h: Harness, name: string, default_subscription: 'opt_in' | 'opt_out' = 'opt_in', key?: string) => {
  const r = await h.call('POST', '/topics', { key, body: { name, default_subscription } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; name: string }
}
/** An opt-in topic, an opt-out topic (made a second later, so it lists first) and a contact who answered neither. */
const world = async (h: Harness) => {
  const optIn = await makeTopic(h, 'Product news', 'opt_in')
  h.clock.advance(1000)
  const optOut = await makeTopic(h, 'Security notices', 'opt_out')
  h.clock.advance(1000)
  const contact = await makeContact(h)
  return { optIn, optOut, contact }
}
const byTopic = (data: any[]): Record<string, any> => Object.fromEntries(data.map((d) => [d.topic_id, d]))

describe('Contacts: scenarios', () => {
  scenarios([
    // POST /contacts
    { name: 'creates a contact and answers the full contact', method: 'POST', path: '/contacts', setup: async (h) => {
      await makeProperty(h, 'plan', 'string')
      await makeProperty(h, 'seats', 'number')
    }, body: { email: 'Ada.Lovelace@Example.COM', first_name: 'Ada', last_name: 'Lovelace', properties: { plan: 'pro', seats: 3 } }, status: 201,
      expect: { object: 'contact', email: 'ada.lovelace@example.com', first_name: 'Ada', last_name: 'Lovelace', unsubscribed: false, properties: { plan: 'pro', seats: 3 }, created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:00:00.000Z' },
      check: (r) => {
        for (const f of CONTACT_FIELDS) expect(r.body).toHaveProperty(f)
        expect(r.body.id).toMatch(/^[0-9a-f-]{36}$/)
      } },
    { name: 'records topic answers given at create (Resend form)', method: 'POST', path: '/contacts', setup: (h) => makeTopic(h, 'News'), body: (t: any) => ({ email: 'a@example.com', topics: [{ id: t.id, subscription: 'opt_in' }] }), status: 201,
      check: async (r, t, h) => {
        const list = await h.call('GET', `/contacts/${r.body.id}/topics`)
        expect(list.body.data).toEqual([expect.objectContaining({ topic_id: t.id, subscribed: true, subscription: 'opt_in', is_default: false })])
      } },
    { name: 'records topic answers given at create (seed form)', method: 'POST', path: '/contacts', setup: (h) => makeTopic(h, 'News', 'opt_out'), body: (t: any) => ({ email: 'a@example.com', topics: [{ topic_id: t.id, subscribed: false }] }), status: 201,
      check: async (r, t, h) => {
        const list = await h.call('GET', `/contacts/${r.body.id}/topics`)
        expect(list.body.data).toEqual([expect.objectContaining({ topic_id: t.id, subscribed: false, subscription: 'opt_out', is_default: false })])
      } },
    { name: 'adds the contact to segments given as {id} objects and to the legacy audience_id', method: 'POST', path: '/contacts', setup: async (h) => ({ a: await makeSegment(h, 'A'), b: await makeSegment(h, 'B'), c: await makeSegment(h, 'C') }),
      body: (x: any) => ({ email: 'a@example.com', segments: [{ id: x.a.id }], audience_id: x.b.id.toUpperCase() }), status: 201, expect: { email: 'a@example.com' },
      check: async (r, x, h) => {
        const rows = await h.root.db.q.select().from(segmentContacts).where(eq(segmentContacts.contactId, r.body.id))
        expect(rows.map((m) => m.segmentId).sort()).toEqual([x.a.id, x.b.id].sort())
        expect(rows[0]).toMatchObject({ accountId: h.accountId, createdAt: '2026-03-02T10:00:00.000Z' })
      } },
    { name: 'adds the contact to segments given as plain ids, each once', method: 'POST', path: '/contacts', setup: async (h) => [await makeSegment(h, 'A'), await makeSegment(h, 'B')],
      body: (x: any) => ({ email: 'b@example.com', segments: [x[0].id, x[1].id, x[0].id] }), status: 201,
      check: async (r, _x, h) => expect(await h.root.db.q.select().from(segmentContacts).where(eq(segmentContacts.contactId, r.body.id))).toHaveLength(2) },
    { name: 'answers 404 naming an unknown segment and creates nothing', method: 'POST', path: '/contacts', setup: (h) => makeSegment(h), body: (x: any) => ({ email: 'a@example.com', segments: [x.id, missing] }), status: 404, code: 'not_found',
      check: async (r, _x, h) => {
        expect(r.body.message).toContain(missing)
        expect(await h.root.db.q.select().from(contacts)).toEqual([])
      } },
    { name: 'answers 404 for another account’s segment', method: 'POST', path: '/contacts', setup: async (h) => makeSegment(h, 'Theirs', (await h.otherAccount()).accountId), body: (x: any) => ({ email: 'a@example.com', segments: [x.id] }), status: 404, code: 'not_found' },
    { name: 'refuses more than 100 segments', method: 'POST', path: '/contacts', body: { email: 'a@example.com', segments: Array.from({ length: 101 }, (_, i) => `s${i}`) }, status: 400, code: 'validation_error' },
    { name: 'checks property values against their definitions and drops nulls', method: 'POST', path: '/contacts', setup: async (h) => {
      await makeProperty(h, 'seats', 'number')
      await makeProperty(h, 'vip', 'boolean')
      await makeProperty(h, 'renews', 'date')
    }, body: { email: 'a@example.com', properties: { seats: 3, vip: false, renews: '2026-04-01', plan: null } }, status: 201, expect: { properties: { seats: 3, vip: false, renews: '2026-04-01' } },
      check: (r) => expect(r.body.properties).not.toHaveProperty('plan') },
    { name: 'refuses property values of the wrong type, naming each, and creates nothing', method: 'POST', path: '/contacts', setup: async (h) => {
      await makeProperty(h, 'seats', 'number')
      await makeProperty(h, 'vip', 'boolean')
      await makeProperty(h, 'renews', 'date')
      await makeProperty(h, 'plan', 'string')
    }, body: { email: 'a@example.com', properties: { seats: '3', vip: 'yes', renews: '2026-02-30', plan: 7 } }, status: 400, code: 'validation_error',
      check: async (r, _x, h) => {
        expect(r.body.details.map((d: { field: string }) => d.field).sort()).toEqual(['properties.plan', 'properties.renews', 'properties.seats', 'properties.vip'])
        expect(r.body.details.find((d: { field: string }) => d.field === 'properties.seats').message).toContain('must be a number')
        expect(await h.root.db.q.select().from(contacts)).toEqual([])
      } },
    { name: 'refuses a property the account never defined', method: 'POST', path: '/contacts', body: { email: 'a@example.com', properties: { plan: 'pro' } }, status: 400, code: 'validation_error',
      check: (r) => expect(r.body.details).toEqual([{ field: 'properties.plan', message: expect.stringContaining('POST /contact-properties') }]) },
    { name: 'keeps an address its owner unsubscribed unsubscribed', method: 'POST', path: '/contacts', setup: (h) => suppress(h, 'gone@example.com'), body: { email: 'Gone@example.com' }, status: 201, expect: { email: 'gone@example.com', unsubscribed: true } },
    { name: 'refuses to record as subscribed an address its owner unsubscribed', method: 'POST', path: '/contacts', setup: (h) => suppress(h, 'gone@example.com', 'complaint'), body: { email: 'gone@example.com', unsubscribed: false }, status: 409, code: 'contact_resubscribe_required',
      check: async (_r, _x, h) => expect(await h.root.db.q.select().from(contacts)).toEqual([]) },
    { name: 'a bounce suppression does not hold the flag', method: 'POST', path: '/contacts', setup: (h) => suppress(h, 'gone@example.com', 'bounce'), body: { email: 'gone@example.com', unsubscribed: false }, status: 201, expect: { unsubscribed: false } },
    { name: 'refuses a missing email', method: 'POST', path: '/contacts', body: { first_name: 'Ada' }, status: 422, code: 'missing_required_field',
      expect: { message: 'Missing `email` field.' } },
    { name: 'refuses an address that is not one', method: 'POST', path: '/contacts', body: { email: 'not-an-address' }, status: 400, code: 'validation_error' },
    { name: 'refuses an address over 320 characters', method: 'POST', path: '/contacts', body: { email: `${'a'.repeat(310)}@example.com` }, status: 400, code: 'validation_error' },
    { name: 'refuses a wrong field type', method: 'POST', path: '/contacts', body: { email: 'a@example.com', unsubscribed: 'yes' }, status: 400, code: 'validation_error' },
    { name: 'refuses a property value that is an object', method: 'POST', path: '/contacts', body: { email: 'a@example.com', properties: { nested: { a: 1 } } }, status: 400, code: 'validation_error' },
    { name: 'refuses topics that are no answer objects', method: 'POST', path: '/contacts', body: { email: 'a@example.com', topics: 'x' }, status: 400, code: 'validation_error' },
    { name: 'refuses a topic id that is no UUID', method: 'POST', path: '/contacts', body: { email: 'a@example.com', topics: [{ id: 'news', subscription: 'opt_in' }] }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown topic and creates nothing', method: 'POST', path: '/contacts', body: { email: 'a@example.com', topics: [{ id: missing, subscription: 'opt_in' }] }, status: 404, code: 'not_found',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain(missing)
        expect(await h.root.db.q.select().from(contacts)).toEqual([])
      } },
    { name: 'refuses an answer without a subscription', method: 'POST', path: '/contacts', setup: (h) => makeTopic(h, 'News'), body: (t: any) => ({ email: 'a@example.com', topics: [{ id: t.id }] }), status: 422, code: 'missing_required_field' },
    { name: 'refuses an address that exists, whatever its case', method: 'POST', path: '/contacts', setup: (h) => makeContact(h), body: { email: 'ADA@example.com' }, status: 409, code: 'contact_already_exists',
      check: async (_r, _c, h) => expect(await h.root.db.q.select().from(contacts)).toHaveLength(1) },
    { name: 'lets another account hold the same address', method: 'POST', path: '/contacts', setup: async (h) => makeContact(h, {}, (await h.otherAccount()).token), body: { email: 'ada@example.com' }, status: 201 },
    { name: 'refuses a sending-only key', method: 'POST', path: '/contacts', as: 'sending', body: { email: 'a@example.com' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/contacts', as: 'none', body: { email: 'a@example.com' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: '/contacts', as: 'revoked', body: { email: 'a@example.com' }, status: 403, code: 'invalid_api_key' },

    // GET /contacts/{id}
    { name: 'gets a contact by id', method: 'GET', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}`, status: 200, expect: { object: 'contact', email: 'ada@example.com' } },
    { name: 'gets a contact by its URL-encoded address, in any case', method: 'GET', setup: (h) => makeContact(h, { email: 'ada+news@example.com' }), path: () => `/contacts/${encodeURIComponent('ADA+News@Example.com')}`, status: 200,
      check: (r, c) => expect(r.body.id).toBe(c.id) },
    { name: 'gets a contact by its plain address', method: 'GET', setup: (h) => makeContact(h), path: '/contacts/ada@example.com', status: 200, expect: { email: 'ada@example.com' } },
    { name: 'answers 404 for an unknown id', method: 'GET', path: `/contacts/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for an unknown address', method: 'GET', path: '/contacts/nobody@example.com', status: 404, code: 'not_found' },
    { name: 'refuses a path over 320 characters', method: 'GET', path: `/contacts/${'a'.repeat(321)}`, status: 400, code: 'validation_error' },
    { name: 'answers 404 for another account’s contact, by id and by address', method: 'GET', setup: async (h) => makeContact(h, { email: 'theirs@example.com' }, (await h.otherAccount()).token), path: (c) => `/contacts/${c.id}`, status: 404, code: 'not_found',
      check: async (_r, _c, h) => expectError(await h.call('GET', '/contacts/theirs@example.com'), 'not_found', 404) },
    { name: 'refuses a sending-only key', method: 'GET', path: `/contacts/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/contacts/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/contacts/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // PATCH /contacts/{id}
    { name: 'updates names, flag and properties (merged; null removes a key)', method: 'PATCH', setup: async (h) => {
      await makeProperty(h, 'plan', 'string')
      await makeProperty(h, 'seats', 'number')
      await makeProperty(h, 'trial', 'boolean')
      const c = await makeContact(h, { properties: { plan: 'free', seats: 1, trial: true } })
      h.clock.advance(60_000)
      return c
    }, path: (c) => `/contacts/${c.id}`, body: { first_name: 'Ada', last_name: null, unsubscribed: true, properties: { plan: 'pro', trial: null } }, status: 200,
      expect: { first_name: 'Ada', last_name: null, unsubscribed: true, properties: { plan: 'pro', seats: 1 }, created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:01:00.000Z' },
      check: async (r, c, h) => {
        expect(r.body.properties).not.toHaveProperty('trial')
        expect((await h.call('GET', `/contacts/${c.id}`)).body).toEqual(r.body)
      } },
    { name: 'changes the address (lower-cased) through the old address', method: 'PATCH', setup: (h) => makeContact(h), path: '/contacts/ada@example.com', body: { email: 'Ada@New.example' }, status: 200, expect: { email: 'ada@new.example' },
      check: async (r, _c, h) => {
        expect((await h.call('GET', '/contacts/ada@new.example')).body.id).toBe(r.body.id)
        expectError(await h.call('GET', '/contacts/ada@example.com'), 'not_found', 404)
      } },
    { name: 'refuses an address another contact holds', method: 'PATCH', setup: async (h) => {
      await makeContact(h, { email: 'grace@example.com' })
      return makeContact(h)
    }, path: (c) => `/contacts/${c.id}`, body: { email: 'GRACE@example.com' }, status: 409, code: 'contact_already_exists' },
    { name: 'keeps its own address when sent again', method: 'PATCH', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}`, body: { email: 'ADA@example.com' }, status: 200, expect: { email: 'ada@example.com' } },
    { name: 'refuses a bad address', method: 'PATCH', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}`, body: { email: 'nope@' }, status: 400, code: 'validation_error' },
    { name: 'refuses a wrong field type', method: 'PATCH', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}`, body: { first_name: 7 }, status: 400, code: 'validation_error' },
    { name: 'refuses a property value of the wrong type and changes nothing', method: 'PATCH', setup: async (h) => {
      await makeProperty(h, 'seats', 'number')
      return makeContact(h, { first_name: 'Ada', properties: { seats: 1 } })
    }, path: (c) => `/contacts/${c.id}`, body: { first_name: 'Grace', properties: { seats: 'two' } }, status: 400, code: 'validation_error',
      check: async (r, c, h) => {
        expect(r.body.details).toEqual([{ field: 'properties.seats', message: expect.stringContaining('must be a number') }])
        expect((await h.call('GET', `/contacts/${c.id}`)).body).toMatchObject({ first_name: 'Ada', properties: { seats: 1 } })
      } },
    { name: 'refuses a property the account never defined', method: 'PATCH', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}`, body: { properties: { plan: 'pro' } }, status: 400, code: 'validation_error' },
    { name: 'removes with null a key that is no longer defined', method: 'PATCH', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}`, body: { properties: { gone: null } }, status: 200, expect: { properties: {} } },
    { name: 'refuses to resubscribe a contact who unsubscribed themselves', method: 'PATCH', setup: (h) => optedOutContact(h), path: (c) => `/contacts/${c.id}`, body: { unsubscribed: false, first_name: 'Ada' }, status: 409, code: 'contact_resubscribe_required',
      check: async (r, c, h) => {
        expect(r.body.message).toContain('ada@example.com')
        expect((await h.call('GET', `/contacts/${c.id}`)).body).toMatchObject({ unsubscribed: true, first_name: null })
      } },
    { name: 'lifts a flag the API set (no unsubscribe by the contact)', method: 'PATCH', setup: (h) => makeContact(h, { unsubscribed: true }), path: (c) => `/contacts/${c.id}`, body: { unsubscribed: false }, status: 200, expect: { unsubscribed: false } },
    { name: 'other changes to a contact who unsubscribed themselves go through', method: 'PATCH', setup: (h) => optedOutContact(h), path: (c) => `/contacts/${c.id}`, body: { first_name: 'Ada', unsubscribed: true }, status: 200, expect: { first_name: 'Ada', unsubscribed: true } },
    { name: 'answers 404 when updating an unknown contact', method: 'PATCH', path: '/contacts/nobody@example.com', body: { first_name: 'x' }, status: 404, code: 'not_found' },
    { name: 'answers 404 when updating another account’s contact', method: 'PATCH', setup: async (h) => makeContact(h, {}, (await h.otherAccount()).token), path: (c) => `/contacts/${c.id}`, body: { first_name: 'x' }, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'PATCH', path: `/contacts/${missing}`, as: 'sending', body: {}, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'PATCH', path: `/contacts/${missing}`, as: 'none', body: {}, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'PATCH', path: `/contacts/${missing}`, as: 'revoked', body: {}, status: 403, code: 'invalid_api_key' },

    // DELETE /contacts/{id}
    { name: 'deletes a contact by id, with its topic answers', method: 'DELETE', setup: async (h) => {
      const t = await makeTopic(h, 'News')
      const c = await makeContact(h, { topics: [{ id: t.id, subscription: 'opt_in' }] })
      const other = await makeContact(h, { email: 'grace@example.com', topics: [{ id: t.id, subscription: 'opt_out' }] })
      return { t, c, other }
    }, path: (x) => `/contacts/${x.c.id}`, status: 200,
      check: async (r, x, h) => {
        expect(r.body).toEqual({ object: 'contact', id: x.c.id, contact: x.c.id, deleted: true })
        expect(await h.root.db.q.select().from(contactTopics).where(eq(contactTopics.contactId, x.c.id))).toEqual([])
        expect(await h.root.db.q.select().from(contactTopics).where(eq(contactTopics.contactId, x.other.id))).toHaveLength(1)
        expectError(await h.call('GET', `/contacts/${x.c.id}`), 'not_found', 404)
      } },
    { name: 'deletes its segment memberships and leaves other contacts’', method: 'DELETE', setup: async (h) => {
      const seg = await makeSegment(h)
      const c = await makeContact(h, { segments: [seg.id] })
      await makeContact(h, { email: 'grace@example.com', segments: [seg.id] })
      return c
    }, path: (c) => `/contacts/${c.id}`, status: 200,
      check: async (_r, c, h) => {
        expect(await h.root.db.q.select().from(segmentContacts).where(eq(segmentContacts.contactId, c.id))).toEqual([])
        expect(await h.root.db.q.select().from(segmentContacts)).toHaveLength(1)
      } },
    { name: 'deletes a contact by address and echoes it as given', method: 'DELETE', setup: (h) => makeContact(h), path: '/contacts/Ada@Example.com', status: 200,
      check: (r, c) => expect(r.body).toEqual({ object: 'contact', id: c.id, contact: 'Ada@Example.com', deleted: true }) },
    { name: 'answers 404 when deleting an unknown contact', method: 'DELETE', path: `/contacts/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 when deleting another account’s contact', method: 'DELETE', setup: async (h) => makeContact(h, {}, (await h.otherAccount()).token), path: '/contacts/ada@example.com', status: 404, code: 'not_found' },
    { name: 'refuses a path over 320 characters', method: 'DELETE', path: `/contacts/${'a'.repeat(321)}`, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'DELETE', path: `/contacts/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'DELETE', path: `/contacts/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'DELETE', path: `/contacts/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /contacts/{id}/topics
    { name: 'reports every topic: an unanswered opt-in topic is false and a default', method: 'GET', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, status: 200,
      check: (r, w) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((d: { topic_id: string }) => d.topic_id)).toEqual([w.optOut.id, w.optIn.id])
        expect(byTopic(r.body.data)[w.optIn.id]).toEqual({ object: 'contact_topic', id: w.optIn.id, topic_id: w.optIn.id, name: 'Product news', description: '', subscribed: false, subscription: 'opt_out', is_default: true })
        expect(byTopic(r.body.data)[w.optOut.id]).toMatchObject({ subscribed: true, subscription: 'opt_in', is_default: true })
      } },
    { name: 'reads by address too', method: 'GET', setup: world, path: '/contacts/ADA%40example.com/topics', status: 200, check: (r) => expect(r.body.data).toHaveLength(2) },
    { name: 'refuses a limit of 0', method: 'GET', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, query: { limit: 0 }, status: 400, code: 'validation_error' },
    { name: 'refuses a limit of 501', method: 'GET', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, query: { limit: 501 }, status: 400, code: 'validation_error' },
    { name: 'refuses a tampered cursor', method: 'GET', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses an after that is no topic id', method: 'GET', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, query: { after: 'x' }, status: 400, code: 'invalid_cursor' },
    { name: 'answers 404 for an unknown contact', method: 'GET', path: '/contacts/nobody@example.com/topics', status: 404, code: 'not_found' },
    { name: 'refuses a path over 320 characters', method: 'GET', path: `/contacts/${'a'.repeat(321)}/topics`, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/contacts/${missing}/topics`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/contacts/${missing}/topics`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/contacts/${missing}/topics`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // PATCH /contacts/{id}/topics
    { name: 'records answers in the seed’s form and replies with the whole list', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: (w: any) => ({ topics: [{ topic_id: w.optIn.id, subscribed: true }] }), status: 200,
      check: (r, w) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null, contact_id: w.contact.id })
        expect(r.body.topics).toEqual([{ id: w.optIn.id, topic_id: w.optIn.id, subscribed: true, subscription: 'opt_in' }])
        expect(byTopic(r.body.data)[w.optIn.id]).toMatchObject({ subscribed: true, is_default: false })
        // Nothing is inferred for the topic left out.
        expect(byTopic(r.body.data)[w.optOut.id]).toMatchObject({ subscribed: true, is_default: true })
      } },
    { name: 'records answers sent as a bare array in Resend’s form', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.email}/topics`, body: (w: any) => [{ id: w.optOut.id, subscription: 'opt_out' }], status: 200,
      check: (r, w) => {
        expect(r.body.topics).toEqual([{ id: w.optOut.id, topic_id: w.optOut.id, subscribed: false, subscription: 'opt_out' }])
        expect(byTopic(r.body.data)[w.optOut.id]).toMatchObject({ subscribed: false, subscription: 'opt_out', is_default: false })
        expect(byTopic(r.body.data)[w.optIn.id]).toMatchObject({ is_default: true })
      } },
    { name: 'records answers in Resend’s form inside {topics}', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: (w: any) => ({ topics: [{ id: w.optIn.id, subscription: 'opt_in' }, { id: w.optOut.id, subscription: 'opt_out' }] }), status: 200,
      check: (r, w) => {
        expect(byTopic(r.body.data)[w.optIn.id]).toMatchObject({ subscribed: true, is_default: false })
        expect(byTopic(r.body.data)[w.optOut.id]).toMatchObject({ subscribed: false, is_default: false })
      } },
    { name: 'an answer equal to the default is still an answer', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: (w: any) => ({ topics: [{ topic_id: w.optIn.id, subscribed: false }] }), status: 200,
      check: (r, w) => expect(byTopic(r.body.data)[w.optIn.id]).toMatchObject({ subscribed: false, is_default: false }) },
    { name: 'answers 404 naming an unknown topic and records nothing', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: (w: any) => ({ topics: [{ topic_id: w.optIn.id, subscribed: true }, { topic_id: missing, subscribed: true }] }), status: 404, code: 'not_found',
      check: async (r, _w, h) => {
        expect(r.body.message).toContain(missing)
        expect(await h.root.db.q.select().from(contactTopics)).toEqual([])
      } },
    { name: 'answers 404 for another account’s topic', method: 'PATCH', setup: async (h) => {
      const w = await world(h)
      const theirs = await makeTopic(h, 'Theirs', 'opt_in', (await h.otherAccount()).token)
      return { ...w, theirs }
    }, path: (w) => `/contacts/${w.contact.id}/topics`, body: (w: any) => ({ topics: [{ topic_id: w.theirs.id, subscribed: true }] }), status: 404, code: 'not_found' },
    { name: 'answers 404 for an unknown contact', method: 'PATCH', setup: world, path: '/contacts/nobody@example.com/topics', body: (w: any) => ({ topics: [{ topic_id: w.optIn.id, subscribed: true }] }), status: 404, code: 'not_found' },
    { name: 'refuses a body without topics', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: {}, status: 422, code: 'missing_required_field' },
    { name: 'refuses an answer without subscribed', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: (w: any) => ({ topics: [{ topic_id: w.optIn.id }] }), status: 422, code: 'missing_required_field',
      check: (r) => expect(r.body.details).toEqual([{ field: 'topics[0].subscribed', message: expect.any(String) }]) },
    { name: 'refuses an answer without a topic id', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: { topics: [{ subscribed: true }] }, status: 422, code: 'missing_required_field' },
    { name: 'refuses the same topic answered both ways', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: (w: any) => ({ topics: [{ topic_id: w.optIn.id, subscribed: true }, { id: w.optIn.id, subscription: 'opt_out' }] }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses subscribed and subscription that disagree', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: (w: any) => ({ topics: [{ topic_id: w.optIn.id, subscribed: true, subscription: 'opt_out' }] }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a topic id that is no UUID', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: { topics: [{ topic_id: 'news', subscribed: true }] }, status: 400, code: 'validation_error' },
    { name: 'refuses a wrong answer type', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: (w: any) => ({ topics: [{ topic_id: w.optIn.id, subscribed: 'yes' }] }), status: 400, code: 'validation_error' },
    { name: 'refuses topics that are no array of answers', method: 'PATCH', setup: world, path: (w) => `/contacts/${w.contact.id}/topics`, body: { topics: 'all' }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'PATCH', path: `/contacts/${missing}/topics`, as: 'sending', body: { topics: [] }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'PATCH', path: `/contacts/${missing}/topics`, as: 'none', body: { topics: [] }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'PATCH', path: `/contacts/${missing}/topics`, as: 'revoked', body: { topics: [] }, status: 403, code: 'invalid_api_key' },
  ])
})

describe('Contacts and topic answers: rules', () => {
  test('answering then changing the topic default leaves the answer; silent contacts follow the new default', async () => {
    const h = await harness()
    try {
      const { optIn, contact } = await world(h)
      const silent = await makeContact(h, { email: 'silent@example.com' })
      const first = await h.call('GET', `/contacts/${contact.id}/topics`)
      expect(byTopic(first.body.data)[optIn.id]).toMatchObject({ subscribed: false, is_default: true })
      const answered = await h.call('PATCH', `/contacts/${contact.id}/topics`, { body: { topics: [{ topic_id: optIn.id, subscribed: false }] } })
      expect(answered.status).toBe(200)

      const flipped = await h.call('PATCH', `/topics/${optIn.id}`, { body: { default_subscription: 'opt_out' } })
      expect(flipped.body).toMatchObject({ default_subscribed: true })

      const after = await h.call('GET', `/contacts/${contact.id}/topics`)
      expect(byTopic(after.body.data)[optIn.id]).toMatchObject({ subscribed: false, subscription: 'opt_out', is_default: false })
      const silentAfter = await h.call('GET', `/contacts/${silent.id}/topics`)
      expect(byTopic(silentAfter.body.data)[optIn.id]).toMatchObject({ subscribed: true, subscription: 'opt_in', is_default: true })
      const [row] = await h.root.db.q.select().from(contactTopics).where(eq(contactTopics.contactId, contact.id))
      expect(row).toMatchObject({ topicId: optIn.id, subscribed: false })
    } finally {
      await h.close()
    }
  })

  test('answers are absolute and replace earlier ones; topics left out keep theirs', async () => {
    const h = await harness()
    try {
      const { optIn, optOut, contact } = await world(h)
      await h.call('PATCH', `/contacts/${contact.id}/topics`, { body: [{ id: optIn.id, subscription: 'opt_in' }, { id: optOut.id, subscription: 'opt_out' }] })
      h.clock.advance(1000)
      const r = await h.call('PATCH', `/contacts/${contact.id}/topics`, { body: { topics: [{ topic_id: optIn.id, subscribed: false }] } })
      expect(byTopic(r.body.data)[optIn.id]).toMatchObject({ subscribed: false, is_default: false })
      expect(byTopic(r.body.data)[optOut.id]).toMatchObject({ subscribed: false, is_default: false })
      expect(await h.root.db.q.select().from(contactTopics)).toHaveLength(2)
      // An empty list records nothing and changes nothing.
      const none = await h.call('PATCH', `/contacts/${contact.id}/topics`, { body: [] })
      expect(none.status).toBe(200)
      expect(none.body.topics).toEqual([])
      expect(none.body.data).toEqual(r.body.data)
    } finally {
      await h.close()
    }
  })

  test('the contact’s topic list pages newest topic first; its cursor is bound to the contact', async () => {
    const h = await harness()
    try {
      const ids: string[] = []
      for (let i = 0; i < 5; i++) {
        ids.push((await makeTopic(h, `Topic ${i}`, i % 2 ? 'opt_out' : 'opt_in')).id)
        h.clock.advance(1000)
      }
      const ada = await makeContact(h)
      const grace = await makeContact(h, { email: 'grace@example.com' })
      const seen: string[] = []
      let cursor: string | undefined
      let first: string | undefined
      do {
        const r = await h.call('GET', `/contacts/${ada.id}/topics`, { query: { limit: 2, cursor } })
        expect(r.status).toBe(200)
        seen.push(...r.body.data.map((d: { topic_id: string }) => d.topic_id))
        cursor = r.body.next_cursor ?? undefined
        first ??= cursor
      } while (cursor)
      expect(seen).toEqual([...ids].reverse())
      expectError(await h.call('GET', `/contacts/${grace.id}/topics`, { query: { cursor: first } }), 'invalid_cursor', 400)
      expectError(await h.call('GET', '/topics', { query: { cursor: first } }), 'invalid_cursor', 400)
      const topicCursor = (await h.call('GET', '/topics', { query: { limit: 1 } })).body.next_cursor
      expectError(await h.call('GET', `/contacts/${ada.id}/topics`, { query: { cursor: topicCursor } }), 'invalid_cursor', 400)
    } finally {
      await h.close()
    }
  })

  test('deleting a contact removes its answers; a new contact with the address starts from the defaults', async () => {
    const h = await harness()
    try {
      const { optIn, contact } = await world(h)
      await h.call('PATCH', `/contacts/${contact.id}/topics`, { body: { topics: [{ topic_id: optIn.id, subscribed: true }] } })
      expect((await h.call('DELETE', `/contacts/${contact.email}`)).status).toBe(200)
      expect(await h.root.db.q.select().from(contactTopics)).toEqual([])
      const again = await makeContact(h)
      expect(again.id).not.toBe(contact.id)
      const list = await h.call('GET', `/contacts/${again.id}/topics`)
      expect(byTopic(list.body.data)[optIn.id]).toMatchObject({ subscribed: false, is_default: true })
    } finally {
      await h.close()
    }
  })

  test('another account can neither see nor change a contact or its answers', async () => {
    const h = await harness()
    try {
      const { optIn, contact } = await world(h)
      const o = await h.otherAccount()
      const theirTopic = await makeTopic(h, 'Theirs', 'opt_out', o.token)
      for (const ref of [contact.id, contact.email]) {
        expectError(await h.call('GET', `/contacts/${ref}`, { key: o.token }), 'not_found', 404)
        expectError(await h.call('PATCH', `/contacts/${ref}`, { key: o.token, body: { first_name: 'Mallory' } }), 'not_found', 404)
        expectError(await h.call('GET', `/contacts/${ref}/topics`, { key: o.token }), 'not_found', 404)
        expectError(await h.call('PATCH', `/contacts/${ref}/topics`, { key: o.token, body: { topics: [{ topic_id: theirTopic.id, subscribed: true }] } }), 'not_found', 404)
        expectError(await h.call('DELETE', `/contacts/${ref}`, { key: o.token }), 'not_found', 404)
      }
      // Their own contact under the same address sees only their topics.
      const theirs = await makeContact(h, {}, o.token)
      const list = await h.call('GET', `/contacts/${theirs.id}/topics`, { key: o.token })
      expect(list.body.data.map((d: { topic_id: string }) => d.topic_id)).toEqual([theirTopic.id])
      // Mine is untouched.
      const mine = await h.call('GET', `/contacts/${contact.id}`)
      expect(mine.body.first_name).toBeNull()
      expect(byTopic((await h.call('GET', `/contacts/${contact.id}/topics`)).body.data)[optIn.id]).toMatchObject({ is_default: true })
    } finally {
      await h.close()
    }
  })
})
