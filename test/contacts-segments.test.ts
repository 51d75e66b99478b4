// Static segment membership (/contacts/{id}/segments), a segment's members
// (/segments/{id}/contacts) and the audience-era routes (/audiences/{audienceId}/contacts).
import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { auditEntries, contacts, segmentContacts, webhookDeliveries } from '../src/db/tables'
import { makeContact, makeProperty, makeSegment, missing, optedOutContact } from './support/contact-fixtures'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const members = (h: Harness, segmentId: string) => h.root.db.q.select().from(segmentContacts).where(eq(segmentContacts.segmentId, segmentId))

/** A segment and a contact who is not in it yet. */
const pair = async (h: Harness) => ({ seg: await makeSegment(h, 'Customers'), c: await makeContact(h) })
/** A contact in two segments, the second made a second later; and a third segment it is not in. */
async function inTwo(h: Harness) {
  const a = await makeSegment(h, 'A')
  h.clock.advance(1000)
  const b = await makeSegment(h, 'B')
  const other = await makeSegment(h, 'Other')
  h.clock.advance(1000)
  const c = await makeContact(h, { segments: [a.id, b.id] })
  return { a, b, other, c }
}
/** An audience (segment) with one member, and a contact outside it. */
async function audience(h: Harness) {
  const aud = await makeSegment(h, 'Newsletter')
  const member = await makeContact(h, { email: 'ada@example.com', audience_id: aud.id, first_name: 'Ada' })
  const outside = await makeContact(h, { email: 'grace@example.com' })
  return { aud, member, outside }
}

