// Segments (/segments) and the same segments under their older name (/audiences):
// create, list, get, change, delete, and the members of a rule segment.
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { auditEntries, broadcasts, segmentContacts, segments, type BroadcastStatus } from '../src/db/tables'
import { iso } from '../src/lib/clock'
import { makeContact, makeProperty, makeSegment, missing } from './support/contact-fixtures'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios, type Scenario } from './support/scenarios'

const SEGMENT_FIELDS = ['object', 'id', 'name', 'type', 'match', 'rules', 'created_at', 'updated_at']
const T0 = '2026-03-02T10:00:00.000Z'
const vipRule = { field: 'property', key: 'vip', op: 'eq', value: true } as const

async function create(h: Harness, body: Record<string, unknown> = { name: 'Customers' }, key?: string) {
  const r = await h.call('POST', '/segments', { key, body })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; name: string }
}
/** Two segments a second apart: a static one, then a rule one. */
async function two(h: Harness) {
  const a = await create(h, { name: 'Hand-picked' })
  h.clock.advance(1000)
  await makeProperty(h, 'vip', 'boolean')
  const b = await create(h, { name: 'VIPs', rules: [vipRule] })
  return { a, b }
}
/** A rule segment on `vip`, with one contact matching and one not. */
async function vips(h: Harness) {
  await makeProperty(h, 'vip', 'boolean')
  const seg = await create(h, { name: 'VIPs', rules: [vipRule] })
  const yes = await makeContact(h, { email: 'vip@x.io', properties: { vip: true } })
  const no = await makeContact(h, { email: 'plain@x.io', properties: { vip: false } })
  return { seg, yes, no }
}
/** A static segment with one member. */
async function withMember(h: Harness) {
  const seg = await makeSegment(h, 'Hand-picked')
  const c = await makeContact(h, { segments: [seg.id] })
  return { seg, c }
}
/** A segment a broadcast in `status` names, written as the broadcasts service writes one. */
async function broadcastFor(h: Harness, status: BroadcastStatus) {
  const seg = await makeSegment(h, 'Newsletter')
  const id = h.root.ids.uuid()
  const now = iso(h.clock.now())
  await h.root.db.write((tx) =>
    tx.insert(broadcasts).values({ id, accountId: h.accountId, segmentId: seg.id, from: 'news@acme.dev', subject: 'News', replyTo: [], status, enqueued: 0, canceledCount: 0, createdAt: now, updatedAt: now }),
  )
  return { seg, broadcast: id }
}
const theirs = async (h: Harness) => create(h, { name: 'Theirs' }, (await h.otherAccount()).token)
/** A sending-only key, no key and a revoked key, refused on a management route. */
const refusals = (method: string, path: string, body?: unknown): Scenario[] => [
  { name: 'refuses a sending-only key', method, path, body, as: 'sending', status: 403, code: 'restricted_api_key' },
  { name: 'refuses no key', method, path, body, as: 'none', status: 401, code: 'missing_api_key' },
  { name: 'refuses a revoked key', method, path, body, as: 'revoked', status: 403, code: 'invalid_api_key' },
]
const stored = async (h: Harness, id: string) => (await h.root.db.q.select().from(segments).where(eq(segments.id, id)))[0]

