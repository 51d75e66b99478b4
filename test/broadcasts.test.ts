import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { asc, eq } from 'drizzle-orm'
import { auditEntries, broadcasts, deliveries, deliveryAttempts, emails } from '../src/db/tables'
import { DeliveryWorker } from '../src/delivery/worker'
import { BroadcastWorker } from '../src/broadcasts/fanout'
import { clickToken, openToken } from '../src/tracking/links'
import { audience, broadcastWorker, created, draft, fanOut, madeDraft, missing, sentBroadcast, SIM } from './support/broadcasts'
import { suppress, verifiedDomain } from './support/emails'
import { expectError, harness, type Harness } from './support/harness'
import { person } from './support/people'
import { scenarios, type Scenario } from './support/scenarios'

const BROADCAST_FIELDS = ['object', 'id', 'name', 'segment_id', 'audience_id', 'from', 'subject', 'reply_to', 'preview_text', 'html', 'text', 'topic_id', 'template', 'status', 'created_at', 'updated_at', 'scheduled_at', 'started_at', 'sent_at', 'canceled_at', 'recipient_count', 'counts', 'error']
const REAL = ['ada@customer.io', 'bob@customer.io']

const ownerKeyId = async (h: Harness) => (await h.call('GET', '/api-keys')).body.data.find((k: { name: string }) => k.name !== 'sender' && k.name !== 'revoked').id as string

/** A published template with a required variable. */
async function template(h: Harness, publish = true) {
  const t = await h.call('POST', '/templates', { body: { name: 'Newsletter', html: '<p>{{{intro}}}</p>', variables: [{ key: 'intro', type: 'string' }] } })
  expect(t.status, JSON.stringify(t.body)).toBe(201)
  if (publish) expect((await h.call('POST', `/templates/${t.body.id}/publish`)).status).toBe(200)
  return t.body as { id: string }
}

/** Refusals of a broadcast about to start: each is tried on POST /broadcasts with `send: true` and on POST /broadcasts/{id}/send, and leaves nothing changed. */
interface Refusal {
  name: string
  code: Scenario['code'] & string
  status: number
  /** Members of the segment (simulator addresses by default). */
  members?: string[]
  /** Draft fields. */
  over?: (h: Harness) => Promise<Record<string, unknown>> | Record<string, unknown>
  /** Made before the request; may return a token to call with. */
  before?: (h: Harness) => Promise<string | void>
  env?: Record<string, string>
  scheduledAt?: string
  message?: string
}

const REFUSALS: Refusal[] = [
  { name: 'refuses content without html or text', code: 'content_refused', status: 422, over: () => ({ html: null, text: null }), message: 'no content' },
  { name: 'refuses a link to a listed domain', code: 'link_domain_listed', status: 422, over: () => ({ text: 'See https://bit.ly/x' }), message: 'bit.ly' },
  { name: 'refuses a variable that is no contact field or property', code: 'invalid_parameter', status: 422, over: () => ({ html: '<p>{{{plan|free}}}</p>' }), message: '{{{plan}}}' },
  { name: 'refuses the unsubscribe URL in the subject', code: 'invalid_parameter', status: 422, over: () => ({ subject: 'Leave: {{{RESEND_UNSUBSCRIBE_URL}}}' }), message: 'subject' },
  { name: 'refuses a scheduled_at that is no time', code: 'invalid_parameter', status: 422, scheduledAt: 'whenever suits', message: 'not a time' },
  { name: 'refuses a scheduled_at in the past', code: 'invalid_parameter', status: 422, scheduledAt: '2026-03-01T10:00:00Z', message: 'not in the future' },
  { name: 'refuses a template never published', code: 'template_not_published', status: 422, over: async (h) => ({ html: null, text: null, template: { id: (await template(h, false)).id } }) },
  { name: 'refuses a template whose required variable is not given', code: 'template_variable_missing', status: 422, over: async (h) => ({ html: null, text: null, template: { id: (await template(h)).id } }), message: '`intro`' },
  { name: 'refuses a from outside the key’s domain scope', code: 'domain_scope_violation', status: 403, before: async (h) => (await h.key({ name: 'scoped', domain_scope: 'other.dev' })).token },
  { name: 'refuses real recipients from a domain the account has not verified', code: 'domain_not_verified', status: 403, members: [SIM[0], ...REAL], message: '2 of the 3 recipients' },
  {
    name: 'refuses real recipients from a verified domain with sending disabled',
    code: 'domain_sending_disabled',
    status: 403,
    members: REAL,
    before: async (h) => void (await verifiedDomain(h, 'acme.dev', { sendingEnabled: false })),
  },
  {
    name: 'refuses more recipients than the key’s budget holds',
    code: 'agent_budget_exceeded',
    status: 402,
    before: async (h) => void (await h.call('PATCH', `/limits/keys/${await ownerKeyId(h)}`, { body: { budget_per_period: 1, period: 'daily' } })),
    message: 'needs 2',
  },
  { name: 'refuses more recipients than the daily quota holds', code: 'daily_quota_exceeded', status: 429, env: { MAILROOM_DAILY_QUOTA: '1' } },
  { name: 'refuses more recipients than the monthly quota holds', code: 'monthly_quota_exceeded', status: 429, env: { MAILROOM_MONTHLY_QUOTA: '1' } },
]

function refusalScenarios(): Scenario[] {
  return REFUSALS.flatMap((r): Scenario[] => {
    const setup = async (h: Harness) => {
      const { segment } = await audience(h, r.members ?? SIM)
      const token = await r.before?.(h)
      const body = draft(segment.id, await r.over?.(h))
      return { segment, token, body }
    }
    // The owner's key unless the refusal made one of its own.
    const auth = (c: { token?: string }, h: Harness): Record<string, string> => ({ authorization: `Bearer ${c.token ?? h.token}` })
    const check = (r: Refusal) => async (res: { body: { message: string } }) => {
      if (r.message) expect(res.body.message).toContain(r.message)
    }
    return [
      {
        name: `${r.name} (create with send), and creates nothing`,
        method: 'POST',
        path: '/broadcasts',
        env: r.env,
        setup,
        as: 'none',
        headers: auth,
        body: (c: { body: Record<string, unknown> }) => ({ ...c.body, send: true, ...(r.scheduledAt ? { scheduled_at: r.scheduledAt } : {}) }),
        status: r.status,
        code: r.code,
        check: async (res, _c, h) => {
          await check(r)(res)
          expect(await h.root.db.q.select().from(broadcasts)).toEqual([])
        },
      },
      {
        name: `${r.name} (send), and leaves the draft as it was`,
        method: 'POST',
        env: r.env,
        setup: async (h) => {
          const c = await setup(h)
          return { ...c, broadcast: await created(h, c.body) }
        },
        path: (c: { broadcast: { id: string } }) => `/broadcasts/${c.broadcast.id}/send`,
        as: 'none',
        headers: auth,
        body: r.scheduledAt ? { scheduled_at: r.scheduledAt } : {},
        status: r.status,
        code: r.code,
        check: async (res, c, h) => {
          await check(r)(res)
          expect((await h.call('GET', `/broadcasts/${c.broadcast.id}`)).body).toMatchObject({ status: 'draft', started_at: null, recipient_count: null })
          expect(await h.root.db.q.select().from(emails)).toEqual([])
        },
      },
    ]
  })
}