describe('Segment membership: scenarios', () => {
  scenarios([
    // GET /contacts/{id}/segments
    { name: 'lists the segments a contact is in, newest segment first', method: 'GET', setup: inTwo, path: (x) => `/contacts/${x.c.id}/segments`, status: 200,
      check: (r, x) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data).toEqual([
          { object: 'segment', id: x.b.id, name: 'B', created_at: '2026-03-02T10:00:01.000Z', updated_at: '2026-03-02T10:00:01.000Z', added_at: '2026-03-02T10:00:02.000Z' },
          expect.objectContaining({ id: x.a.id, name: 'A' }),
        ])
      } },
    { name: 'reads by address too', method: 'GET', setup: inTwo, path: '/contacts/ADA@example.com/segments', status: 200, check: (r) => expect(r.body.data).toHaveLength(2) },
    { name: 'lists nothing for a contact in no segment', method: 'GET', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}/segments`, status: 200, expect: { data: [], has_more: false } },
    { name: 'pages with limit and next_cursor', method: 'GET', setup: inTwo, path: (x) => `/contacts/${x.c.id}/segments`, query: { limit: 1 }, status: 200,
      check: async (r, x, h) => {
        expect(r.body.data.map((s: { id: string }) => s.id)).toEqual([x.b.id])
        const next = await h.call('GET', `/contacts/${x.c.id}/segments`, { query: { limit: 1, cursor: r.body.next_cursor } })
        expect(next.body).toMatchObject({ data: [expect.objectContaining({ id: x.a.id })], has_more: false })
      } },
    { name: 'answers 404 for an unknown contact', method: 'GET', path: '/contacts/nobody@example.com/segments', status: 404, code: 'not_found' },
    { name: 'refuses a tampered cursor', method: 'GET', setup: inTwo, path: (x) => `/contacts/${x.c.id}/segments`, query: { cursor: 'abc.def' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a limit of 0', method: 'GET', setup: inTwo, path: (x) => `/contacts/${x.c.id}/segments`, query: { limit: 0 }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/contacts/${missing}/segments`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/contacts/${missing}/segments`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/contacts/${missing}/segments`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /contacts/{id}/segments/{segmentId}
    { name: 'adds a contact to a segment', method: 'POST', setup: pair, path: (x) => `/contacts/${x.c.id}/segments/${x.seg.id}`, status: 200,
      check: async (r, x, h) => {
        expect(r.body).toEqual({ object: 'contact_segment', contact_id: x.c.id, segment_id: x.seg.id, added: true })
        expect(await members(h, x.seg.id)).toEqual([{ segmentId: x.seg.id, contactId: x.c.id, accountId: h.accountId, createdAt: '2026-03-02T10:00:00.000Z' }])
        const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'segment_added'))
        expect(audit).toMatchObject({ resource: 'contact', resourceId: x.c.id, before: null, after: { id: x.c.id, email: 'ada@example.com', segment_id: x.seg.id } })
      } },
    { name: 'adds by address and an upper-case segment id', method: 'POST', setup: pair, path: (x) => `/contacts/ada@example.com/segments/${x.seg.id.toUpperCase()}`, status: 200, expect: { added: true } },
    { name: 'adding a member again changes nothing', method: 'POST', setup: inTwo, path: (x) => `/contacts/${x.c.id}/segments/${x.a.id}`, status: 200, expect: { added: false },
      check: async (_r, x, h) => expect(await members(h, x.a.id)).toEqual([expect.objectContaining({ createdAt: '2026-03-02T10:00:02.000Z' })]) },
    { name: 'refuses a contact who unsubscribed themselves', method: 'POST', setup: async (h) => ({ seg: await makeSegment(h), c: await optedOutContact(h) }), path: (x) => `/contacts/${x.c.id}/segments/${x.seg.id}`, status: 409, code: 'contact_resubscribe_required',
      check: async (_r, x, h) => expect(await members(h, x.seg.id)).toEqual([]) },
    { name: 'refuses a contact flagged unsubscribed', method: 'POST', setup: async (h) => ({ seg: await makeSegment(h), c: await makeContact(h, { unsubscribed: true }) }), path: (x) => `/contacts/${x.c.id}/segments/${x.seg.id}`, status: 409, code: 'contact_resubscribe_required' },
    { name: 'answers 404 for an unknown segment', method: 'POST', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}/segments/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s segment', method: 'POST', setup: async (h) => ({ seg: await makeSegment(h, 'Theirs', (await h.otherAccount()).accountId), c: await makeContact(h) }), path: (x) => `/contacts/${x.c.id}/segments/${x.seg.id}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for an unknown contact', method: 'POST', setup: (h) => makeSegment(h), path: (s) => `/contacts/nobody@example.com/segments/${s.id}`, status: 404, code: 'not_found' },
    { name: 'refuses a segment id over 400 characters', method: 'POST', path: `/contacts/${missing}/segments/${'s'.repeat(401)}`, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'POST', path: `/contacts/${missing}/segments/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/contacts/${missing}/segments/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/contacts/${missing}/segments/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // DELETE /contacts/{id}/segments/{segmentId}
    { name: 'removes a contact from a segment and leaves its other segments', method: 'DELETE', setup: inTwo, path: (x) => `/contacts/${x.c.id}/segments/${x.a.id}`, status: 200,
      check: async (r, x, h) => {
        expect(r.body).toEqual({ object: 'contact_segment', contact_id: x.c.id, segment_id: x.a.id, deleted: true })
        expect(await members(h, x.a.id)).toEqual([])
        expect(await members(h, x.b.id)).toHaveLength(1)
        expect(await h.root.db.q.select().from(auditEntries).where(and(eq(auditEntries.action, 'segment_removed'), eq(auditEntries.resourceId, x.c.id)))).toHaveLength(1)
      } },
    { name: 'removes an unsubscribed contact too', method: 'DELETE', setup: async (h) => {
      const seg = await makeSegment(h)
      return { seg, c: await optedOutContact(h, 'ada@example.com', { segments: [seg.id] }) }
    }, path: (x) => `/contacts/ada@example.com/segments/${x.seg.id}`, status: 200, expect: { deleted: true } },
    { name: 'answers 404 when the contact is not in the segment', method: 'DELETE', setup: inTwo, path: (x) => `/contacts/${x.c.id}/segments/${x.other.id}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for an unknown segment', method: 'DELETE', setup: (h) => makeContact(h), path: (c) => `/contacts/${c.id}/segments/${missing}`, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'DELETE', path: `/contacts/${missing}/segments/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'DELETE', path: `/contacts/${missing}/segments/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'DELETE', path: `/contacts/${missing}/segments/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /segments/{id}/contacts
    { name: 'lists a segment’s members newest first', method: 'GET', setup: async (h) => {
      const seg = await makeSegment(h)
      await makeContact(h, { email: 'a@example.com', segments: [seg.id] })
      h.clock.advance(1000)
      await makeContact(h, { email: 'b@example.com' })
      await makeContact(h, { email: 'c@example.com', segments: [seg.id], unsubscribed: true })
      return seg
    }, path: (s) => `/segments/${s.id}/contacts`, status: 200,
      check: async (r, s, h) => {
        expect(r.body.data.map((c: { email: string }) => c.email)).toEqual(['c@example.com', 'a@example.com'])
        const subscribed = await h.call('GET', `/segments/${s.id}/contacts`, { query: { unsubscribed: 'false' } })
        expect(subscribed.body.data.map((c: { email: string }) => c.email)).toEqual(['a@example.com'])
      } },
    { name: 'answers 404 for an unknown segment', method: 'GET', path: `/segments/${missing}/contacts`, status: 404, code: 'not_found' },
    { name: 'refuses a tampered cursor', method: 'GET', setup: (h) => makeSegment(h), path: (s) => `/segments/${s.id}/contacts`, query: { cursor: 'x.y' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a since after the until', method: 'GET', setup: (h) => makeSegment(h), path: (s) => `/segments/${s.id}/contacts`, query: { since: '2026-03-02', until: '2026-03-01' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/segments/${missing}/contacts`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/segments/${missing}/contacts`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/segments/${missing}/contacts`, as: 'revoked', status: 403, code: 'invalid_api_key' },
  ])
})

