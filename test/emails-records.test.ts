import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { deliveries, deliveryAttempts, emailEvents, emails } from '../src/db/tables'
import { recordEvent } from '../src/emails/events'
import { iso } from '../src/lib/clock'
import { expectError, harness, type Harness } from './support/harness'
import { message, sent, simulated, suppress, verifiedDomain } from './support/emails'
import { scenarios } from './support/scenarios'

const missing = '01890000-0000-7000-8000-000000000000'
const EMAIL_FIELDS = ['object', 'id', 'to', 'from', 'created_at', 'subject', 'html', 'text', 'bcc', 'cc', 'reply_to', 'last_event', 'scheduled_at', 'tags', 'topic_id', 'message_id']

/** A verified domain and one email sent now. */
const one = async (h: Harness, over: Record<string, unknown> = {}) => {
  await verifiedDomain(h)
  return { id: await sent(h, message(over)) }
}
/** A verified domain and one email scheduled an hour out. */
const scheduled = (h: Harness, over: Record<string, unknown> = {}) => one(h, { scheduled_at: 'in 1 hour', ...over })

/** What the MTA does when it sends: the deliveries and the email move on, with an event. */
async function markSent(h: Harness, id: string, state: 'sent' | 'delivered' | 'bounced' = 'sent') {
  const at = iso(h.clock.now())
  await h.root.db.write(async (tx) => {
    await tx.update(deliveries).set({ state, attempts: 1, lastCode: state === 'bounced' ? 550 : 250, lastResponse: state === 'bounced' ? '5.1.1 no such user' : '2.0.0 OK', updatedAt: at }).where(eq(deliveries.emailId, id))
    await recordEvent(tx, h.root.ids, { accountId: h.accountId, emailId: id, type: state, at })
  })
}