/** The no key, revoked key and sending-only key refusals of one route. */
const guarded = (method: string, path: string, body?: unknown): Scenario[] => [
  { name: 'refuses a sending-only key', method, path, as: 'sending', body, status: 403, code: 'restricted_api_key' },
  { name: 'refuses no key', method, path, as: 'none', body, status: 401, code: 'missing_api_key' },
  { name: 'refuses a revoked key', method, path, as: 'revoked', body, status: 403, code: 'invalid_api_key' },
]

const otherAccountsDraft = async (h: Harness) => {
  const o = await h.otherAccount()
  const { segment } = await audience(h, [], 'Theirs', o.token)
  return created(h, draft(segment.id), o.token)
}

describe('Broadcasts: scenarios', () => {
  scenarios([
    // POST /broadcasts
    { name: 'creates a draft with Resend’s fields', method: 'POST', path: '/broadcasts', setup: (h) => audience(h),
      body: (c: any) => draft(c.segment.id, { name: 'March', reply_to: 'help@acme.dev', preview_text: 'What is new' }), status: 201,
      expect: { object: 'broadcast', name: 'March', status: 'draft', from: 'Acme News <news@acme.dev>', subject: 'March news', reply_to: ['help@acme.dev'], preview_text: 'What is new', topic_id: null, template: null, scheduled_at: null, started_at: null, sent_at: null, recipient_count: null, error: null, created_at: '2026-03-02T10:00:00.000Z' },
      check: async (r, c: any, h) => {
        for (const f of BROADCAST_FIELDS) expect(r.body).toHaveProperty(f)
        expect(r.body).toMatchObject({ segment_id: c.segment.id, audience_id: c.segment.id, counts: { enqueued: 0, sent: 0, delivered: 0, canceled: 0 } })
        expect((await h.call('GET', `/broadcasts/${r.body.id}`)).body).toEqual({ ...r.body, estimated_recipient_count: 2 })
        const audit = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resourceId, r.body.id))
        expect(audit.map((a) => a.action)).toEqual(['created'])
      } },
    { name: 'takes the legacy audience_id', method: 'POST', path: '/broadcasts', setup: (h) => audience(h),
      body: (c: any) => ({ audience_id: c.segment.id, from: 'news@acme.dev', subject: 'Hi', text: 'Hello' }), status: 201,
      check: (r, c: any) => expect(r.body).toMatchObject({ segment_id: c.segment.id, audience_id: c.segment.id }) },
    { name: 'takes a topic', method: 'POST', path: '/broadcasts',
      setup: async (h) => ({ ...(await audience(h)), topic: (await h.call('POST', '/topics', { body: { name: 'News', default_subscription: 'opt_out' } })).body }),
      body: (c: any) => draft(c.segment.id, { topic_id: c.topic.id.toUpperCase() }), status: 201,
      check: (r, c: any) => expect(r.body.topic_id).toBe(c.topic.id) },
    { name: 'with send: true, starts sending and states the recipient count', method: 'POST', path: '/broadcasts', setup: (h) => audience(h),
      body: (c: any) => draft(c.segment.id, { send: true }), status: 201, expect: { status: 'queued', recipient_count: 2, started_at: '2026-03-02T10:00:00.000Z' },
      check: async (_r, _c, h) => {
        await fanOut(h)
        expect(await h.root.db.q.select().from(emails)).toHaveLength(2)
      } },
    { name: 'with send: true and scheduled_at in words, schedules it', method: 'POST', path: '/broadcasts', setup: (h) => audience(h),
      body: (c: any) => draft(c.segment.id, { send: true, scheduled_at: 'in 1 hour' }), status: 201, expect: { status: 'scheduled', scheduled_at: '2026-03-02T11:00:00.000Z', recipient_count: 2, started_at: null } },
    { name: 'refuses a missing segment', method: 'POST', path: '/broadcasts', body: { from: 'news@acme.dev', subject: 'Hi' }, status: 422, code: 'missing_required_field',
      expect: { message: 'Missing `segment_id` field.' } },
    { name: 'names every missing field', method: 'POST', path: '/broadcasts', setup: (h) => audience(h), body: (c: any) => ({ segment_id: c.segment.id }), status: 422, code: 'missing_required_field',
      expect: { message: 'Missing `from` and `subject` fields.' } },
    { name: 'refuses a from that is no address', method: 'POST', path: '/broadcasts', setup: (h) => audience(h), body: (c: any) => draft(c.segment.id, { from: 'news at acme' }), status: 422, code: 'invalid_from_address' },
    { name: 'answers 404 for a segment that does not exist', method: 'POST', path: '/broadcasts', body: draft(missing), status: 404, code: 'not_found',
      check: async (_r, _c, h) => expect(await h.root.db.q.select().from(broadcasts)).toEqual([]) },
    { name: 'answers 404 for another account’s segment', method: 'POST', path: '/broadcasts',
      setup: async (h) => (await audience(h, [], 'Theirs', (await h.otherAccount()).token)).segment, body: (s: any) => draft(s.id), status: 404, code: 'not_found' },
    { name: 'refuses segment_id and audience_id that differ', method: 'POST', path: '/broadcasts', setup: (h) => audience(h), body: (c: any) => draft(c.segment.id, { audience_id: missing }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses scheduled_at without send', method: 'POST', path: '/broadcasts', setup: (h) => audience(h), body: (c: any) => draft(c.segment.id, { scheduled_at: 'in 1 hour' }), status: 422, code: 'invalid_parameter',
      expect: { message: expect.stringContaining('send: true') } },
    { name: 'refuses a reply_to that is no address', method: 'POST', path: '/broadcasts', setup: (h) => audience(h), body: (c: any) => draft(c.segment.id, { reply_to: ['help@acme.dev', 'nope'] }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'reply_to[1]' }] } },
    { name: 'refuses a subject with a line break', method: 'POST', path: '/broadcasts', setup: (h) => audience(h), body: (c: any) => draft(c.segment.id, { subject: 'a\r\nBcc: x@y.z' }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a topic that is not the account’s', method: 'POST', path: '/broadcasts', setup: (h) => audience(h), body: (c: any) => draft(c.segment.id, { topic_id: missing }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'topic_id' }] } },
    { name: 'refuses a template that is not the account’s', method: 'POST', path: '/broadcasts', setup: (h) => audience(h), body: (c: any) => draft(c.segment.id, { html: null, text: null, template: { id: 'no-such-template' } }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'template.id' }] } },
    { name: 'refuses a template beside html', method: 'POST', path: '/broadcasts', setup: async (h) => ({ ...(await audience(h)), t: await template(h) }),
      body: (c: any) => draft(c.segment.id, { text: null, template: { id: c.t.id, variables: { intro: 'Hi' } } }), status: 422, code: 'invalid_parameter', expect: { details: [{ field: 'template' }] } },
    { name: 'refuses a wrong field type', method: 'POST', path: '/broadcasts', body: { segment_id: missing, from: 42, subject: 'x' }, status: 400, code: 'validation_error' },
    { name: 'refuses an Idempotency-Key over 256 characters', method: 'POST', path: '/broadcasts', headers: { 'Idempotency-Key': 'k'.repeat(257) }, body: draft(missing), status: 400, code: 'invalid_idempotency_key' },
    ...guarded('POST', '/broadcasts', draft(missing)),

    // GET /broadcasts
    { name: 'lists broadcasts newest first, in Resend’s summary shape', method: 'GET', path: '/broadcasts',
      setup: async (h) => {
        const { segment } = await audience(h)
        const a = await created(h, draft(segment.id, { name: 'A' }))
        h.clock.advance(1000)
        const b = await created(h, draft(segment.id, { name: 'B' }))
        return { a, b, segment }
      }, status: 200,
      check: (r, c: any) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data).toEqual([
          { id: c.b.id, name: 'B', segment_id: c.segment.id, audience_id: c.segment.id, status: 'draft', topic_id: null, created_at: '2026-03-02T10:00:01.000Z', scheduled_at: null, sent_at: null },
          { id: c.a.id, name: 'A', segment_id: c.segment.id, audience_id: c.segment.id, status: 'draft', topic_id: null, created_at: '2026-03-02T10:00:00.000Z', scheduled_at: null, sent_at: null },
        ])
      } },
    { name: 'lists nothing of another account', method: 'GET', path: '/broadcasts', setup: otherAccountsDraft, status: 200, expect: { data: [], has_more: false } },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/broadcasts', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a limit over 500', method: 'GET', path: '/broadcasts', query: { limit: 501 }, status: 400, code: 'validation_error' },
    ...guarded('GET', '/broadcasts'),

    // GET /broadcasts/{id}
    { name: 'gets a sent broadcast with its counts from the event record', method: 'GET',
      setup: (h) => sentBroadcast(h, {}, ['delivered+ada@resend.dev', 'bounced+bob@resend.dev', 'complained+cy@resend.dev']), path: (c: any) => `/broadcasts/${c.broadcast.id}`, status: 200,
      expect: { status: 'sent', recipient_count: 3, sent_at: '2026-03-02T10:00:00.000Z', counts: { enqueued: 3, sent: 3, delivered: 2, bounced: 1, complained: 1, suppressed: 0, opened: 0, clicked: 0, canceled: 0 } } },
    { name: 'gets a draft with the recipients it would reach if sent now: unsubscribed and suppressed members left out', method: 'GET',
      setup: async (h) => {
        const c = await madeDraft(h, {}, ['delivered+ada@resend.dev', 'delivered+bob@resend.dev', { email: 'delivered+cy@resend.dev', unsubscribed: true }, 'delivered+dee@resend.dev'])
        await h.call('POST', '/suppressions', { body: { email: 'delivered+dee@resend.dev' } })
        return c
      }, path: (c: any) => `/broadcasts/${c.broadcast.id}`, status: 200,
      expect: { status: 'draft', recipient_count: null, estimated_recipient_count: 2 } },
    { name: 'states no estimate once sending has started (recipient_count holds the count)', method: 'GET', setup: (h) => sentBroadcast(h), path: (c: any) => `/broadcasts/${c.broadcast.id}`, status: 200,
      expect: { recipient_count: 2, estimated_recipient_count: null } },
    { name: 'answers 404 for a broadcast that does not exist', method: 'GET', path: `/broadcasts/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s broadcast', method: 'GET', setup: otherAccountsDraft, path: (b: any) => `/broadcasts/${b.id}`, status: 404, code: 'not_found' },
    { name: 'refuses a path id that is no UUID', method: 'GET', path: '/broadcasts/nope', status: 400, code: 'validation_error' },
    ...guarded('GET', `/broadcasts/${missing}`),

    // PATCH /broadcasts/{id}
    { name: 'edits a draft; null clears a field', method: 'PATCH', setup: (h) => madeDraft(h, { name: 'Old', preview_text: 'p' }), path: (c: any) => `/broadcasts/${c.broadcast.id}`,
      body: { name: 'New', subject: 'Hi {{{FIRST_NAME}}}', preview_text: null, reply_to: ['a@acme.dev', 'B <b@acme.dev>'] }, status: 200,
      expect: { name: 'New', subject: 'Hi {{{FIRST_NAME}}}', preview_text: null, reply_to: ['a@acme.dev', 'B <b@acme.dev>'], status: 'draft' },
      check: async (r, c: any, h) => expect((await h.call('GET', `/broadcasts/${c.broadcast.id}`)).body).toEqual({ ...r.body, estimated_recipient_count: 2 }) },
    { name: 'moves a draft to another segment and swaps its bodies for a template', method: 'PATCH',
      setup: async (h) => ({ ...(await madeDraft(h)), other: (await audience(h, [], 'Other')).segment, t: await template(h) }), path: (c: any) => `/broadcasts/${c.broadcast.id}`,
      body: (c: any) => ({ segment_id: c.other.id, html: null, text: null, template: { id: c.t.id, variables: { intro: 'Hi' } } }), status: 200,
      check: (r, c: any) => expect(r.body).toMatchObject({ segment_id: c.other.id, html: null, text: null, template: { id: c.t.id, variables: { intro: 'Hi' } } }) },
    { name: 'refuses to edit a broadcast that is no longer a draft', method: 'PATCH', setup: (h) => sentBroadcast(h), path: (c: any) => `/broadcasts/${c.broadcast.id}`, body: { name: 'x' }, status: 409, code: 'broadcast_status_conflict',
      expect: { status: 'sent' } },
    { name: 'refuses html beside the draft’s template', method: 'PATCH',
      setup: async (h) => madeDraft(h, { html: null, text: null, template: { id: (await template(h)).id, variables: { intro: 'x' } } }), path: (c: any) => `/broadcasts/${c.broadcast.id}`, body: { html: '<p>x</p>' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a from that is no address', method: 'PATCH', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}`, body: { from: '<>' }, status: 422, code: 'invalid_from_address' },
    { name: 'answers 404 for a segment that does not exist', method: 'PATCH', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}`, body: { segment_id: missing }, status: 404, code: 'not_found' },
    { name: 'answers 404 for a broadcast that does not exist', method: 'PATCH', path: `/broadcasts/${missing}`, body: { name: 'x' }, status: 404, code: 'not_found' },
    { name: 'refuses a wrong field type', method: 'PATCH', path: `/broadcasts/${missing}`, body: { reply_to: 5 }, status: 400, code: 'validation_error' },
    ...guarded('PATCH', `/broadcasts/${missing}`, { name: 'x' }),

    // DELETE /broadcasts/{id}
    { name: 'deletes a draft', method: 'DELETE', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}`, status: 200,
      check: async (r, c: any, h) => {
        expect(r.body).toEqual({ object: 'broadcast', id: c.broadcast.id, deleted: true })
        expectError(await h.call('GET', `/broadcasts/${c.broadcast.id}`), 'not_found', 404)
      } },
    { name: 'refuses to delete a scheduled broadcast', method: 'DELETE', setup: (h) => madeDraft(h, { send: true, scheduled_at: 'tomorrow at 9am' }), path: (c: any) => `/broadcasts/${c.broadcast.id}`, status: 409, code: 'broadcast_status_conflict',
      expect: { status: 'scheduled', message: expect.stringContaining('cancel') } },
    { name: 'answers 404 for a broadcast that does not exist', method: 'DELETE', path: `/broadcasts/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s broadcast, and leaves it', method: 'DELETE', setup: otherAccountsDraft, path: (b: any) => `/broadcasts/${b.id}`, status: 404, code: 'not_found',
      check: async (_r, b: any, h) => expect(await h.root.db.q.select().from(broadcasts).where(eq(broadcasts.id, b.id))).toHaveLength(1) },
    ...guarded('DELETE', `/broadcasts/${missing}`),

    // POST /broadcasts/{id}/send
    { name: 'starts sending a draft and states the recipient count', method: 'POST', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/send`, status: 200,
      expect: { status: 'queued', recipient_count: 2, started_at: '2026-03-02T10:00:00.000Z', counts: { enqueued: 0 } },
      check: async (r, _c, h) => {
        await fanOut(h)
        expect((await h.call('GET', `/broadcasts/${r.body.id}`)).body).toMatchObject({ status: 'sending', recipient_count: 2, counts: { enqueued: 2 } })
      } },
    { name: 'schedules a draft with an ISO time', method: 'POST', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/send`, body: { scheduled_at: '2026-03-05T09:00:00+01:00' }, status: 200,
      expect: { status: 'scheduled', scheduled_at: '2026-03-05T08:00:00.000Z', recipient_count: 2 } },
    { name: 'takes the SDK’s empty body (scheduled_at left out)', method: 'POST', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/send`, raw: '', headers: { 'content-type': 'application/json' }, status: 200, expect: { status: 'queued' } },
    { name: 'refuses to send a broadcast twice', method: 'POST', setup: (h) => sentBroadcast(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/send`, status: 409, code: 'broadcast_status_conflict',
      expect: { message: expect.stringContaining('duplicate') } },
    { name: 'answers 404 when the draft’s segment was deleted', method: 'POST',
      setup: async (h) => {
        const c = await madeDraft(h)
        await h.root.db.write((tx) => tx.update(broadcasts).set({ segmentId: missing }).where(eq(broadcasts.id, c.broadcast.id)))
        return c
      }, path: (c: any) => `/broadcasts/${c.broadcast.id}/send`, status: 404, code: 'not_found' },
    { name: 'answers 404 for a broadcast that does not exist', method: 'POST', path: `/broadcasts/${missing}/send`, status: 404, code: 'not_found' },
    ...refusalScenarios(),
    { name: 'holds a key’s broadcast above the approval threshold for a person', method: 'POST', env: { MAILROOM_APPROVAL_THRESHOLD: '1' }, setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/send`,
      body: { scheduled_at: 'in 2 hours' }, status: 403, code: 'approval_required',
      check: async (r, c: any, h) => {
        expect(r.body.message).toContain('2 recipients, above the 1')
        const action = (await h.call('GET', `/agent-actions/${r.body.agent_action_id}`)).body
        expect(action).toMatchObject({ kind: 'send_broadcast', reason: 'broadcast_threshold', status: 'pending', request: { broadcast_id: c.broadcast.id, input: { scheduled_at: 'in 2 hours' } } })
        expect((await h.call('GET', `/broadcasts/${c.broadcast.id}`)).body.status).toBe('draft')
      } },
    { name: 'holds a key’s new broadcast above the approval threshold, keeping the draft it will send', method: 'POST', path: '/broadcasts', env: { MAILROOM_APPROVAL_THRESHOLD: '1' }, setup: (h) => audience(h),
      body: (c: any) => draft(c.segment.id, { send: true }), status: 403, code: 'approval_required',
      check: async (r, _c, h) => {
        expect((await h.call('GET', `/broadcasts/${r.body.broadcast_id}`)).body).toMatchObject({ status: 'draft', recipient_count: null })
        expect((await h.call('GET', `/agent-actions/${r.body.agent_action_id}`)).body.request).toEqual({ broadcast_id: r.body.broadcast_id, input: {} })
      } },
    ...guarded('POST', `/broadcasts/${missing}/send`, {}),

    // POST /broadcasts/{id}/cancel
    { name: 'cancels a scheduled broadcast: it never starts', method: 'POST', setup: (h) => madeDraft(h, { send: true, scheduled_at: 'in 5 minutes' }), path: (c: any) => `/broadcasts/${c.broadcast.id}/cancel`, status: 200,
      expect: { status: 'canceled', canceled_at: '2026-03-02T10:00:00.000Z' },
      check: async (_r, c: any, h) => {
        h.clock.advance(10 * 60_000)
        await fanOut(h)
        expect((await h.call('GET', `/broadcasts/${c.broadcast.id}`)).body).toMatchObject({ status: 'canceled', started_at: null })
        expect(await h.root.db.q.select().from(emails)).toEqual([])
      } },
    { name: 'cancels a sending broadcast: every waiting message stops', method: 'POST',
      setup: async (h) => {
        const c = await madeDraft(h, { send: true })
        await fanOut(h)
        return c
      }, path: (c: any) => `/broadcasts/${c.broadcast.id}/cancel`, status: 200,
      expect: { status: 'canceled', counts: { enqueued: 2, canceled: 2 } },
      check: async (_r, _c, h) => {
        expect((await h.root.db.q.select().from(deliveries)).map((d) => d.state)).toEqual(['canceled', 'canceled'])
        expect((await h.root.db.q.select().from(emails)).map((e) => e.lastEvent)).toEqual(['canceled', 'canceled'])
        expect(await h.worker.runOnce()).toBe(0)
      } },
    { name: 'refuses to cancel a draft', method: 'POST', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/cancel`, status: 409, code: 'broadcast_status_conflict', expect: { status: 'draft' } },
    { name: 'refuses to cancel a sent broadcast', method: 'POST', setup: (h) => sentBroadcast(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/cancel`, status: 409, code: 'broadcast_status_conflict', expect: { status: 'sent' } },
    { name: 'answers 404 for a broadcast that does not exist', method: 'POST', path: `/broadcasts/${missing}/cancel`, status: 404, code: 'not_found' },
    ...guarded('POST', `/broadcasts/${missing}/cancel`),

    // POST /broadcasts/{id}/duplicate
    { name: 'copies a sent broadcast into a new draft', method: 'POST', setup: (h) => sentBroadcast(h, { name: 'March' }), path: (c: any) => `/broadcasts/${c.broadcast.id}/duplicate`, status: 201,
      expect: { object: 'broadcast', name: 'March (copy)', status: 'draft', subject: 'March news', html: '<p>Hello {{{FIRST_NAME|there}}}</p>', recipient_count: null, started_at: null, sent_at: null, counts: { enqueued: 0 } },
      check: (r, c: any) => expect(r.body).toMatchObject({ segment_id: c.segment.id, id: expect.not.stringMatching(c.broadcast.id) }) },
    { name: 'answers 404 for a broadcast that does not exist', method: 'POST', path: `/broadcasts/${missing}/duplicate`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s broadcast', method: 'POST', setup: otherAccountsDraft, path: (b: any) => `/broadcasts/${b.id}/duplicate`, status: 404, code: 'not_found' },
    ...guarded('POST', `/broadcasts/${missing}/duplicate`),

    // GET /broadcasts/{id}/recipients
    { name: 'lists delivered recipients with their contact ids', method: 'GET', setup: (h) => sentBroadcast(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/recipients`, query: { type: 'delivered' }, status: 200,
      check: (r, c: any) => {
        expect(Object.keys(r.body).sort()).toEqual(['data', 'has_more', 'object'])
        expect(r.body.data.map((x: any) => [x.email, x.contact_id]).sort()).toEqual(c.contacts.map((x: any) => [x.email, x.id]).sort())
        for (const row of r.body.data) expect(Object.keys(row).sort()).toEqual(['contact_id', 'email', 'id'])
      } },
    { name: 'unsubscribed is always an empty list', method: 'GET', setup: (h) => sentBroadcast(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/recipients`, query: { type: 'unsubscribed' }, status: 200,
      expect: { object: 'list', data: [], has_more: false } },
    { name: 'refuses bounce_type with another type', method: 'GET', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/recipients`, query: { type: 'delivered', bounce_type: 'permanent' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a row id made up by the caller', method: 'GET', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/recipients`, query: { type: 'sent', after: 'b2Zmc2V0OjA' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses after and before together', method: 'GET', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/recipients`, query: { type: 'sent', after: 'a', before: 'b' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a missing type', method: 'GET', path: `/broadcasts/${missing}/recipients`, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown type', method: 'GET', path: `/broadcasts/${missing}/recipients`, query: { type: 'read' }, status: 400, code: 'validation_error' },
    { name: 'answers 404 for a broadcast that does not exist', method: 'GET', path: `/broadcasts/${missing}/recipients`, query: { type: 'sent' }, status: 404, code: 'not_found' },
    ...guarded('GET', `/broadcasts/${missing}/recipients?type=sent`),

    // GET /broadcasts/{id}/clicked-links
    { name: 'lists nothing before any click', method: 'GET', setup: (h) => sentBroadcast(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/clicked-links`, status: 200,
      expect: { object: 'list', data: [], has_more: false, next_cursor: null } },
    { name: 'refuses a tampered cursor', method: 'GET', setup: (h) => madeDraft(h), path: (c: any) => `/broadcasts/${c.broadcast.id}/clicked-links`, query: { cursor: 'eyJpIjoiMCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'answers 404 for a broadcast that does not exist', method: 'GET', path: `/broadcasts/${missing}/clicked-links`, status: 404, code: 'not_found' },
    ...guarded('GET', `/broadcasts/${missing}/clicked-links`),
  ])
})

/** A click or an open through the recipient-facing tracking paths, as a mail client makes it. */
const click = (h: Harness, emailId: string, recipient: string, url: string) => h.call('GET', `/t/c/${clickToken(h.root.secret, emailId, recipient, url)}`, { key: null })
const open = (h: Harness, emailId: string, recipient: string) => h.call('GET', `/t/o/${openToken(h.root.secret, emailId, recipient)}`, { key: null })

const emailOf = async (h: Harness, address: string) => (await h.root.db.q.select().from(emails)).find((e) => e.to[0] === address)!

async function withHarness(fn: (h: Harness) => Promise<void>, env: Record<string, string> = {}) {
  const h = await harness(env)
  try {
    await fn(h)
  } finally {
    await h.close()
  }
}

describe('Broadcasts: who receives it', () => {
  test('the segment, less unsubscribed contacts, topic refusals and suppressed addresses, which are listed as suppressed', () =>
    withHarness(async (h) => {
      const topic = (await h.call('POST', '/topics', { body: { name: 'Product news', default_subscription: 'opt_in' } })).body
      const { segment, contacts } = await audience(h, [
        'delivered+yes@resend.dev',
        'delivered+silent@resend.dev',
        'delivered+no@resend.dev',
        { email: 'delivered+gone@resend.dev', unsubscribed: true },
        'delivered+bounced@resend.dev',
      ])
      const answer = (i: number, subscribed: boolean) => h.call('PATCH', `/contacts/${contacts[i].id}/topics`, { body: { topics: [{ topic_id: topic.id, subscribed }] } })
      expect((await answer(0, true)).status).toBe(200)
      expect((await answer(2, false)).status).toBe(200)
      expect((await answer(4, true)).status).toBe(200)
      await suppress(h, 'delivered+bounced@resend.dev', 'bounce')
      // An address outside the segment never counts.
      await h.call('POST', '/contacts', { body: { email: 'delivered+outside@resend.dev' } })

      const b = await created(h, draft(segment.id, { topic_id: topic.id, send: true }))
      expect(b.recipient_count).toBe(1)
      await fanOut(h)
      const rows = await h.root.db.q.select().from(emails)
      expect(rows.map((e) => [e.to[0], e.lastEvent, e.priority, e.broadcastId, e.topicId]).sort()).toEqual([
        ['delivered+bounced@resend.dev', 'suppressed', 'bulk', b.id, topic.id],
        ['delivered+yes@resend.dev', 'queued', 'bulk', b.id, topic.id],
      ])
      expect((await h.root.db.q.select().from(deliveries)).map((d) => [d.recipient, d.priority, d.state])).toEqual([['delivered+yes@resend.dev', 1, 'queued']])
      const suppressed = await h.call('GET', `/broadcasts/${b.id}/recipients`, { query: { type: 'suppressed' } })
      expect(suppressed.body.data.map((r: any) => [r.email, r.contact_id])).toEqual([['delivered+bounced@resend.dev', contacts[4].id]])
      expect((await h.call('GET', `/broadcasts/${b.id}`)).body).toMatchObject({ status: 'sending', recipient_count: 1, counts: { enqueued: 1, suppressed: 1 } })
      await h.worker.runOnce()
      await fanOut(h)
      expect((await h.call('GET', `/broadcasts/${b.id}`)).body).toMatchObject({ status: 'sent', counts: { sent: 1, delivered: 1, suppressed: 1 } })
    }))

  test('a one-click unsubscribe from a broadcast without a topic unsubscribes the contact from every later broadcast', () =>
    withHarness(async (h) => {
      const { segment } = await audience(h)
      const first = await created(h, draft(segment.id, { send: true }))
      await fanOut(h)
      const ada = await emailOf(h, SIM[0])
      const eml = (await h.call('GET', `/emails/${ada.id}/eml`)).body as string
      const url = new URL(eml.match(/^List-Unsubscribe:\s+<([^>]+)>/m)![1])
      const done = await h.call('POST', url.pathname, { key: null, raw: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
      expect(done.status).toBe(200)
      expect((await h.call('GET', `/contacts/${SIM[0]}`)).body.unsubscribed).toBe(true)
      expect((await h.call('GET', `/broadcasts/${first.id}`)).body.counts.unsubscribed).toBe(1)
      // The next broadcast, under any topic or none, leaves the address out.
      expect((await created(h, draft(segment.id, { send: true }))).recipient_count).toBe(1)
    }))

  test('an opt-out topic takes every member but those who said no', () =>
    withHarness(async (h) => {
      const topic = (await h.call('POST', '/topics', { body: { name: 'Digest', default_subscription: 'opt_out' } })).body
      const { segment, contacts } = await audience(h, ['delivered+a@resend.dev', 'delivered+b@resend.dev', 'delivered+c@resend.dev'])
      await h.call('PATCH', `/contacts/${contacts[1].id}/topics`, { body: { topics: [{ topic_id: topic.id, subscribed: false }] } })
      expect((await created(h, draft(segment.id, { topic_id: topic.id, send: true }))).recipient_count).toBe(2)
    }))

  test('a segment chosen by rules sends to the contacts matching them when sending starts', () =>
    withHarness(async (h) => {
      const prop = await h.call('POST', '/contact-properties', { body: { key: 'plan', type: 'string' } })
      expect(prop.status).toBe(201)
      for (const [email, plan] of [['delivered+p1@resend.dev', 'pro'], ['delivered+f1@resend.dev', 'free'], ['delivered+p2@resend.dev', 'pro']]) {
        expect((await h.call('POST', '/contacts', { body: { email, properties: { plan } } })).status).toBe(201)
      }
      const seg = await h.call('POST', '/segments', { body: { name: 'Pro', rules: [{ field: 'property', key: 'plan', op: 'eq', value: 'pro' }] } })
      expect(seg.status, JSON.stringify(seg.body)).toBe(201)
      const b = await created(h, draft(seg.body.id, { send: true }))
      expect(b.recipient_count).toBe(2)
      await broadcastWorker(h, 1).runOnce()
      expect((await h.root.db.q.select().from(emails)).map((e) => e.to[0]).sort()).toEqual(['delivered+p1@resend.dev', 'delivered+p2@resend.dev'])
    }))
})

describe('Broadcasts: the fan-out job', () => {
  test('writes the emails in chunks and, after a crash, resumes from its cursor once the dead worker’s lease expires', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-broadcasts-'))
    const env = { MAILROOM_DATA_DIR: dataDir, MAILROOM_BOOTSTRAP_KEY: 'mr_broadcasts_restart_key_000000001' }
    const members = Array.from({ length: 7 }, (_, i) => `delivered+m${i}@resend.dev`)
    let id: string
    try {
      const first = await harness(env)
      try {
        const { segment } = await audience(first, members)
        id = (await created(first, draft(segment.id, { send: true }))).id
        // One chunk of three, then the process dies: its lease is not handed back.
        expect(await broadcastWorker(first, 3).runOnce(1)).toBe(1)
        expect((await first.call('GET', `/broadcasts/${id}`)).body).toMatchObject({ status: 'queued', counts: { enqueued: 3 } })
      } finally {
        await first.close()
      }
      const second = await harness(env)
      try {
        const worker = new BroadcastWorker(second.root, { chunkSize: 3 })
        expect(await worker.runOnce()).toBe(0)
        second.clock.advance(61_000)
        await worker.runOnce()
        const rows = await second.root.db.q.select().from(emails)
        expect(rows.map((e) => e.to[0]).sort()).toEqual([...members].sort())
        expect(new Set(rows.map((e) => e.id)).size).toBe(7)
        expect((await second.call('GET', `/broadcasts/${id}`)).body).toMatchObject({ status: 'sending', recipient_count: 7, counts: { enqueued: 7 } })
      } finally {
        await second.close()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  test('a cancel between chunks stops the fan-out: no further email is written', () =>
    withHarness(async (h) => {
      const { segment } = await audience(h, Array.from({ length: 5 }, (_, i) => `delivered+c${i}@resend.dev`))
      const b = await created(h, draft(segment.id, { send: true }))
      await broadcastWorker(h, 2).runOnce(1)
      const r = await h.call('POST', `/broadcasts/${b.id}/cancel`)
      expect(r.body).toMatchObject({ status: 'canceled', counts: { enqueued: 2, canceled: 2 } })
      await fanOut(h)
      expect((await h.root.db.q.select().from(emails)).map((e) => e.lastEvent)).toEqual(['canceled', 'canceled'])
      const events = await h.call('GET', `/emails/${(await h.root.db.q.select().from(emails))[0].id}/events`)
      expect(events.body.data.map((e: any) => e.type)).toEqual(['canceled'])
    }))

  test('a scheduled broadcast starts when its time comes, counted again then', () =>
    withHarness(async (h) => {
      const { segment } = await audience(h)
      const b = await created(h, draft(segment.id, { send: true, scheduled_at: 'in 1 hour' }))
      await h.call('POST', '/contacts', { body: { email: 'delivered+late@resend.dev', segments: [segment.id] } })
      expect(await fanOut(h)).toBe(0)
      h.clock.advance(60 * 60_000)
      await fanOut(h)
      expect((await h.call('GET', `/broadcasts/${b.id}`)).body).toMatchObject({ status: 'sending', started_at: '2026-03-02T11:00:00.000Z', recipient_count: 3, counts: { enqueued: 3 } })
      const audit = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resourceId, b.id))
      expect(audit.map((a) => [a.action, a.actorKind])).toEqual([['created', 'key'], ['scheduled', 'key'], ['sending_started', 'key']])
    }))

  test('a scheduled broadcast refused when its time comes is canceled, with the reason', () =>
    withHarness(async (h) => {
      const { segment } = await audience(h)
      const b = await created(h, draft(segment.id, { send: true, scheduled_at: 'in 1 hour' }))
      await h.call('PATCH', `/limits/keys/${await ownerKeyId(h)}`, { body: { budget_per_period: 1, period: 'daily' } })
      h.clock.advance(60 * 60_000)
      await fanOut(h)
      const got = (await h.call('GET', `/broadcasts/${b.id}`)).body
      expect(got).toMatchObject({ status: 'canceled', canceled_at: '2026-03-02T11:00:00.000Z', started_at: null, error: { code: 'agent_budget_exceeded' } })
      expect(got.error.message).toContain('needs 2')
      expect(await h.root.db.q.select().from(emails)).toEqual([])
    }))

  test('a segment that disappears while its emails are being written stops the fan-out with the reason; what was written goes', () =>
    withHarness(async (h) => {
      const { segment } = await audience(h, Array.from({ length: 4 }, (_, i) => `delivered+s${i}@resend.dev`))
      const b = await created(h, draft(segment.id, { send: true }))
      const w = broadcastWorker(h, 2)
      await w.runOnce(1)
      await h.root.db.write((tx) => tx.update(broadcasts).set({ segmentId: missing }).where(eq(broadcasts.id, b.id)))
      await w.runOnce()
      expect((await h.call('GET', `/broadcasts/${b.id}`)).body).toMatchObject({ status: 'sending', recipient_count: 2, error: { code: 'not_found' } })
      expect(await h.worker.runOnce()).toBe(2)
    }))

  test('bulk never goes ahead of transactional mail', () =>
    withHarness(async (h) => {
      const { segment } = await audience(h, ['delivered+x@resend.dev', 'delivered+y@resend.dev'])
      await created(h, draft(segment.id, { send: true }))
      await fanOut(h)
      const tx = await h.call('POST', '/emails', { body: { from: 'a@acme.dev', to: 'delivered@simulator.test', subject: 'Receipt', text: 'Thanks' } })
      expect(tx.status).toBe(200)
      const one = new DeliveryWorker(h.root, { batchSize: 1, concurrency: 1 })
      try {
        await one.runOnce()
      } finally {
        await one.stop()
      }
      expect((await h.root.db.q.select().from(deliveries)).map((d) => d.state)).toEqual(['delivered', 'delivered', 'delivered'])
      // One row a claim: the transactional email, accepted last, was taken first.
      const attempts = await h.root.db.q.select().from(deliveryAttempts).orderBy(asc(deliveryAttempts.id))
      expect(attempts.map((a) => a.emailId)[0]).toBe(tx.body.id)
    }))
})

describe('Broadcasts: each recipient’s copy', () => {
  test('contact variables with fallbacks in subject, html and text; a property with its defined fallback; the preview line; the unsubscribe URL', () =>
    withHarness(async (h) => {
      expect((await h.call('POST', '/contact-properties', { body: { key: 'company', type: 'string', fallback_value: 'your team' } })).status).toBe(201)
      const { segment } = await audience(h, [
        { email: 'delivered+ada@resend.dev', first_name: 'Ada', last_name: 'Lovelace', properties: { company: 'Analytical & Co' } },
        { email: 'delivered+anon@resend.dev' },
      ])
      const b = await created(
        h,
        draft(segment.id, {
          subject: 'Hi {{{FIRST_NAME|there}}}, news for {{{company}}}',
          html: '<html><body><p>Dear {{{contact.first_name|friend}}} {{{LAST_NAME}}} ({{{EMAIL}}}) at {{{company}}}</p><a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Unsubscribe</a></body></html>',
          text: 'Dear {{{FIRST_NAME|friend}}}. Leave: {{{RESEND_UNSUBSCRIBE_URL}}}',
          preview_text: 'Big <news>',
          send: true,
        }),
      )
      await fanOut(h)
      const ada = await emailOf(h, 'delivered+ada@resend.dev')
      const anon = await emailOf(h, 'delivered+anon@resend.dev')
      expect([ada.subject, anon.subject]).toEqual(['Hi Ada, news for Analytical & Co', 'Hi there, news for your team'])
      // Bodies stay on the broadcast; each email shows its recipient's copy.
      expect([ada.html, ada.text]).toEqual([null, null])
      const got = (await h.call('GET', `/emails/${ada.id}`)).body
      expect(got.html).toStartWith('<html><body><div style="display:none;max-height:0;overflow:hidden;mso-hide:all">Big &lt;news&gt;</div><p>Dear Ada Lovelace (delivered+ada@resend.dev) at Analytical &amp; Co</p><a href="http://mailroom.test/unsubscribe/')
      expect(got.text).toMatch(/^Dear Ada\. Leave: http:\/\/mailroom\.test\/unsubscribe\/\S+$/)
      expect((await h.call('GET', `/emails/${anon.id}`)).body.html).toContain('<p>Dear friend  (delivered+anon@resend.dev) at your team</p>')
      // The link in the body is the recipient's own unsubscribe page.
      const url = got.text.split('Leave: ')[1]
      const page = await h.call('GET', url.replace('http://mailroom.test', ''), { key: null })
      expect(page.status).toBe(200)
      expect(page.body).toContain('delivered+ada@resend.dev')
      // What went out is what GET /emails/{id}/eml shows, List-Unsubscribe included though the broadcast has no topic.
      const eml = (await h.call('GET', `/emails/${ada.id}/eml`)).body as string
      expect(eml).toMatch(/^List-Unsubscribe:\s+<http:\/\/mailroom\.test\/unsubscribe\/[^>]+>,\s+<mailto:/m)
      expect(eml).toContain('List-Unsubscribe-Post: List-Unsubscribe=One-Click')
      expect(b.recipient_count).toBe(2)
    }))

  test('a template’s published version gives the bodies, frozen when sending starts; the template is in use until then', () =>
    withHarness(async (h) => {
      const t = await template(h)
      const { segment } = await audience(h)
      const b = await created(h, draft(segment.id, { html: null, text: null, template: { id: t.id, variables: { intro: 'Spring is here' } } }))
      expectError(await h.call('DELETE', `/templates/${t.id}`), 'template_in_use', 409)
      const sent = await h.call('POST', `/broadcasts/${b.id}/send`)
      expect(sent.body).toMatchObject({ status: 'queued', html: '<p>Spring is here</p>', template: { id: t.id, variables: { intro: 'Spring is here' } } })
      await h.call('PATCH', `/templates/${t.id}`, { body: { html: '<p>{{{intro}}} changed</p>' } })
      await h.call('POST', `/templates/${t.id}/publish`)
      await fanOut(h)
      const e = await emailOf(h, SIM[0])
      expect(e.templateId).toBe(t.id)
      expect((await h.call('GET', `/emails/${e.id}`)).body.html).toBe('<p>Spring is here</p>')
      expect((await h.call('DELETE', `/templates/${t.id}`)).status).toBe(200)
      // A copy goes back to the template, not to the bodies it rendered.
      expect((await h.call('POST', `/broadcasts/${b.id}/duplicate`)).body).toMatchObject({ html: null, text: null, template: { id: t.id } })
    }))

  test('a segment a broadcast will still read cannot be deleted; once it is sent, it can', () =>
    withHarness(async (h) => {
      const { segment, broadcast } = await madeDraft(h)
      const refused = await h.call('DELETE', `/segments/${segment.id}`)
      expectError(refused, 'segment_in_use', 409)
      expect(refused.body.message).toContain(`broadcast ${broadcast.id}`)
      await h.call('POST', `/broadcasts/${broadcast.id}/send`)
      await fanOut(h)
      await h.worker.runOnce()
      await fanOut(h)
      expect((await h.call('DELETE', `/segments/${segment.id}`)).status).toBe(200)
      expect((await h.call('GET', `/broadcasts/${broadcast.id}`)).body).toMatchObject({ status: 'sent', segment_id: segment.id })
    }))
})

describe('Broadcasts: recipients and clicked links', () => {
  test('each type lists the recipients with that event: counts, links clicked, bounce types, filters and paging', () =>
    withHarness(async (h) => {
      const { broadcast } = await sentBroadcast(h, {}, ['delivered+ada@resend.dev', 'delivered+bob@resend.dev', 'bounced+cy@resend.dev', 'complained+dee@resend.dev'])
      const ada = await emailOf(h, 'delivered+ada@resend.dev')
      const bob = await emailOf(h, 'delivered+bob@resend.dev')
      for (let i = 0; i < 2; i++) expect((await open(h, ada.id, 'delivered+ada@resend.dev')).status).toBe(200)
      await open(h, bob.id, 'delivered+bob@resend.dev')
      for (const url of ['https://acme.dev/a', 'https://acme.dev/b', 'https://acme.dev/a']) expect((await click(h, ada.id, 'delivered+ada@resend.dev', url)).status).toBe(302)
      await click(h, bob.id, 'delivered+bob@resend.dev', 'https://acme.dev/a')
      const list = (type: string, query: Record<string, string | number> = {}) => h.call('GET', `/broadcasts/${broadcast.id}/recipients`, { query: { type, ...query } })

      expect((await list('sent')).body.data).toHaveLength(4)
      expect((await list('delivered')).body.data.map((r: any) => r.email).sort()).toEqual(['complained+dee@resend.dev', 'delivered+ada@resend.dev', 'delivered+bob@resend.dev'])
      expect((await list('opened')).body.data.map((r: any) => [r.email, r.count]).sort()).toEqual([['delivered+ada@resend.dev', 2], ['delivered+bob@resend.dev', 1]])
      const clicked = (await list('clicked', { email: 'Delivered+Ada@resend.dev' })).body.data
      expect(clicked).toEqual([{ id: expect.any(String), email: 'delivered+ada@resend.dev', contact_id: expect.any(String), count: 3, clicked_links: [{ url: 'https://acme.dev/a', clicks: 2 }, { url: 'https://acme.dev/b', clicks: 1 }] }])
      expect((await list('bounced')).body.data).toEqual([{ id: expect.any(String), email: 'bounced+cy@resend.dev', contact_id: expect.any(String), bounce_type: 'permanent' }])
      expect((await list('bounced', { bounce_type: 'permanent' })).body.data).toHaveLength(1)
      expect((await list('bounced', { bounce_type: 'transient' })).body.data).toEqual([])
      expect((await list('complained')).body.data.map((r: any) => r.email)).toEqual(['complained+dee@resend.dev'])

      // Paging by the rows' opaque ids, forwards and back.
      const all = (await list('sent')).body.data.map((r: any) => r.email)
      const first = (await list('sent', { limit: 2 })).body
      expect(first.has_more).toBe(true)
      const next = (await list('sent', { limit: 2, after: first.data[1].id })).body
      expect([...first.data, ...next.data].map((r: any) => r.email)).toEqual(all)
      expect(next.has_more).toBe(false)
      expect((await list('sent', { limit: 2, before: next.data[0].id })).body.data.map((r: any) => r.email)).toEqual(all.slice(0, 2))
      // A row id works only for the list (and filters) it came from.
      expectError(await list('delivered', { after: first.data[1].id }), 'invalid_cursor', 400)

      // A contact deleted since: its address no longer maps to one.
      await h.call('DELETE', '/contacts/delivered+bob@resend.dev')
      expect((await list('opened')).body.data.find((r: any) => r.email === 'delivered+bob@resend.dev').contact_id).toBeNull()

      // The same engagement in the counts.
      expect((await h.call('GET', `/broadcasts/${broadcast.id}`)).body.counts).toMatchObject({ opened: 3, unique_opened: 2, clicked: 4, unique_clicked: 2, bounced: 1, complained: 1 })

      // Links, most clicked first, with unique clicks, paged by cursor.
      const links = await h.call('GET', `/broadcasts/${broadcast.id}/clicked-links`)
      expect(links.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
      expect(links.body.data.map((l: any) => [l.url, l.clicks, l.unique_clicks])).toEqual([['https://acme.dev/a', 3, 2], ['https://acme.dev/b', 1, 1]])
      const page1 = (await h.call('GET', `/broadcasts/${broadcast.id}/clicked-links`, { query: { limit: 1 } })).body
      expect(page1).toMatchObject({ has_more: true, data: [{ url: 'https://acme.dev/a' }] })
      const page2 = (await h.call('GET', `/broadcasts/${broadcast.id}/clicked-links`, { query: { limit: 1, cursor: page1.next_cursor } })).body
      expect(page2).toMatchObject({ has_more: false, next_cursor: null, data: [{ url: 'https://acme.dev/b' }] })
      expect((await h.call('GET', `/broadcasts/${broadcast.id}/clicked-links`, { query: { limit: 1, before: page2.data[0].id } })).body.data.map((l: any) => l.url)).toEqual(['https://acme.dev/a'])
    }))
})

describe('Broadcasts: rules', () => {
  test('a held broadcast is sent when a person approves it, once', () =>
    withHarness(
      async (h) => {
        const { segment } = await audience(h)
        const held = await h.call('POST', '/broadcasts', { body: draft(segment.id, { send: true }) })
        expectError(held, 'approval_required', 403)
        const approved = await h.call('POST', `/agent-actions/${held.body.agent_action_id}/approve`, { key: null, headers: { cookie: (await person(h, { role: 'admin' })).cookie, origin: 'http://mailroom.test' } })
        expect(approved.status, JSON.stringify(approved.body)).toBe(200)
        expect(approved.body.result).toMatchObject({ id: held.body.broadcast_id, status: 'queued', recipient_count: 2 })
        await fanOut(h)
        expect(await h.root.db.q.select().from(emails)).toHaveLength(2)
        expectError(await h.call('POST', `/broadcasts/${held.body.broadcast_id}/send`), 'broadcast_status_conflict', 409)
      },
      { MAILROOM_APPROVAL_THRESHOLD: '1' },
    ))

  test('an Idempotency-Key replays a send and starts it once', () =>
    withHarness(async (h) => {
      const { broadcast } = await madeDraft(h)
      const send = () => h.call('POST', `/broadcasts/${broadcast.id}/send`, { headers: { 'Idempotency-Key': 'march-1' }, body: {} })
      const a = await send()
      const b = await send()
      expect(b.headers.get('idempotent-replayed')).toBe('true')
      expect(b.body).toEqual(a.body)
      await fanOut(h)
      expect(await h.root.db.q.select().from(emails)).toHaveLength(2)
    }))

  test('another account can neither see nor change a broadcast', () =>
    withHarness(async (h) => {
      const { broadcast } = await madeDraft(h)
      const o = await h.otherAccount()
      for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/send'], ['POST', '/cancel'], ['POST', '/duplicate'], ['GET', '/recipients?type=sent'], ['GET', '/clicked-links']]) {
        expectError(await h.call(method, `/broadcasts/${broadcast.id}${path}`, { key: o.token, ...(method === 'GET' ? {} : { body: {} }) }), 'not_found', 404)
      }
      expect((await h.call('GET', '/broadcasts', { key: o.token })).body.data).toEqual([])
      expect((await h.call('GET', `/broadcasts/${broadcast.id}`)).body.status).toBe('draft')
    }))
})