describe('Segments: scenarios', () => {
  scenarios([
    // POST /segments
    { name: 'creates a static segment', method: 'POST', path: '/segments', body: { name: 'Customers' }, status: 201,
      expect: { object: 'segment', name: 'Customers', type: 'static', match: 'all', rules: [], created_at: T0, updated_at: T0 },
      check: async (r, _c, h) => {
        for (const f of SEGMENT_FIELDS) expect(r.body).toHaveProperty(f)
        const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resourceId, r.body.id))
        expect(audit).toMatchObject({ resource: 'segment', action: 'created' })
      } },
    { name: 'creates a rule segment of every condition kind', method: 'POST', path: '/segments',
      setup: async (h) => {
        await makeProperty(h, 'plan', 'string')
        return (await h.call('POST', '/topics', { body: { name: 'News', default_subscription: 'opt_in' } })).body
      },
      body: (t: { id: string }) => ({
        name: 'Engaged',
        match: 'any',
        rules: [
          { field: 'property', key: 'plan', op: 'eq', value: 'pro' },
          { field: 'property', key: 'plan', op: 'exists' },
          { field: 'topic', topic_id: t.id, subscribed: true },
          { field: 'engagement', event: 'clicked', within_days: 30, negate: true },
          { field: 'created_at', op: 'within_days', value: 7 },
          { field: 'created_at', op: 'before', value: '2026-01-01' },
          { field: 'unsubscribed', value: false },
          { field: 'email', op: 'ends_with', value: '@acme.com' },
        ],
      }),
      status: 201,
      check: (r) => {
        expect(r.body).toMatchObject({ type: 'rules', match: 'any' })
        expect(r.body.rules).toHaveLength(8)
        expect(r.body.rules[3]).toEqual({ field: 'engagement', event: 'clicked', within_days: 30, negate: true })
      } },
    { name: 'refuses a property the account does not define, naming the rule', method: 'POST', path: '/segments', body: { name: 'x', rules: [{ field: 'unsubscribed', value: false }, { field: 'property', key: 'plan', op: 'eq', value: 'pro' }] }, status: 422, code: 'invalid_parameter',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain('rules[1].key')
        expect(r.body.details).toEqual([{ field: 'rules[1].key', message: expect.stringContaining('POST /contact-properties') }])
        expect(await h.root.db.q.select().from(segments)).toEqual([])
      } },
    { name: 'refuses a comparison that does not fit the property’s type', method: 'POST', path: '/segments', setup: (h) => makeProperty(h, 'plan', 'string'), body: { name: 'x', rules: [{ field: 'property', key: 'plan', op: 'gt', value: 'a' }] }, status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.details).toEqual([{ field: 'rules[0].op', message: expect.stringContaining('eq, ne, contains, exists, not_exists') }]) },
    { name: 'refuses a value not of the property’s type', method: 'POST', path: '/segments', setup: (h) => makeProperty(h, 'seats', 'number'), body: { name: 'x', rules: [{ field: 'property', key: 'seats', op: 'gt', value: '5' }] }, status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.details[0]).toMatchObject({ field: 'rules[0].value', message: expect.stringContaining('must be a number') }) },
    { name: 'refuses a date property compared with something that is no date', method: 'POST', path: '/segments', setup: (h) => makeProperty(h, 'renews', 'date'), body: { name: 'x', rules: [{ field: 'property', key: 'renews', op: 'lt', value: '2026-02-30' }] }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a comparison without a value, and exists with one', method: 'POST', path: '/segments', setup: (h) => makeProperty(h, 'plan', 'string'),
      body: { name: 'x', rules: [{ field: 'property', key: 'plan', op: 'eq' }, { field: 'property', key: 'plan', op: 'exists', value: 'pro' }] }, status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.details.map((d: { field: string }) => d.field)).toEqual(['rules[0].value', 'rules[1].value']) },
    { name: 'refuses a topic that does not exist', method: 'POST', path: '/segments', body: { name: 'x', rules: [{ field: 'topic', topic_id: missing, subscribed: true }] }, status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.details[0].field).toBe('rules[0].topic_id') },
    { name: 'refuses another account’s topic', method: 'POST', path: '/segments', setup: async (h) => {
      const o = await h.otherAccount()
      return (await h.call('POST', '/topics', { key: o.token, body: { name: 'Theirs', default_subscription: 'opt_in' } })).body
    }, body: (t: { id: string }) => ({ name: 'x', rules: [{ field: 'topic', topic_id: t.id, subscribed: true }] }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a created_at date that is no date', method: 'POST', path: '/segments', body: { name: 'x', rules: [{ field: 'created_at', op: 'after', value: 'last tuesday' }] }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses within_days that is no whole number of days', method: 'POST', path: '/segments', body: { name: 'x', rules: [{ field: 'created_at', op: 'within_days', value: '7' }] }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses an unknown rule kind', method: 'POST', path: '/segments', body: { name: 'x', rules: [{ field: 'shoe_size', value: 44 }] }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown property comparison', method: 'POST', path: '/segments', body: { name: 'x', rules: [{ field: 'property', key: 'plan', op: 'like', value: 'p%' }] }, status: 400, code: 'validation_error' },
    { name: 'refuses an engagement window over 3650 days', method: 'POST', path: '/segments', body: { name: 'x', rules: [{ field: 'engagement', event: 'opened', within_days: 4000 }] }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown engagement event', method: 'POST', path: '/segments', body: { name: 'x', rules: [{ field: 'engagement', event: 'bounced', within_days: 7 }] }, status: 400, code: 'validation_error' },
    { name: 'refuses more than 50 rules', method: 'POST', path: '/segments', body: { name: 'x', rules: Array.from({ length: 51 }, () => ({ field: 'unsubscribed', value: false })) }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown match', method: 'POST', path: '/segments', body: { name: 'x', match: 'most' }, status: 400, code: 'validation_error' },
    { name: 'refuses a missing name', method: 'POST', path: '/segments', body: { rules: [] }, status: 400, code: 'validation_error' },
    { name: 'refuses an empty name', method: 'POST', path: '/segments', body: { name: '' }, status: 400, code: 'validation_error' },
    { name: 'refuses a body that is not JSON', method: 'POST', path: '/segments', raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, code: 'unsupported_media_type' },
    ...refusals('POST', '/segments', { name: 'x' }),
    { name: 'refuses an Idempotency-Key over 256 characters', method: 'POST', path: '/segments', headers: { 'Idempotency-Key': 'k'.repeat(257) }, body: { name: 'x' }, status: 400, code: 'invalid_idempotency_key' },

    // GET /segments
    { name: 'lists segments newest first with their rules', method: 'GET', path: '/segments', setup: two, status: 200,
      check: (r, x) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((s: { id: string; type: string }) => [s.id, s.type])).toEqual([[x.b.id, 'rules'], [x.a.id, 'static']])
        expect(r.body.data[0].rules).toEqual([vipRule])
      } },
    { name: 'pages with limit and next_cursor', method: 'GET', path: '/segments', setup: two, query: { limit: 1 }, status: 200,
      check: async (r, x, h) => {
        expect(r.body.data.map((s: { id: string }) => s.id)).toEqual([x.b.id])
        const next = await h.call('GET', '/segments', { query: { limit: 1, cursor: r.body.next_cursor } })
        expect(next.body).toMatchObject({ data: [expect.objectContaining({ id: x.a.id })], has_more: false })
      } },
    { name: 'filters by created range', method: 'GET', path: '/segments', setup: two, query: { since: '2026-03-02T10:00:01Z' }, status: 200,
      check: (r, x) => expect(r.body.data.map((s: { id: string }) => s.id)).toEqual([x.b.id]) },
    { name: 'lists only the account’s own segments', method: 'GET', path: '/segments', setup: theirs, status: 200, expect: { data: [] } },
    { name: 'refuses since after until', method: 'GET', path: '/segments', query: { since: '2026-03-02', until: '2026-03-01' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a since that is no date', method: 'GET', path: '/segments', query: { since: 'yesterday' }, status: 400, code: 'validation_error' },
    { name: 'refuses a limit of 501', method: 'GET', path: '/segments', query: { limit: 501 }, status: 400, code: 'validation_error' },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/segments', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a cursor issued under other filters', method: 'GET', path: '/segments', setup: async (h) => {
      await two(h)
      return (await h.call('GET', '/segments', { query: { limit: 1 } })).body.next_cursor
    }, status: 200,
      check: async (_r, cursor, h) => expectError(await h.call('GET', '/segments', { query: { limit: 1, cursor, since: '2026-01-01' } }), 'invalid_cursor', 400) },
    ...refusals('GET', '/segments'),

    // GET /segments/{id}
    { name: 'gets one segment with its rules', method: 'GET', setup: two, path: (x) => `/segments/${x.b.id}`, status: 200, expect: { object: 'segment', name: 'VIPs', type: 'rules', rules: [vipRule] } },
    { name: 'gets one segment by its upper-case id', method: 'GET', setup: two, path: (x) => `/segments/${x.a.id.toUpperCase()}`, status: 200, expect: { name: 'Hand-picked', type: 'static' } },
    { name: 'answers 404 for a segment that does not exist', method: 'GET', path: `/segments/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s segment', method: 'GET', setup: theirs, path: (s) => `/segments/${s.id}`, status: 404, code: 'not_found' },
    ...refusals('GET', `/segments/${missing}`),

    // PATCH /segments/{id}
    { name: 'renames a segment and keeps its rules', method: 'PATCH', setup: two, path: (x) => `/segments/${x.b.id}`, body: { name: 'Very important' }, status: 200,
      expect: { name: 'Very important', rules: [vipRule], type: 'rules' },
      check: async (r, x, h) => {
        expect((await stored(h, x.b.id)).name).toBe('Very important')
        const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'updated'))
        expect(audit).toMatchObject({ resource: 'segment', before: expect.objectContaining({ name: 'VIPs' }), after: expect.objectContaining({ name: 'Very important' }) })
      } },
    { name: 'changes the rules and who the members are', method: 'PATCH', setup: vips, path: (x) => `/segments/${x.seg.id}`, body: { rules: [{ field: 'property', key: 'vip', op: 'eq', value: false }] }, status: 200,
      check: async (r, x, h) => {
        expect(r.body.rules).toEqual([{ field: 'property', key: 'vip', op: 'eq', value: false }])
        expect((await h.call('GET', `/segments/${x.seg.id}/contacts`)).body.data.map((c: { id: string }) => c.id)).toEqual([x.no.id])
      } },
    { name: 'changes match alone', method: 'PATCH', setup: two, path: (x) => `/segments/${x.b.id}`, body: { match: 'any' }, status: 200, expect: { match: 'any', rules: [vipRule] } },
    { name: 'gives rules to a static segment that has no members yet', method: 'PATCH', setup: two, path: (x) => `/segments/${x.a.id}`, body: { rules: [vipRule] }, status: 200, expect: { type: 'rules' } },
    { name: 'makes a rule segment static with rules: [], starting empty', method: 'PATCH', setup: vips, path: (x) => `/segments/${x.seg.id}`, body: { rules: [] }, status: 200, expect: { type: 'static', rules: [] },
      check: async (_r, x, h) => expect((await h.call('GET', `/segments/${x.seg.id}/contacts`)).body.data).toEqual([]) },
    { name: 'refuses rules for a static segment with members, and keeps it as it was', method: 'PATCH', setup: withMember, path: (x) => `/segments/${x.seg.id}`, body: { name: 'Renamed', rules: [{ field: 'unsubscribed', value: false }] }, status: 422, code: 'invalid_parameter',
      check: async (r, x, h) => {
        expect(r.body.message).toContain('1 member')
        expect(await stored(h, x.seg.id)).toMatchObject({ name: 'Hand-picked', rules: [] })
        expect(await h.root.db.q.select().from(segmentContacts)).toHaveLength(1)
      } },
    { name: 'refuses a rule that does not fit the account, naming it', method: 'PATCH', setup: two, path: (x) => `/segments/${x.b.id}`, body: { rules: [vipRule, { field: 'property', key: 'vip', op: 'contains', value: 'y' }] }, status: 422, code: 'invalid_parameter',
      check: async (r, x, h) => {
        expect(r.body.details[0].field).toBe('rules[1].op')
        expect((await stored(h, x.b.id)).rules).toEqual([vipRule])
      } },
    { name: 'refuses an empty name', method: 'PATCH', setup: two, path: (x) => `/segments/${x.a.id}`, body: { name: '' }, status: 400, code: 'validation_error' },
    { name: 'answers 404 for a segment that does not exist', method: 'PATCH', path: `/segments/${missing}`, body: { name: 'x' }, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s segment', method: 'PATCH', setup: theirs, path: (s) => `/segments/${s.id}`, body: { name: 'Mine now' }, status: 404, code: 'not_found' },
    ...refusals('PATCH', `/segments/${missing}`, { name: 'x' }),

    // DELETE /segments/{id}
    { name: 'deletes a segment and its memberships; the contacts stay', method: 'DELETE', setup: withMember, path: (x) => `/segments/${x.seg.id}`, status: 200,
      expect: { object: 'segment', deleted: true },
      check: async (r, x, h) => {
        expect(r.body.id).toBe(x.seg.id)
        expect(await stored(h, x.seg.id)).toBeUndefined()
        expect(await h.root.db.q.select().from(segmentContacts)).toEqual([])
        expect((await h.call('GET', `/contacts/${x.c.id}`)).status).toBe(200)
        expectError(await h.call('GET', `/segments/${x.seg.id}`), 'not_found', 404)
      } },
    { name: 'refuses to delete a segment a draft broadcast will send to', method: 'DELETE', setup: (h) => broadcastFor(h, 'draft'), path: (x) => `/segments/${x.seg.id}`, status: 409, code: 'segment_in_use',
      check: async (r, x, h) => {
        expect(r.body.message).toContain(`broadcast ${x.broadcast}`)
        expect(r.body.used_by).toEqual([`broadcast ${x.broadcast}`])
        expect(await stored(h, x.seg.id)).toBeDefined()
      } },
    { name: 'refuses to delete a segment a broadcast is sending to', method: 'DELETE', setup: (h) => broadcastFor(h, 'sending'), path: (x) => `/segments/${x.seg.id}`, status: 409, code: 'segment_in_use' },
    { name: 'deletes a segment whose broadcasts were all sent', method: 'DELETE', setup: (h) => broadcastFor(h, 'sent'), path: (x) => `/segments/${x.seg.id}`, status: 200, expect: { deleted: true } },
    { name: 'answers 404 for a segment that does not exist', method: 'DELETE', path: `/segments/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s segment', method: 'DELETE', setup: theirs, path: (s) => `/segments/${s.id}`, status: 404, code: 'not_found' },
    ...refusals('DELETE', `/segments/${missing}`),

    // GET /segments/{id}/contacts
    { name: 'lists the contacts a rule segment’s rules select', method: 'GET', setup: vips, path: (x) => `/segments/${x.seg.id}/contacts`, status: 200,
      check: (r, x) => expect(r.body.data.map((c: { id: string }) => c.id)).toEqual([x.yes.id]) },
    { name: 'narrows a rule segment’s members by the list filters', method: 'GET', setup: vips, path: (x) => `/segments/${x.seg.id}/contacts`, query: { email: 'plain@x.io' }, status: 200, expect: { data: [] } },
    { name: 'refuses since after until', method: 'GET', setup: vips, path: (x) => `/segments/${x.seg.id}/contacts`, query: { since: '2026-03-02', until: '2026-03-01' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a tampered cursor', method: 'GET', setup: vips, path: (x) => `/segments/${x.seg.id}/contacts`, query: { cursor: 'abc.def' }, status: 400, code: 'invalid_cursor' },
    { name: 'answers 404 for a segment that does not exist', method: 'GET', path: `/segments/${missing}/contacts`, status: 404, code: 'not_found' },
  ])
})

describe('Audiences (segments under their older name): scenarios', () => {
  scenarios([
    // POST /audiences
    { name: 'creates an audience: a static segment', method: 'POST', path: '/audiences', body: { name: 'Registered Users' }, status: 201,
      check: async (r, _c, h) => {
        expect(r.body).toEqual({ object: 'audience', id: expect.any(String), name: 'Registered Users', created_at: T0 })
        expect((await h.call('GET', `/segments/${r.body.id}`)).body).toMatchObject({ object: 'segment', type: 'static', name: 'Registered Users' })
      } },
    { name: 'refuses a missing name', method: 'POST', path: '/audiences', body: {}, status: 400, code: 'validation_error' },
    { name: 'refuses rules: an audience is static', method: 'POST', path: '/audiences', body: { name: 'x', rules: [{ field: 'unsubscribed', value: false }] }, status: 400, code: 'validation_error' },
    ...refusals('POST', '/audiences', { name: 'x' }),
    { name: 'refuses an Idempotency-Key over 256 characters', method: 'POST', path: '/audiences', headers: { 'Idempotency-Key': 'k'.repeat(257) }, body: { name: 'x' }, status: 400, code: 'invalid_idempotency_key' },

    // GET /audiences
    { name: 'lists every segment, rule ones too, in the audience shape', method: 'GET', path: '/audiences', setup: two, status: 200,
      check: (r, x) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data).toEqual([
          { object: 'audience', id: x.b.id, name: 'VIPs', created_at: '2026-03-02T10:00:01.000Z' },
          { object: 'audience', id: x.a.id, name: 'Hand-picked', created_at: T0 },
        ])
      } },
    { name: 'pages with limit and after', method: 'GET', path: '/audiences', setup: two, status: 200,
      check: async (_r, x, h) => {
        const after = await h.call('GET', '/audiences', { query: { limit: 1, after: x.b.id } })
        expect(after.body).toMatchObject({ data: [expect.objectContaining({ id: x.a.id })], has_more: false })
      } },
    { name: 'refuses since after until', method: 'GET', path: '/audiences', query: { since: '2026-03-02', until: '2026-03-01' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a limit that is no number', method: 'GET', path: '/audiences', query: { limit: 'ten' }, status: 400, code: 'validation_error' },
    { name: 'refuses an after that is no segment id', method: 'GET', path: '/audiences', query: { after: 'nope' }, status: 400, code: 'invalid_cursor' },
    ...refusals('GET', '/audiences'),

    // GET /audiences/{id}
    { name: 'gets one segment as an audience', method: 'GET', setup: two, path: (x) => `/audiences/${x.b.id}`, status: 200,
      check: (r, x) => expect(r.body).toEqual({ object: 'audience', id: x.b.id, name: 'VIPs', created_at: '2026-03-02T10:00:01.000Z' }) },
    { name: 'answers 404 for an audience that does not exist', method: 'GET', path: `/audiences/${missing}`, status: 404, code: 'not_found',
      check: (r) => expect(r.body.message).toBe(`Audience ${missing} not found.`) },
    { name: 'answers 404 for another account’s audience', method: 'GET', setup: theirs, path: (s) => `/audiences/${s.id}`, status: 404, code: 'not_found' },
    ...refusals('GET', `/audiences/${missing}`),

    // DELETE /audiences/{id}
    { name: 'deletes an audience and its memberships; the contacts stay', method: 'DELETE', setup: withMember, path: (x) => `/audiences/${x.seg.id}`, status: 200,
      check: async (r, x, h) => {
        expect(r.body).toEqual({ object: 'audience', id: x.seg.id, deleted: true })
        expect(await h.root.db.q.select().from(segmentContacts)).toEqual([])
        expect((await h.call('GET', `/contacts/${x.c.id}`)).status).toBe(200)
      } },
    { name: 'refuses to delete an audience a scheduled broadcast will send to', method: 'DELETE', setup: (h) => broadcastFor(h, 'scheduled'), path: (x) => `/audiences/${x.seg.id}`, status: 409, code: 'segment_in_use',
      check: (r, x) => expect(r.body.message).toBe(`Audience ${x.seg.id} cannot be deleted: broadcast ${x.broadcast} uses it.`) },
    { name: 'answers 404 for an audience that does not exist', method: 'DELETE', path: `/audiences/${missing}`, status: 404, code: 'not_found' },
    ...refusals('DELETE', `/audiences/${missing}`),
  ])
})

describe('Segments', () => {
  test('an Idempotency-Key replays the create and makes no second segment', async () => {
    const h = await harness()
    try {
      const send = (name: string) => h.call('POST', '/segments', { headers: { 'Idempotency-Key': 'seg-1' }, body: { name } })
      const first = await send('Customers')
      const again = await send('Customers')
      expect(again.status).toBe(201)
      expect(again.body.id).toBe(first.body.id)
      expect(await h.root.db.q.select().from(segments)).toHaveLength(1)
      expectError(await send('Other'), 'idempotency_payload_mismatch', 409)
    } finally {
      await h.close()
    }
  })

  test('the document names the audience path parameter `id`, as the catalogue does', async () => {
    const h = await harness()
    try {
      const spec = (await h.call('GET', '/openapi.json', { key: null })).body
      expect(Object.keys(spec.paths).filter((p) => p.startsWith('/audiences'))).toEqual(
        expect.arrayContaining(['/audiences', '/audiences/{id}', '/audiences/{audienceId}/contacts', '/audiences/{audienceId}/contacts/{id}']),
      )
      expect(spec.paths['/audiences/{audienceId}']).toBeUndefined()
      for (const method of ['get', 'delete']) {
        const op = spec.paths['/audiences/{id}'][method]
        expect(op['x-path-names']).toBeUndefined()
        expect(op.parameters.filter((p: { in: string }) => p.in === 'path').map((p: { name: string }) => p.name)).toEqual(['id'])
      }
    } finally {
      await h.close()
    }
  })
})