describe('Audience contacts (legacy): scenarios', () => {
  scenarios([
    // POST /audiences/{audienceId}/contacts
    { name: 'creates a contact in the audience', method: 'POST', setup: (h) => makeSegment(h, 'Newsletter'), path: (a) => `/audiences/${a.id}/contacts`, body: { email: 'Ada@Example.com', first_name: 'Ada', unsubscribed: false }, status: 201,
      expect: { object: 'contact', email: 'ada@example.com', first_name: 'Ada' },
      check: async (r, a, h) => expect(await members(h, a.id)).toEqual([expect.objectContaining({ contactId: r.body.id })]) },
    { name: 'takes properties checked against their definitions', method: 'POST', setup: async (h) => {
      await makeProperty(h, 'plan', 'string')
      return makeSegment(h)
    }, path: (a) => `/audiences/${a.id}/contacts`, body: { email: 'a@example.com', properties: { plan: 'pro' } }, status: 201, expect: { properties: { plan: 'pro' } } },
    { name: 'accepts a body audience_id equal to the path', method: 'POST', setup: (h) => makeSegment(h), path: (a) => `/audiences/${a.id}/contacts`, body: (a: any) => ({ email: 'a@example.com', audience_id: a.id.toUpperCase() }), status: 201 },
    { name: 'refuses a body audience_id that differs from the path', method: 'POST', setup: async (h) => [await makeSegment(h, 'A'), await makeSegment(h, 'B')], path: (x) => `/audiences/${x[0].id}/contacts`, body: (x: any) => ({ email: 'a@example.com', audience_id: x[1].id }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses an address the account already holds', method: 'POST', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts`, body: { email: 'grace@example.com' }, status: 409, code: 'contact_already_exists',
      check: async (r, x, h) => {
        expect(r.body.contact_id).toBe(x.outside.id)
        expect(await members(h, x.aud.id)).toHaveLength(1)
      } },
    { name: 'refuses to record as subscribed an address its owner unsubscribed', method: 'POST', setup: async (h) => {
      const a = await makeSegment(h)
      await optedOutContact(h, 'gone@example.com')
      await h.call('DELETE', '/contacts/gone@example.com')
      return a
    }, path: (a) => `/audiences/${a.id}/contacts`, body: { email: 'gone@example.com', unsubscribed: false }, status: 409, code: 'contact_resubscribe_required' },
    { name: 'refuses a missing email', method: 'POST', setup: (h) => makeSegment(h), path: (a) => `/audiences/${a.id}/contacts`, body: { first_name: 'Ada' }, status: 422, code: 'missing_required_field' },
    { name: 'answers 404 for an unknown audience and creates nothing', method: 'POST', path: `/audiences/${missing}/contacts`, body: { email: 'a@example.com' }, status: 404, code: 'not_found',
      check: async (r, _x, h) => {
        expect(r.body.message).toBe(`Audience ${missing} not found.`)
        expect(await h.root.db.q.select().from(contacts)).toEqual([])
      } },
    { name: 'refuses a sending-only key', method: 'POST', path: `/audiences/${missing}/contacts`, as: 'sending', body: { email: 'a@example.com' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/audiences/${missing}/contacts`, as: 'none', body: { email: 'a@example.com' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/audiences/${missing}/contacts`, as: 'revoked', body: { email: 'a@example.com' }, status: 403, code: 'invalid_api_key' },

    // GET /audiences/{audienceId}/contacts
    { name: 'lists the audience’s contacts only', method: 'GET', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts`, status: 200,
      check: (r, x) => expect(r.body).toMatchObject({ object: 'list', data: [{ id: x.member.id, email: 'ada@example.com' }], has_more: false }) },
    { name: 'answers 404 for an unknown audience', method: 'GET', path: `/audiences/${missing}/contacts`, status: 404, code: 'not_found' },
    { name: 'refuses an after that is no contact id', method: 'GET', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts`, query: { after: 'nope' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a bad created range', method: 'GET', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts`, query: { since: '2026-03-03', until: '2026-03-02' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/audiences/${missing}/contacts`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/audiences/${missing}/contacts`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/audiences/${missing}/contacts`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /audiences/{audienceId}/contacts/{id}
    { name: 'gets a member by id', method: 'GET', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts/${x.member.id}`, status: 200, expect: { object: 'contact', email: 'ada@example.com', first_name: 'Ada' } },
    { name: 'gets a member by address', method: 'GET', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts/ADA%40example.com`, status: 200, expect: { first_name: 'Ada' } },
    { name: 'answers 404 for a contact outside the audience', method: 'GET', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts/${x.outside.id}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for an unknown audience', method: 'GET', setup: audience, path: (x) => `/audiences/${missing}/contacts/${x.member.id}`, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/audiences/${missing}/contacts/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/audiences/${missing}/contacts/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/audiences/${missing}/contacts/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // PATCH /audiences/{audienceId}/contacts/{id}
    { name: 'updates a member', method: 'PATCH', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts/ada@example.com`, body: { last_name: 'Lovelace', unsubscribed: true }, status: 200, expect: { first_name: 'Ada', last_name: 'Lovelace', unsubscribed: true } },
    { name: 'refuses an address another contact holds', method: 'PATCH', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts/${x.member.id}`, body: { email: 'grace@example.com' }, status: 409, code: 'contact_already_exists' },
    { name: 'refuses to resubscribe a member who unsubscribed themselves', method: 'PATCH', setup: async (h) => {
      const aud = await makeSegment(h)
      return { aud, c: await optedOutContact(h, 'ada@example.com', { audience_id: aud.id }) }
    }, path: (x) => `/audiences/${x.aud.id}/contacts/${x.c.id}`, body: { unsubscribed: false }, status: 409, code: 'contact_resubscribe_required' },
    { name: 'answers 404 for a contact outside the audience and changes nothing', method: 'PATCH', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts/${x.outside.id}`, body: { first_name: 'X' }, status: 404, code: 'not_found',
      check: async (_r, x, h) => expect((await h.call('GET', `/contacts/${x.outside.id}`)).body.first_name).toBeNull() },
    { name: 'refuses a sending-only key', method: 'PATCH', path: `/audiences/${missing}/contacts/${missing}`, as: 'sending', body: {}, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'PATCH', path: `/audiences/${missing}/contacts/${missing}`, as: 'none', body: {}, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'PATCH', path: `/audiences/${missing}/contacts/${missing}`, as: 'revoked', body: {}, status: 403, code: 'invalid_api_key' },

    // DELETE /audiences/{audienceId}/contacts/{id}
    { name: 'deletes a member, echoing the reference as given', method: 'DELETE', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts/Ada@Example.com`, status: 200,
      check: async (r, x, h) => {
        expect(r.body).toEqual({ object: 'contact', id: x.member.id, contact: 'Ada@Example.com', deleted: true })
        expectError(await h.call('GET', `/contacts/${x.member.id}`), 'not_found', 404)
        expect(await members(h, x.aud.id)).toEqual([])
      } },
    { name: 'answers 404 for a contact outside the audience and deletes nothing', method: 'DELETE', setup: audience, path: (x) => `/audiences/${x.aud.id}/contacts/${x.outside.id}`, status: 404, code: 'not_found',
      check: async (_r, _x, h) => expect(await h.root.db.q.select().from(contacts)).toHaveLength(2) },
    { name: 'refuses a sending-only key', method: 'DELETE', path: `/audiences/${missing}/contacts/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'DELETE', path: `/audiences/${missing}/contacts/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'DELETE', path: `/audiences/${missing}/contacts/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },
  ])
})

describe('Segment membership: rules', () => {
  test('joining and leaving a segment send contact.updated with the new segment_ids', async () => {
    // A loopback endpoint: the events are read from the outbox, nothing leaves the machine.
    const h = await harness({ MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' })
    try {
      const { seg, c } = await pair(h)
      const hook = await h.call('POST', '/webhooks', { body: { endpoint: 'http://127.0.0.1:9/hooks', events: ['contact.updated'] } })
      expect(hook.status, JSON.stringify(hook.body)).toBe(201)
      await h.call('POST', `/contacts/${c.id}/segments/${seg.id}`)
      await h.call('DELETE', `/contacts/${c.id}/segments/${seg.id}`)
      const sent = (await h.root.db.q.select().from(webhookDeliveries).where(eq(webhookDeliveries.type, 'contact.updated'))).map((d) => JSON.parse(d.payload).data)
      expect(sent).toEqual([
        expect.objectContaining({ id: c.id, email: 'ada@example.com', segment_ids: [seg.id] }),
        expect.objectContaining({ id: c.id, segment_ids: [] }),
      ])
    } finally {
      await h.close()
    }
  })

  test('another account can neither see nor change memberships', async () => {
    const h = await harness()
    try {
      const { seg, c } = await pair(h)
      await h.call('POST', `/contacts/${c.id}/segments/${seg.id}`)
      const o = await h.otherAccount()
      expectError(await h.call('GET', `/contacts/${c.id}/segments`, { key: o.token }), 'not_found', 404)
      expectError(await h.call('GET', `/segments/${seg.id}/contacts`, { key: o.token }), 'not_found', 404)
      expectError(await h.call('DELETE', `/contacts/${c.id}/segments/${seg.id}`, { key: o.token }), 'not_found', 404)
      expectError(await h.call('GET', `/audiences/${seg.id}/contacts/${c.id}`, { key: o.token }), 'not_found', 404)
      expect(await members(h, seg.id)).toHaveLength(1)
    } finally {
      await h.close()
    }
  })
})
