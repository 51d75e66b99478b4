// Custom contact properties: definitions (key, type, fallback) and the type check
// every contact write meets.
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { MAX_PROPERTIES } from '../src/contact-properties/service'
import { auditEntries, contactProperties } from '../src/db/tables'
import { iso } from '../src/lib/clock'
import { makeContact, makeProperty, missing } from './support/contact-fixtures'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const PROPERTY_FIELDS = ['object', 'id', 'key', 'type', 'fallback_value', 'created_at', 'updated_at']

const two = async (h: Harness) => {
  const plan = await makeProperty(h, 'plan', 'string', 'free')
  h.clock.advance(1000)
  const seats = await makeProperty(h, 'seats', 'number')
  return { plan, seats }
}

describe('Contact properties: scenarios', () => {
  scenarios([
    // POST /contact-properties
    { name: 'defines a property and answers it whole', method: 'POST', path: '/contact-properties', body: { key: 'company_name', type: 'string', fallback_value: 'Acme' }, status: 201,
      expect: { object: 'contact_property', key: 'company_name', type: 'string', fallback_value: 'Acme', created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:00:00.000Z' },
      check: async (r, _x, h) => {
        for (const f of PROPERTY_FIELDS) expect(r.body).toHaveProperty(f)
        const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resource, 'contact_property'))
        expect(audit).toMatchObject({ action: 'created', resourceId: r.body.id, before: null, after: { key: 'company_name' } })
      } },
    { name: 'defines each type; the fallback is optional', method: 'POST', path: '/contact-properties', body: { key: 'seats', type: 'number' }, status: 201, expect: { type: 'number', fallback_value: null },
      check: async (_r, _x, h) => {
        for (const [key, type, fallback_value] of [['vip', 'boolean', false], ['renews', 'date', '2026-12-31'], ['score', 'number', 2.5]] as const) {
          expect((await h.call('POST', '/contact-properties', { body: { key, type, fallback_value } })).body).toMatchObject({ key, type, fallback_value })
        }
      } },
    { name: 'refuses a missing key', method: 'POST', path: '/contact-properties', body: { type: 'string' }, status: 422, code: 'missing_required_field', expect: { message: 'Missing `key` field.' } },
    { name: 'refuses a missing type', method: 'POST', path: '/contact-properties', body: { key: 'plan' }, status: 422, code: 'missing_required_field', expect: { message: 'Missing `type` field.' } },
    { name: 'refuses an unknown type', method: 'POST', path: '/contact-properties', body: { key: 'plan', type: 'text' }, status: 400, code: 'validation_error' },
    { name: 'refuses a key with other characters', method: 'POST', path: '/contact-properties', body: { key: 'company-name', type: 'string' }, status: 400, code: 'validation_error' },
    { name: 'refuses a key over 50 characters', method: 'POST', path: '/contact-properties', body: { key: 'k'.repeat(51), type: 'string' }, status: 400, code: 'validation_error' },
    { name: 'refuses a key that is a contact field', method: 'POST', path: '/contact-properties', body: { key: 'First_Name', type: 'string' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a fallback of another type', method: 'POST', path: '/contact-properties', body: { key: 'seats', type: 'number', fallback_value: '3' }, status: 422, code: 'invalid_parameter',
      check: async (_r, _x, h) => expect(await h.root.db.q.select().from(contactProperties)).toEqual([]) },
    { name: 'refuses a date fallback that names no real day', method: 'POST', path: '/contact-properties', body: { key: 'renews', type: 'date', fallback_value: '2026-02-30' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a key the account already defines', method: 'POST', path: '/contact-properties', setup: two, body: { key: 'plan', type: 'number' }, status: 409, code: 'contact_property_key_taken',
      check: (r, x) => expect(r.body.contact_property_id).toBe(x.plan.id) },
    { name: 'keys are case-sensitive', method: 'POST', path: '/contact-properties', setup: two, body: { key: 'Plan', type: 'string' }, status: 201 },
    { name: 'lets another account use the same key', method: 'POST', path: '/contact-properties', setup: async (h) => makeProperty(h, 'plan', 'string', undefined, (await h.otherAccount()).token), body: { key: 'plan', type: 'string' }, status: 201 },
    { name: 'refuses a property beyond the account’s limit', method: 'POST', path: '/contact-properties', setup: async (h) => {
      const now = iso(h.clock.now())
      const rows = Array.from({ length: MAX_PROPERTIES }, (_, i) => ({ id: h.root.ids.uuid(), accountId: h.accountId, key: `p${i}`, type: 'string' as const, fallbackValue: null, createdAt: now, updatedAt: now }))
      await h.root.db.write(async (tx) => {
        for (let i = 0; i < rows.length; i += 100) await tx.insert(contactProperties).values(rows.slice(i, i + 100))
      })
    }, body: { key: 'one_more', type: 'string' }, status: 422, code: 'contact_property_limit_reached' },
    { name: 'refuses a sending-only key', method: 'POST', path: '/contact-properties', as: 'sending', body: { key: 'plan', type: 'string' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/contact-properties', as: 'none', body: { key: 'plan', type: 'string' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: '/contact-properties', as: 'revoked', body: { key: 'plan', type: 'string' }, status: 403, code: 'invalid_api_key' },

    // GET /contact-properties
    { name: 'lists every property with its type, newest first', method: 'GET', path: '/contact-properties', setup: two, status: 200,
      check: (r, x) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((p: { key: string; type: string }) => [p.key, p.type])).toEqual([['seats', 'number'], ['plan', 'string']])
        expect(r.body.data[1]).toMatchObject({ id: x.plan.id, fallback_value: 'free' })
      } },
    { name: 'takes no parameters: paging ones are refused by name', method: 'GET', path: '/contact-properties', query: { limit: 10 }, status: 400, code: 'validation_error',
      check: (r) => expect(r.body.details).toEqual([{ field: 'query.limit', message: expect.any(String) }]) },
    { name: 'lists nothing on a new account and nothing of another’s', method: 'GET', path: '/contact-properties', setup: async (h) => makeProperty(h, 'plan', 'string', undefined, (await h.otherAccount()).token), status: 200, expect: { data: [] } },
    { name: 'refuses a sending-only key', method: 'GET', path: '/contact-properties', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/contact-properties', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/contact-properties', as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /contact-properties/{id}
    { name: 'gets one property', method: 'GET', setup: two, path: (x) => `/contact-properties/${x.plan.id}`, status: 200, expect: { object: 'contact_property', key: 'plan', type: 'string', fallback_value: 'free' } },
    { name: 'gets one by its upper-case id', method: 'GET', setup: two, path: (x) => `/contact-properties/${x.plan.id.toUpperCase()}`, status: 200, expect: { key: 'plan' } },
    { name: 'answers 404 for an unknown id', method: 'GET', path: `/contact-properties/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s property', method: 'GET', setup: async (h) => makeProperty(h, 'plan', 'string', undefined, (await h.otherAccount()).token), path: (p) => `/contact-properties/${p.id}`, status: 404, code: 'not_found' },
    { name: 'refuses an id over 100 characters', method: 'GET', path: `/contact-properties/${'x'.repeat(101)}`, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/contact-properties/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/contact-properties/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/contact-properties/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // PATCH /contact-properties/{id}
    { name: 'changes the fallback', method: 'PATCH', setup: async (h) => {
      const x = await two(h)
      h.clock.advance(60_000)
      return x
    }, path: (x) => `/contact-properties/${x.seats.id}`, body: { fallback_value: 1 }, status: 200, expect: { key: 'seats', fallback_value: 1, created_at: '2026-03-02T10:00:01.000Z', updated_at: '2026-03-02T10:01:01.000Z' },
      check: async (r, x, h) => {
        expect((await h.call('GET', `/contact-properties/${x.seats.id}`)).body).toEqual(r.body)
        const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'updated'))
        expect(audit).toMatchObject({ resource: 'contact_property', before: { fallback_value: null }, after: { fallback_value: 1 } })
      } },
    { name: 'clears the fallback with null', method: 'PATCH', setup: two, path: (x) => `/contact-properties/${x.plan.id}`, body: { fallback_value: null }, status: 200, expect: { fallback_value: null } },
    { name: 'accepts the stored key and type sent back (Resend’s SDK sends them)', method: 'PATCH', setup: two, path: (x) => `/contact-properties/${x.plan.id}`, body: { key: 'plan', type: 'string', fallback_value: 'pro' }, status: 200, expect: { fallback_value: 'pro' } },
    { name: 'refuses a new key', method: 'PATCH', setup: two, path: (x) => `/contact-properties/${x.plan.id}`, body: { key: 'tier' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a new type', method: 'PATCH', setup: two, path: (x) => `/contact-properties/${x.plan.id}`, body: { type: 'number' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a fallback of another type', method: 'PATCH', setup: two, path: (x) => `/contact-properties/${x.seats.id}`, body: { fallback_value: true }, status: 422, code: 'invalid_parameter',
      check: async (_r, x, h) => expect((await h.call('GET', `/contact-properties/${x.seats.id}`)).body.fallback_value).toBeNull() },
    { name: 'refuses a fallback that is an object', method: 'PATCH', setup: two, path: (x) => `/contact-properties/${x.plan.id}`, body: { fallback_value: { a: 1 } }, status: 400, code: 'validation_error' },
    { name: 'answers 404 for an unknown id', method: 'PATCH', path: `/contact-properties/${missing}`, body: { fallback_value: 'x' }, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'PATCH', path: `/contact-properties/${missing}`, as: 'sending', body: {}, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'PATCH', path: `/contact-properties/${missing}`, as: 'none', body: {}, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'PATCH', path: `/contact-properties/${missing}`, as: 'revoked', body: {}, status: 403, code: 'invalid_api_key' },

    // DELETE /contact-properties/{id}
    { name: 'deletes a property and its value on every contact', method: 'DELETE', setup: async (h) => {
      const x = await two(h)
      await makeContact(h, { properties: { plan: 'pro', seats: 2 } })
      await makeContact(h, { email: 'grace@example.com', properties: { seats: 5 } })
      return x
    }, path: (x) => `/contact-properties/${x.plan.id}`, status: 200,
      check: async (r, x, h) => {
        expect(r.body).toEqual({ object: 'contact_property', id: x.plan.id, deleted: true })
        expect((await h.call('GET', '/contacts/ada@example.com')).body.properties).toEqual({ seats: 2 })
        expect((await h.call('GET', '/contacts/grace@example.com')).body.properties).toEqual({ seats: 5 })
        expectError(await h.call('GET', `/contact-properties/${x.plan.id}`), 'not_found', 404)
        // The key is free again, and no longer accepted on contacts.
        expectError(await h.call('PATCH', '/contacts/ada@example.com', { body: { properties: { plan: 'pro' } } }), 'validation_error', 400)
      } },
    { name: 'answers 404 for an unknown id', method: 'DELETE', path: `/contact-properties/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s property and leaves it', method: 'DELETE', setup: async (h) => {
      const o = await h.otherAccount()
      return { o, p: await makeProperty(h, 'plan', 'string', undefined, o.token) }
    }, path: (x) => `/contact-properties/${x.p.id}`, status: 404, code: 'not_found',
      check: async (_r, x, h) => expect((await h.call('GET', `/contact-properties/${x.p.id}`, { key: x.o.token })).status).toBe(200) },
    { name: 'refuses a sending-only key', method: 'DELETE', path: `/contact-properties/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'DELETE', path: `/contact-properties/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'DELETE', path: `/contact-properties/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },
  ])
})

describe('Contact properties: values on contacts', () => {
  test('every type is checked on create and update; dates must name real days', async () => {
    const h = await harness()
    try {
      await makeProperty(h, 'plan', 'string')
      await makeProperty(h, 'seats', 'number')
      await makeProperty(h, 'vip', 'boolean')
      await makeProperty(h, 'renews', 'date')
      const c = await makeContact(h, { properties: { plan: 'pro', seats: 2.5, vip: true, renews: '2026-04-01T09:30:00Z' } })
      expect(c.properties).toEqual({ plan: 'pro', seats: 2.5, vip: true, renews: '2026-04-01T09:30:00Z' })
      const bad: [string, unknown][] = [['plan', 1], ['plan', true], ['seats', '2'], ['seats', false], ['vip', 'true'], ['vip', 1], ['renews', 'April'], ['renews', '2026-13-01'], ['renews', 20260401]]
      for (const [key, value] of bad) {
        const r = await h.call('PATCH', `/contacts/${c.id}`, { body: { properties: { [key]: value } } })
        expectError(r, 'validation_error', 400)
        expect(r.body.details, `${key}=${JSON.stringify(value)}`).toEqual([{ field: `properties.${key}`, message: expect.stringContaining(`defined as`) }])
      }
      expect((await h.call('GET', `/contacts/${c.id}`)).body.properties).toEqual(c.properties)
    } finally {
      await h.close()
    }
  })
})