describe('GET /emails/{id}', () => {
  scenarios([
    { name: 'answers Resend’s email object', method: 'GET', setup: (h) => one(h, { cc: ['c@x.io'], reply_to: 'help@acme.dev', tags: [{ name: 'kind', value: 'receipt' }] }), path: (c) => `/emails/${c.id}`, status: 200,
      expect: { object: 'email', from: 'Acme <hello@acme.dev>', to: ['ada@customer.io'], cc: ['c@x.io'], bcc: null, reply_to: ['help@acme.dev'], subject: 'Your receipt', html: '<p>Thanks!</p>', text: 'Thanks!', last_event: 'queued', scheduled_at: null, tags: [{ name: 'kind', value: 'receipt' }], topic_id: null, created_at: '2026-03-02T10:00:00.000Z', simulator: false },
      check: (r, c, h) => {
        for (const f of EMAIL_FIELDS) expect(r.body).toHaveProperty(f)
        expect(r.body.id).toBe(c.id)
        expect(r.body.message_id).toBe(`<${c.id}@${h.config.hostname}>`)
      } },
    { name: 'follows the last event', method: 'GET', setup: async (h) => { const c = await one(h); await markSent(h, c.id, 'delivered'); return c }, path: (c) => `/emails/${c.id}`, status: 200, expect: { last_event: 'delivered' } },
    { name: 'answers 404 for an unknown id', method: 'GET', path: `/emails/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s email', method: 'GET', setup: async (h) => { const o = await h.otherAccount(); await verifiedDomain(h, 'acme.dev', { accountId: o.accountId }); return { id: await sent(h, message(), o.token) } }, path: (c) => `/emails/${c.id}`, status: 404, code: 'not_found' },
    { name: 'refuses an id that is no UUID', method: 'GET', path: '/emails/not-an-id', status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', as: 'sending', path: `/emails/${missing}`, status: 403, code: 'restricted_api_key' },
  ])
})

describe('GET /emails', () => {
  /** Five emails over three days with different senders, recipients, tags and states. */
  async function world(h: Harness) {
    await verifiedDomain(h)
    await verifiedDomain(h, 'shop.dev')
    const ids: Record<string, string> = {}
    ids.a = await sent(h, message({ to: 'ada@customer.io', tags: [{ name: 'kind', value: 'receipt' }] }))
    h.clock.advance(86_400_000)
    ids.b = await sent(h, message({ from: 'orders@shop.dev', to: 'bob@customer.io', cc: 'ada@customer.io', tags: [{ name: 'kind', value: 'order' }] }))
    ids.c = await sent(h, message({ to: 'carol@other.org', scheduled_at: 'in 2 hours' }))
    h.clock.advance(86_400_000)
    ids.d = await sent(h, simulated({ tags: [{ name: 'kind', value: 'receipt' }, { name: 'test', value: 'yes' }] }))
    ids.e = await sent(h, message({ to: 'dave@other.org' }))
    await markSent(h, ids.e, 'bounced')
    return ids
  }
  const listed = (r: any, ids: Record<string, string>) => r.body.data.map((e: any) => Object.entries(ids).find(([, v]) => v === e.id)?.[0])

  test('newest first, Resend’s list shape without bodies, each filter', async () => {
    const h = await harness()
    try {
      const ids = await world(h)
      const all = await h.call('GET', '/emails')
      expect(all.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
      expect(listed(all, ids)).toEqual(['e', 'd', 'c', 'b', 'a'])
      expect(all.body.data[0]).not.toHaveProperty('html')
      expect(all.body.data[0]).toMatchObject({ object: 'email', last_event: 'bounced', to: ['dave@other.org'] })
      const q = async (query: Record<string, string>) => listed(await h.call('GET', '/emails', { query }), ids)
      expect(await q({ status: 'scheduled' })).toEqual(['c'])
      expect(await q({ status: 'bounced' })).toEqual(['e'])
      expect(await q({ from: 'orders@shop.dev' })).toEqual(['b'])
      expect(await q({ from: 'ORDERS@shop.dev' })).toEqual(['b'])
      expect(await q({ from: 'shop.dev' })).toEqual(['b'])
      expect(await q({ from: '@acme.dev' })).toEqual(['e', 'c', 'a'])
      expect(await q({ to: 'ada@customer.io' })).toEqual(['b', 'a'])
      expect(await q({ tag: 'kind:receipt' })).toEqual(['d', 'a'])
      expect(await q({ tag: 'test' })).toEqual(['d'])
      expect(await q({ tag: 'kind:receipt', to: 'ada@customer.io' })).toEqual(['a'])
      expect(await q({ since: '2026-03-03' })).toEqual(['e', 'd', 'c', 'b'])
      expect(await q({ until: '2026-03-03' })).toEqual(['c', 'b', 'a'])
      expect(await q({ start_date: '2026-03-03T00:00:00Z', end_date: '2026-03-03T23:00:00Z' })).toEqual(['c', 'b'])
      expect(await q({ since: '2026-03-02T10:00:00.000Z', until: '2026-03-02T10:00:00.000Z' })).toEqual(['a'])
    } finally {
      await h.close()
    }
  })

  test('pages with limit and a cursor bound to the filters; after/before take ids', async () => {
    const h = await harness()
    try {
      const ids = await world(h)
      const p1 = await h.call('GET', '/emails', { query: { limit: 2 } })
      expect(listed(p1, ids)).toEqual(['e', 'd'])
      expect(p1.body.has_more).toBe(true)
      const p2 = await h.call('GET', '/emails', { query: { limit: 2, cursor: p1.body.next_cursor } })
      expect(listed(p2, ids)).toEqual(['c', 'b'])
      const p3 = await h.call('GET', '/emails', { query: { limit: 2, cursor: p2.body.next_cursor } })
      expect(listed(p3, ids)).toEqual(['a'])
      expect(p3.body).toMatchObject({ has_more: false, next_cursor: null })
      expect(listed(await h.call('GET', '/emails', { query: { after: ids.c } }), ids)).toEqual(['b', 'a'])
      expect(listed(await h.call('GET', '/emails', { query: { before: ids.c, limit: 1 } }), ids)).toEqual(['d'])
      expectError(await h.call('GET', '/emails', { query: { limit: 2, cursor: p1.body.next_cursor, status: 'queued' } }), 'invalid_cursor', 400)
    } finally {
      await h.close()
    }
  })

  scenarios([
    { name: 'refuses a date that is not ISO 8601', method: 'GET', path: '/emails', query: { since: 'last tuesday' }, status: 400, code: 'validation_error', expect: { details: [{ field: 'query.since' }] } },
    { name: 'refuses a range that ends before it starts', method: 'GET', path: '/emails', query: { since: '2026-03-05', until: '2026-03-01' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses since and start_date that disagree', method: 'GET', path: '/emails', query: { since: '2026-03-05', start_date: '2026-03-01' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a status that is no event', method: 'GET', path: '/emails', query: { status: 'lost' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown query parameter', method: 'GET', path: '/emails', query: { colour: 'red' }, status: 400, code: 'validation_error' },
    { name: 'refuses a stale cursor', method: 'GET', path: '/emails', query: { cursor: 'abc.def' }, status: 400, code: 'invalid_cursor' },
    { name: 'lists only this account’s emails', method: 'GET', path: '/emails', setup: async (h) => { const o = await h.otherAccount(); await verifiedDomain(h, 'acme.dev', { accountId: o.accountId }); await sent(h, message(), o.token) }, status: 200, expect: { data: [] } },
  ])
})

describe('PATCH /emails/{id}, POST /emails/{id}/reschedule, POST /emails/{id}/cancel', () => {
  scenarios([
    { name: 'PATCH moves a scheduled email (Resend’s update) and answers {object, id}', method: 'PATCH', setup: (h) => scheduled(h), path: (c) => `/emails/${c.id}`, body: { scheduled_at: 'tomorrow at 9am' }, status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({ object: 'email', id: c.id })
        const [row] = await h.root.db.q.select().from(emails)
        expect(row.scheduledAt).toBe('2026-03-03T09:00:00.000Z')
        const [d] = await h.root.db.q.select().from(deliveries)
        expect(d).toMatchObject({ state: 'scheduled', nextAttemptAt: '2026-03-03T09:00:00.000Z' })
        const ev = await h.root.db.q.select().from(emailEvents).where(eq(emailEvents.emailId, c.id))
        expect(ev.map((e) => e.type)).toEqual(['scheduled', 'scheduled'])
        expect(ev[1].data).toEqual({ scheduled_at: '2026-03-03T09:00:00.000Z', rescheduled_from: '2026-03-02T11:00:00.000Z' })
      } },
    { name: 'reschedule answers the new time', method: 'POST', setup: (h) => scheduled(h), path: (c) => `/emails/${c.id}/reschedule`, body: { scheduled_at: '2026-03-04T12:00:00Z' }, status: 200,
      expect: { object: 'email', scheduled_at: '2026-03-04T12:00:00.000Z' } },
    { name: 'refuses a new time in the past', method: 'PATCH', setup: (h) => scheduled(h), path: (c) => `/emails/${c.id}`, body: { scheduled_at: '2026-03-01T00:00:00Z' }, status: 422, code: 'invalid_parameter',
      check: async (_r, _c, h) => expect((await h.root.db.q.select().from(emails))[0].scheduledAt).toBe('2026-03-02T11:00:00.000Z') },
    { name: 'refuses to reschedule an email already sent', method: 'POST', setup: (h) => one(h), path: (c) => `/emails/${c.id}/reschedule`, body: { scheduled_at: 'in 2 hours' }, status: 409, code: 'email_still_scheduled',
      expect: { message: expect.stringContaining('`queued`'), last_event: 'queued' } },
    { name: 'a canceled email cannot be rescheduled', method: 'PATCH', setup: async (h) => { const c = await scheduled(h); await h.call('POST', `/emails/${c.id}/cancel`); return c }, path: (c) => `/emails/${c.id}`, body: { scheduled_at: 'in 2 hours' }, status: 409, code: 'email_still_scheduled',
      expect: { message: expect.stringContaining('canceled email cannot be rescheduled') } },
    { name: 'PATCH needs scheduled_at', method: 'PATCH', setup: (h) => scheduled(h), path: (c) => `/emails/${c.id}`, body: {}, status: 400, code: 'validation_error' },
    { name: 'reschedule answers 404 for an unknown email', method: 'POST', path: `/emails/${missing}/reschedule`, body: { scheduled_at: 'in 1 hour' }, status: 404, code: 'not_found' },
    { name: 'PATCH answers 404 for another account’s email', method: 'PATCH', setup: async (h) => { const o = await h.otherAccount(); await verifiedDomain(h, 'acme.dev', { accountId: o.accountId }); return { id: await sent(h, message({ scheduled_at: 'in 1 hour' }), o.token) } }, path: (c) => `/emails/${c.id}`, body: { scheduled_at: 'in 2 hours' }, status: 404, code: 'not_found' },

    { name: 'cancel stops the scheduled deliveries and records canceled', method: 'POST', setup: (h) => scheduled(h, { cc: 'c@x.io' }), path: (c) => `/emails/${c.id}/cancel`, status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({ object: 'email', id: c.id })
        const ds = await h.root.db.q.select().from(deliveries)
        expect(ds.map((d) => d.state)).toEqual(['canceled', 'canceled'])
        expect((await h.call('GET', `/emails/${c.id}`)).body.last_event).toBe('canceled')
      } },
    { name: 'cancel accepts Resend’s empty JSON body', method: 'POST', setup: (h) => scheduled(h), path: (c) => `/emails/${c.id}/cancel`, raw: '', headers: { 'content-type': 'application/json' }, status: 200 },
    { name: 'cancel twice: the second says it was canceled', method: 'POST', setup: async (h) => { const c = await scheduled(h); await h.call('POST', `/emails/${c.id}/cancel`); return c }, path: (c) => `/emails/${c.id}/cancel`, status: 409, code: 'email_still_scheduled',
      expect: { message: expect.stringContaining('it was canceled'), last_event: 'canceled' } },
    { name: 'cancel of an email already sent says its state', method: 'POST', setup: async (h) => { const c = await one(h); await markSent(h, c.id, 'delivered'); return c }, path: (c) => `/emails/${c.id}/cancel`, status: 409, code: 'email_still_scheduled',
      expect: { message: expect.stringContaining('`delivered`') } },
    { name: 'cancel of a scheduled email the MTA is sending right now (leased) is refused', method: 'POST',
      setup: async (h) => {
        const c = await scheduled(h)
        await h.root.db.write((tx) => tx.update(deliveries).set({ leaseOwner: 'worker-1', leaseUntil: '2026-03-02T10:05:00.000Z' }))
        return c
      },
      path: (c) => `/emails/${c.id}/cancel`, status: 409, code: 'email_still_scheduled',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain('being sent right now')
        expect((await h.root.db.q.select().from(deliveries))[0].state).toBe('scheduled')
      } },
    { name: 'an expired lease no longer holds the email', method: 'POST',
      setup: async (h) => {
        const c = await scheduled(h)
        await h.root.db.write((tx) => tx.update(deliveries).set({ leaseOwner: 'worker-1', leaseUntil: '2026-03-02T09:59:00.000Z' }))
        return c
      },
      path: (c) => `/emails/${c.id}/cancel`, status: 200 },
    { name: 'reschedule of a leased email is refused', method: 'POST',
      setup: async (h) => {
        const c = await scheduled(h)
        await h.root.db.write((tx) => tx.update(deliveries).set({ leaseOwner: 'worker-1', leaseUntil: '2026-03-02T10:05:00.000Z' }))
        return c
      },
      path: (c) => `/emails/${c.id}/reschedule`, body: { scheduled_at: 'in 3 hours' }, status: 409, code: 'email_still_scheduled' },
    { name: 'cancel answers 404 for an unknown email', method: 'POST', path: `/emails/${missing}/cancel`, status: 404, code: 'not_found' },
    { name: 'cancel refuses a sending-only key', method: 'POST', as: 'sending', path: `/emails/${missing}/cancel`, status: 403, code: 'restricted_api_key' },
  ])
})

describe('POST /emails/bulk-cancel', () => {
  async function world(h: Harness) {
    await verifiedDomain(h)
    return {
      soon: await sent(h, message({ scheduled_at: 'in 1 hour', tags: [{ name: 'campaign', value: 'spring' }] })),
      later: await sent(h, message({ scheduled_at: 'in 3 days', tags: [{ name: 'campaign', value: 'spring' }] })),
      other: await sent(h, message({ scheduled_at: 'in 2 hours', tags: [{ name: 'campaign', value: 'summer' }] })),
      now: await sent(h, message()),
    }
  }
  const states = async (h: Harness) => Object.fromEntries((await h.root.db.q.select().from(emails)).map((e) => [e.id, e.lastEvent]))

  scenarios([
    { name: 'by ids: cancels the scheduled ones and counts the rest', method: 'POST', path: '/emails/bulk-cancel', setup: world, body: (w: any) => ({ ids: [w.soon, w.now, missing] }), status: 200,
      check: async (r, w: any, h) => {
        expect(r.body).toEqual({ object: 'bulk_cancel', canceled: 1, skipped: 1, not_found: 1, ids: [w.soon], has_more: false })
        const s = await states(h)
        expect([s[w.soon], s[w.later], s[w.now]]).toEqual(['canceled', 'scheduled', 'queued'])
      } },
    { name: 'by filter: scheduled before a time', method: 'POST', path: '/emails/bulk-cancel', setup: world, body: { scheduled_before: '2026-03-02T12:30:00Z' }, status: 200,
      check: async (r, w: any) => expect(r.body.ids.sort()).toEqual([w.soon, w.other].sort()) },
    { name: 'by filter: a tag and a window', method: 'POST', path: '/emails/bulk-cancel', setup: world, body: { tag: 'campaign:spring', scheduled_after: '2026-03-03' }, status: 200,
      check: async (r, w: any) => expect(r.body).toMatchObject({ canceled: 1, ids: [w.later] }) },
    { name: 'ids and a filter must both match', method: 'POST', path: '/emails/bulk-cancel', setup: world, body: (w: any) => ({ ids: [w.soon, w.other], tag: 'campaign:summer' }), status: 200,
      check: async (r, w: any) => expect(r.body).toMatchObject({ canceled: 1, ids: [w.other], not_found: 0 }) },
    { name: 'never touches another account’s emails', method: 'POST', path: '/emails/bulk-cancel',
      setup: async (h) => { const o = await h.otherAccount(); await verifiedDomain(h, 'acme.dev', { accountId: o.accountId }); return { id: await sent(h, message({ scheduled_at: 'in 1 hour' }), o.token) } },
      body: (c: any) => ({ ids: [c.id] }), status: 200, expect: { canceled: 0, not_found: 1 },
      check: async (_r, _c, h) => expect((await h.root.db.q.select().from(emails))[0].lastEvent).toBe('scheduled') },
    { name: 'needs ids or a filter', method: 'POST', path: '/emails/bulk-cancel', body: {}, status: 422, code: 'missing_required_field' },
    { name: 'refuses a bound that is not ISO 8601', method: 'POST', path: '/emails/bulk-cancel', body: { scheduled_before: 'soon' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses ids that are no UUIDs', method: 'POST', path: '/emails/bulk-cancel', body: { ids: ['x'] }, status: 400, code: 'validation_error' },
  ])
})

describe('GET /emails/{id}/events and /explain', () => {
  test('the timeline, oldest first, with paging', async () => {
    const h = await harness()
    try {
      const { id } = await scheduled(h)
      h.clock.advance(1000)
      await h.call('PATCH', `/emails/${id}`, { body: { scheduled_at: 'in 2 hours' } })
      h.clock.advance(1000)
      await h.call('POST', `/emails/${id}/cancel`)
      const r = await h.call('GET', `/emails/${id}/events`)
      expect(r.body).toMatchObject({ object: 'list', has_more: false })
      expect(r.body.data.map((e: any) => e.type)).toEqual(['scheduled', 'scheduled', 'canceled'])
      expect(r.body.data[0]).toMatchObject({ object: 'email_event', email_id: id, recipient: null, created_at: '2026-03-02T10:00:00.000Z' })
      const p1 = await h.call('GET', `/emails/${id}/events`, { query: { limit: 2 } })
      const p2 = await h.call('GET', `/emails/${id}/events`, { query: { limit: 2, cursor: p1.body.next_cursor } })
      expect([...p1.body.data, ...p2.body.data].map((e: any) => e.id)).toEqual(r.body.data.map((e: any) => e.id))
      expectError(await h.call('GET', `/emails/${missing}/events`), 'not_found', 404)
      expectError(await h.call('GET', `/emails/${id}/events`, { query: { cursor: 'x.y' } }), 'invalid_cursor', 400)
    } finally {
      await h.close()
    }
  })

  test('explain: the checks at accept, budget and quota then, each delivery with its attempts and replies, suppression', async () => {
    const h = await harness({ MAILROOM_DAILY_QUOTA: '10' })
    try {
      await verifiedDomain(h)
      const agent = await h.key({ name: 'agent', budget_per_period: 5, period: 'daily' })
      const id = await sent(h, message({ to: ['ok@x.io', 'gone@x.io'] }), agent.token)
      const ds = await h.root.db.q.select().from(deliveries).where(eq(deliveries.emailId, id))
      const gone = ds.find((d) => d.recipient === 'gone@x.io')!
      const ok = ds.find((d) => d.recipient === 'ok@x.io')!
      await h.root.db.write(async (tx) => {
        await tx.insert(deliveryAttempts).values([
          { id: h.root.ids.uuid(), deliveryId: ok.id, emailId: id, startedAt: '2026-03-02T10:00:01.000Z', durationMs: 120, host: 'mx.x.io', smtpCode: 250, enhancedCode: '2.0.0', response: '250 2.0.0 OK queued', outcome: 'delivered' },
          { id: h.root.ids.uuid(), deliveryId: gone.id, emailId: id, startedAt: '2026-03-02T10:00:02.000Z', durationMs: 80, host: 'mx.x.io', smtpCode: 550, enhancedCode: '5.1.1', response: '550 5.1.1 no such user', outcome: 'bounced' },
        ])
        await tx.update(deliveries).set({ state: 'delivered', attempts: 1, lastCode: 250, lastResponse: '250 2.0.0 OK queued' }).where(eq(deliveries.id, ok.id))
        await tx.update(deliveries).set({ state: 'bounced', attempts: 1, lastCode: 550, lastResponse: '550 5.1.1 no such user' }).where(eq(deliveries.id, gone.id))
        await recordEvent(tx, h.root.ids, { accountId: h.accountId, emailId: id, type: 'bounced', recipient: 'gone@x.io', at: '2026-03-02T10:00:02.000Z' })
      })
      await suppress(h, 'gone@x.io', 'bounce')
      const r = await h.call('GET', `/emails/${id}/explain`)
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ object: 'email_explanation', id, last_event: 'bounced', scheduled_at: null })
      expect(r.body.summary).toContain('1 delivered, 1 bounced')
      expect(r.body.summary).toContain('550 5.1.1 no such user')
      expect(r.body.accepted).toMatchObject({ at: '2026-03-02T10:00:00.000Z', api_key_id: agent.id, simulator: false, domain: 'acme.dev', warnings: [] })
      expect(r.body.accepted.checks.map((c: any) => c.name)).toEqual(['form', 'content_rules', 'domain_scope', 'sending_domain', 'recipient_blocklist', 'suppression', 'key_budget', 'daily_quota', 'monthly_quota'])
      expect(r.body.accepted.checks.every((c: any) => c.passed)).toBe(true)
      expect(r.body.accepted.budget).toMatchObject({ limit: 5, used: 0, period: 'daily' })
      expect(r.body.accepted.quota).toMatchObject({ daily: { limit: 10, used: 0 } })
      const byRecipient = Object.fromEntries(r.body.deliveries.map((d: any) => [d.recipient, d]))
      expect(byRecipient['gone@x.io']).toMatchObject({ state: 'bounced', attempts: 1, last_code: 550, next_attempt_at: null, suppressed: { reason: 'bounce' }, history: [{ smtp_code: 550, enhanced_code: '5.1.1', outcome: 'bounced', host: 'mx.x.io' }] })
      expect(byRecipient['ok@x.io']).toMatchObject({ state: 'delivered', suppressed: null, history: [{ smtp_code: 250, outcome: 'delivered' }] })
    } finally {
      await h.close()
    }
  })

  scenarios([
    { name: 'explain says a scheduled email waits for its time', method: 'GET', setup: (h) => scheduled(h), path: (c) => `/emails/${c.id}/explain`, status: 200,
      expect: { last_event: 'scheduled', summary: 'Scheduled for 2026-03-02T11:00:00.000Z: 1 delivery waiting for that time.', deliveries: [{ state: 'scheduled', next_attempt_at: '2026-03-02T11:00:00.000Z' }] } },
    { name: 'explain of a simulator send says no domain was needed', method: 'GET', setup: async (h) => ({ id: await sent(h, simulated()) }), path: (c) => `/emails/${c.id}/explain`, status: 200,
      check: (r) => expect(r.body.accepted.checks.find((c: any) => c.name === 'sending_domain').detail).toContain('simulator') },
    { name: 'explain answers 404 for an unknown email', method: 'GET', path: `/emails/${missing}/explain`, status: 404, code: 'not_found' },
  ])
})

describe('GET /emails/{id}/eml and /mime', () => {
  test('the message as sent: message/rfc822 with our Message-ID and the attachments; its MIME tree as JSON', async () => {
    const h = await harness()
    try {
      await verifiedDomain(h)
      const id = await sent(h, message({ subject: 'Ünïcode receipt', attachments: [{ filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4').toString('base64') }, { filename: 'logo.png', content: Buffer.from('png').toString('base64'), content_id: 'logo' }], headers: { 'X-Entity-Ref-ID': 'r-1' } }))
      const eml = await h.call('GET', `/emails/${id}/eml`)
      expect(eml.status).toBe(200)
      expect(eml.headers.get('content-type')).toBe('message/rfc822')
      expect(eml.headers.get('content-disposition')).toBe(`attachment; filename="${id}.eml"`)
      const text = eml.body as string
      expect(text).toContain(`Message-ID: <${id}@${h.config.hostname}>`)
      expect(text).toContain('X-Entity-Ref-ID: r-1')
      expect(text).toContain('To: ada@customer.io')
      expect(text).toMatch(/DKIM-Signature: .*d=acme\.dev/)
      const mime = await h.call('GET', `/emails/${id}/mime`)
      expect(mime.status).toBe(200)
      expect(mime.body).toMatchObject({ object: 'mime', id, root: { content_type: 'multipart/mixed' } })
      expect(mime.body.size).toBe(Buffer.byteLength(text))
      const flat: any[] = []
      const walk = (n: any) => (flat.push(n), (n.parts ?? []).forEach(walk))
      walk(mime.body.root)
      expect(flat.map((n) => n.content_type)).toEqual(['multipart/mixed', 'multipart/alternative', 'text/plain', 'multipart/related', 'text/html', 'image/png', 'application/pdf'])
      expect(flat.find((n) => n.content_type === 'application/pdf')).toMatchObject({ disposition: 'attachment', filename: 'invoice.pdf', encoding: 'base64' })
      expect(flat.find((n) => n.content_type === 'image/png')).toMatchObject({ disposition: 'inline', content_id: 'logo' })
      expect(mime.body.root.headers).toEqual(expect.arrayContaining([{ name: 'Subject', value: 'Ünïcode receipt' }]))
      for (const n of flat) expect(n.size).toBeGreaterThan(n.body_size)
    } finally {
      await h.close()
    }
  })

  scenarios([
    { name: 'eml of a simulator send (no domain, no signature)', method: 'GET', setup: async (h) => ({ id: await sent(h, simulated()) }), path: (c) => `/emails/${c.id}/eml`, status: 200,
      check: (r) => {
        expect(r.body).toContain('From: bot@unverified.dev')
        expect(r.body).not.toContain('DKIM-Signature')
      } },
    { name: 'eml answers 404 for another account’s email', method: 'GET', setup: async (h) => { const o = await h.otherAccount(); return { id: await sent(h, simulated(), o.token) } }, path: (c) => `/emails/${c.id}/eml`, status: 404, code: 'not_found' },
    { name: 'mime answers 404 for an unknown email', method: 'GET', path: `/emails/${missing}/mime`, status: 404, code: 'not_found' },
  ])
})

describe('GET /emails/{id}/attachments', () => {
  const withFiles = async (h: Harness) =>
    one(h, { attachments: [{ filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4').toString('base64') }, { filename: 'logo.png', content: Buffer.from('png').toString('base64'), content_id: 'logo' }] })

  test('lists them in Resend’s shape; one by id; the file itself with ?download=1', async () => {
    const h = await harness()
    try {
      const { id } = await withFiles(h)
      const list = await h.call('GET', `/emails/${id}/attachments`)
      expect(list.body).toMatchObject({ object: 'list', has_more: false })
      expect(list.body.data).toEqual([
        { object: 'attachment', id: expect.any(String), filename: 'invoice.pdf', content_type: 'application/pdf', content_id: null, content_disposition: 'attachment', size: 8, download_url: expect.stringMatching(/^http:\/\/mailroom\.test\/emails\/.+\/attachments\/.+\?download=1$/), expires_at: null },
        expect.objectContaining({ filename: 'logo.png', content_type: 'image/png', content_id: 'logo', content_disposition: 'inline', size: 3 }),
      ])
      const aid = list.body.data[0].id
      const one = await h.call('GET', `/emails/${id}/attachments/${aid}`)
      expect(one.body).toEqual(list.body.data[0])
      const file = await h.call('GET', `/emails/${id}/attachments/${aid}`, { query: { download: 1 } })
      expect(file.status).toBe(200)
      expect(file.headers.get('content-type')).toBe('application/pdf')
      expect(file.headers.get('content-disposition')).toContain('filename="invoice.pdf"')
      expect(file.body).toBe('%PDF-1.4')
      expect(new URL(list.body.data[0].download_url).pathname).toBe(`/emails/${id}/attachments/${aid}`)
      expectError(await h.call('GET', `/emails/${id}/attachments/${missing}`), 'not_found', 404)
      const other = await h.otherAccount()
      expectError(await h.call('GET', `/emails/${id}/attachments`, { key: other.token }), 'not_found', 404)
      expectError(await h.call('GET', `/emails/${id}/attachments/${aid}`, { key: other.token, query: { download: 1 } }), 'not_found', 404)
    } finally {
      await h.close()
    }
  })

  scenarios([
    { name: 'an email without attachments lists none', method: 'GET', setup: (h) => one(h), path: (c) => `/emails/${c.id}/attachments`, status: 200, expect: { data: [] } },
    { name: 'answers 404 for an unknown email', method: 'GET', path: `/emails/${missing}/attachments`, status: 404, code: 'not_found' },
  ])
})

describe('GET /emails/export.csv', () => {
  test('streams every matching email as CSV, newest first, with the list’s filters', async () => {
    const h = await harness()
    try {
      await verifiedDomain(h)
      const a = await sent(h, message({ subject: 'Hello, "world"', tags: [{ name: 'kind', value: 'receipt' }], cc: ['c@x.io', 'd@x.io'] }))
      const b = await sent(h, message({ subject: '=HYPERLINK("http://x")', to: 'bob@customer.io' }))
      const r = await h.call('GET', '/emails/export.csv')
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8')
      expect(r.headers.get('content-disposition')).toBe('attachment; filename="emails-2026-03-02.csv"')
      const lines = (r.body as string).trimEnd().split('\r\n')
      expect(lines[0]).toBe('id,created_at,from,to,cc,bcc,reply_to,subject,last_event,scheduled_at,tags,topic_id,message_id,api_key_id,simulator')
      expect(lines).toHaveLength(3)
      expect(lines[1].startsWith(`${b},`)).toBe(true)
      expect(lines[1]).toContain(`"'=HYPERLINK(""http://x"")"`)
      expect(lines[2]).toContain('"Hello, ""world"""')
      expect(lines[2]).toContain('c@x.io; d@x.io')
      expect(lines[2]).toContain('kind:receipt')
      const filtered = await h.call('GET', '/emails/export.csv', { query: { to: 'bob@customer.io' } })
      expect((filtered.body as string).trimEnd().split('\r\n')).toHaveLength(2)
      expect(filtered.body).toContain(b)
      expect(filtered.body).not.toContain(a)
      expectError(await h.call('GET', '/emails/export.csv', { query: { since: '2026-03-05', until: '2026-03-01' } }), 'invalid_parameter', 422)
    } finally {
      await h.close()
    }
  })

  test('more rows than one page arrive whole', async () => {
    const h = await harness()
    try {
      const at = iso(h.clock.now())
      const rows = Array.from({ length: 1203 }, () => {
        const id = h.root.ids.uuid()
        return { id, accountId: h.accountId, apiKeyId: null, domainId: null, from: 'a@b.io', fromEmail: 'a@b.io', to: ['c@d.io'], cc: [], bcc: [], replyTo: [], subject: 's', html: null, text: 't', headers: {}, tags: [], topicId: null, templateId: null, broadcastId: null, messageId: `${id}@h`, inReplyTo: null, references: null, priority: 'transactional' as const, simulator: false, openTracking: false, clickTracking: false, scheduledAt: null, lastEvent: 'sent' as const, createdAt: at, updatedAt: at }
      })
      await h.root.db.write(async (tx) => {
        for (let i = 0; i < rows.length; i += 200) await tx.insert(emails).values(rows.slice(i, i + 200))
      })
      const r = await h.call('GET', '/emails/export.csv')
      const lines = (r.body as string).trimEnd().split('\r\n')
      expect(lines).toHaveLength(1204)
      expect(new Set(lines.slice(1).map((l) => l.split(',')[0])).size).toBe(1203)
    } finally {
      await h.close()
    }
  })

  scenarios([
    { name: 'refuses a sending-only key', method: 'GET', as: 'sending', path: '/emails/export.csv', status: 403, code: 'restricted_api_key' },
    { name: 'an empty export is the header line', method: 'GET', path: '/emails/export.csv', status: 200, check: (r) => expect((r.body as string).split('\r\n')[1]).toBe('') },
  ])
})
