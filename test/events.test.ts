import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { eventOccurrences } from '../src/db/tables'
import { harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const missing = '01890000-0000-7000-8000-000000000000'
const SIGNUP_SCHEMA = { plan: 'string', seats: 'number', trial: 'boolean', renews: 'date' }

const makeEvent = async (h: Harness, body: Record<string, unknown> = {}) => {
  const r = await h.call('POST', '/events', { body: { name: 'user.signed_up', schema: SIGNUP_SCHEMA, ...body } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; name: string }
}
const makeContact = async (h: Harness, email = 'ada@example.com') => {
  const r = await h.call('POST', '/contacts', { body: { email } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; email: string }
}
const eventAndContact = async (h: Harness) => ({ event: await makeEvent(h), contact: await makeContact(h) })
const occurrences = (h: Harness) => h.root.db.q.select().from(eventOccurrences)

describe('Events: scenarios', () => {
  scenarios([
    // POST /events
    { name: 'defines an event with a payload schema', method: 'POST', path: '/events', body: { name: 'user.signed_up', schema: SIGNUP_SCHEMA }, status: 201,
      expect: { object: 'event', name: 'user.signed_up', schema: SIGNUP_SCHEMA, created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:00:00.000Z' } },
    { name: 'defines an event without a schema', method: 'POST', path: '/events', body: { name: 'checkout' }, status: 201, expect: { schema: null } },
    { name: 'refuses a name the account already uses', method: 'POST', path: '/events', setup: (h) => makeEvent(h), body: { name: 'user.signed_up' }, status: 409, code: 'event_name_taken',
      check: (r, t) => expect(r.body.event_id).toBe(t.id) },
    { name: 'lets another account use the same name', method: 'POST', path: '/events', setup: async (h) => {
      const o = await h.otherAccount()
      await h.call('POST', '/events', { key: o.token, body: { name: 'user.signed_up' } })
    }, body: { name: 'user.signed_up' }, status: 201 },
    { name: 'refuses the reserved resend: prefix', method: 'POST', path: '/events', body: { name: 'resend:opened' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a name with spaces', method: 'POST', path: '/events', body: { name: 'signed up' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown schema type', method: 'POST', path: '/events', body: { name: 'x', schema: { plan: 'text' } }, status: 400, code: 'validation_error' },
    { name: 'refuses a nested schema', method: 'POST', path: '/events', body: { name: 'x', schema: { plan: { type: 'string' } } }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'POST', path: '/events', as: 'sending', body: { name: 'x' }, status: 403, code: 'restricted_api_key' },

    // GET /events, /events/{id}
    { name: 'lists definitions newest first', method: 'GET', path: '/events', setup: async (h) => {
      const a = await makeEvent(h, { name: 'a' })
      h.clock.advance(1000)
      return { a, b: await makeEvent(h, { name: 'b' }) }
    }, status: 200, check: (r, t) => expect(r.body.data.map((e: { id: string }) => e.id)).toEqual([t.b.id, t.a.id]) },
    { name: 'gets one by id', method: 'GET', setup: (h) => makeEvent(h), path: (t) => `/events/${t.id}`, status: 200, expect: { name: 'user.signed_up' } },
    { name: 'gets one by name', method: 'GET', setup: (h) => makeEvent(h), path: '/events/user.signed_up', status: 200, check: (r, t) => expect(r.body.id).toBe(t.id) },
    { name: 'answers 404 for an unknown name', method: 'GET', path: '/events/nope', status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s event', method: 'GET', setup: async (h) => {
      const o = await h.otherAccount()
      return (await h.call('POST', '/events', { key: o.token, body: { name: 'theirs' } })).body
    }, path: (t) => `/events/${t.id}`, status: 404, code: 'not_found' },

    // PATCH /events/{id}
    { name: 'replaces the schema', method: 'PATCH', setup: (h) => makeEvent(h), path: (t) => `/events/${t.id}`, body: { schema: { plan: 'string' } }, status: 200, expect: { schema: { plan: 'string' } } },
    { name: 'clears the schema with null', method: 'PATCH', setup: (h) => makeEvent(h), path: '/events/user.signed_up', body: { schema: null }, status: 200, expect: { schema: null } },
    { name: 'renames', method: 'PATCH', setup: (h) => makeEvent(h), path: (t) => `/events/${t.id}`, body: { name: 'account.created' }, status: 200, expect: { name: 'account.created' },
      check: async (_r, _t, h) => expect((await h.call('GET', '/events/account.created')).status).toBe(200) },
    { name: 'refuses a rename onto a taken name', method: 'PATCH', setup: async (h) => {
      await makeEvent(h, { name: 'taken' })
      return makeEvent(h)
    }, path: (t) => `/events/${t.id}`, body: { name: 'taken' }, status: 409, code: 'event_name_taken' },
    { name: 'refuses a body that changes nothing', method: 'PATCH', setup: (h) => makeEvent(h), path: (t) => `/events/${t.id}`, body: {}, status: 422, code: 'missing_required_field' },
    { name: 'answers 404 for an unknown event', method: 'PATCH', path: `/events/${missing}`, body: { schema: null }, status: 404, code: 'not_found' },

    // DELETE /events/{id}
    { name: 'deletes by name', method: 'DELETE', setup: (h) => makeEvent(h), path: '/events/user.signed_up', status: 200,
      check: async (r, t, h) => {
        expect(r.body).toEqual({ object: 'event', id: t.id, deleted: true })
        expect((await h.call('GET', `/events/${t.id}`)).status).toBe(404)
      } },
    { name: 'answers 404 for an unknown event', method: 'DELETE', path: `/events/${missing}`, status: 404, code: 'not_found' },

    // POST /events/send
    { name: 'records an occurrence for a contact by id (202)', method: 'POST', path: '/events/send', setup: eventAndContact,
      body: (t: { contact: { id: string } }) => ({ event: 'user.signed_up', contact_id: t.contact.id, payload: { plan: 'pro', seats: 3, trial: false, renews: '2026-04-01', extra: [1] } }), status: 202,
      check: async (r, t, h) => {
        expect(r.body).toMatchObject({ object: 'event', event: 'user.signed_up', contact_id: t.contact.id })
        const rows = await occurrences(h)
        expect(rows).toHaveLength(1)
        expect(rows[0]).toMatchObject({ id: r.body.id, eventId: t.event.id, contactId: t.contact.id, payload: { plan: 'pro', seats: 3, extra: [1] } })
      } },
    { name: 'records an occurrence for a contact by address, any case', method: 'POST', path: '/events/send', setup: eventAndContact, body: { event: 'user.signed_up', email: 'ADA@example.com' }, status: 202,
      check: (r, t) => expect(r.body.contact_id).toBe(t.contact.id) },
    { name: 'takes a sending-only key', method: 'POST', path: '/events/send', as: 'sending', setup: eventAndContact, body: { event: 'user.signed_up', email: 'ada@example.com' }, status: 202 },
    { name: 'names the payload keys of the wrong type', method: 'POST', path: '/events/send', setup: eventAndContact,
      body: { event: 'user.signed_up', email: 'ada@example.com', payload: { seats: 'three', renews: 'someday', plan: 'pro' } }, status: 422, code: 'invalid_parameter',
      check: async (r, _t, h) => {
        expect(r.body.details.map((d: { field: string }) => d.field).sort()).toEqual(['payload.renews', 'payload.seats'])
        expect(await occurrences(h)).toHaveLength(0)
      } },
    { name: 'answers 404 for an event that is not defined', method: 'POST', path: '/events/send', setup: (h) => makeContact(h), body: { event: 'never.defined', email: 'ada@example.com' }, status: 404, code: 'not_found',
      check: (r) => expect(r.body.message).toContain('never.defined') },
    { name: 'answers 404 for an address that is no contact', method: 'POST', path: '/events/send', setup: (h) => makeEvent(h), body: { event: 'user.signed_up', email: 'who@example.com' }, status: 404, code: 'not_found',
      check: (r) => expect(r.body.message).toContain('who@example.com') },
    { name: 'refuses neither contact_id nor email', method: 'POST', path: '/events/send', setup: (h) => makeEvent(h), body: { event: 'user.signed_up' }, status: 422, code: 'missing_required_field' },
    { name: 'refuses both contact_id and email', method: 'POST', path: '/events/send', setup: eventAndContact, body: (t: { contact: { id: string } }) => ({ event: 'user.signed_up', contact_id: t.contact.id, email: 'ada@example.com' }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a missing event name', method: 'POST', path: '/events/send', body: { email: 'ada@example.com' }, status: 400, code: 'validation_error' },
  ])
})

describe('Events: occurrences outlive their definition', () => {
  test('deleting a definition keeps what was recorded, under the name it was sent with', async () => {
    const h = await harness()
    const { event, contact } = await eventAndContact(h)
    expect((await h.call('POST', '/events/send', { body: { event: event.id, contact_id: contact.id } })).status).toBe(202)
    expect((await h.call('DELETE', `/events/${event.id}`)).status).toBe(200)
    const rows = await h.root.db.q.select().from(eventOccurrences).where(eq(eventOccurrences.contactId, contact.id))
    expect(rows.map((r) => r.name)).toEqual(['user.signed_up'])
    await h.close()
  })
})
