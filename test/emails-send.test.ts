import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { accountUsage, apiKeyBudgetUsage, deliveries, emailAttachments, emailEvents, emails, emailTags } from '../src/db/tables'
import { expectError, harness, type Harness } from './support/harness'
import { message, nothingWritten, sent, simulated, suppress, verifiedDomain, written } from './support/emails'
import { scenarios } from './support/scenarios'

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64')
const ready = (h: Harness) => verifiedDomain(h)

describe('POST /emails: scenarios', () => {
  scenarios([
    // Accepted
    { name: 'sends from a verified domain and answers Resend’s {id}', method: 'POST', path: '/emails', setup: ready, body: message(), status: 200,
      check: async (r, _c, h) => {
        expect(r.body).toEqual({ object: 'email', id: expect.stringMatching(/^[0-9a-f-]{36}$/) })
        const w = await written(h)
        expect(w.emails).toHaveLength(1)
        expect(w.emails[0]).toMatchObject({ id: r.body.id, accountId: h.accountId, from: 'Acme <hello@acme.dev>', fromEmail: 'hello@acme.dev', to: ['ada@customer.io'], priority: 'transactional', simulator: false, openTracking: false, lastEvent: 'queued', messageId: `${r.body.id}@${h.config.hostname}`, scheduledAt: null })
        expect(w.deliveries).toEqual([expect.objectContaining({ emailId: r.body.id, recipient: 'ada@customer.io', recipientDomain: 'customer.io', kind: 'to', state: 'queued', priority: 0, attempts: 0, nextAttemptAt: '2026-03-02T10:00:00.000Z', leaseOwner: null, leaseUntil: null })])
        expect(w.events).toEqual([expect.objectContaining({ emailId: r.body.id, type: 'queued' })])
        expect(w.usage.map((u) => [u.period, u.sent]).sort()).toEqual([['day:2026-03-02', 1], ['month:2026-03', 1]])
        expect(w.budget).toEqual([{ keyId: expect.any(String), periodStart: '2026-03-01T00:00:00.000Z', used: 1 }])
      } },
    { name: 'writes one delivery per distinct recipient of to, cc and bcc, lower-cased', method: 'POST', path: '/emails', setup: ready,
      body: message({ to: ['Ada <Ada@Customer.io>', 'bob@customer.io'], cc: 'carol@other.org', bcc: ['dave@other.org', 'ADA@customer.io'] }), status: 200,
      check: async (r, _c, h) => {
        const ds = await h.root.db.q.select().from(deliveries).where(eq(deliveries.emailId, r.body.id))
        expect(ds.map((d) => [d.recipient, d.recipientDomain, d.kind]).sort()).toEqual([
          ['ada@customer.io', 'customer.io', 'to'],
          ['bob@customer.io', 'customer.io', 'to'],
          ['carol@other.org', 'other.org', 'cc'],
          ['dave@other.org', 'other.org', 'bcc'],
        ])
        const [row] = await h.root.db.q.select().from(emails)
        expect(row.to).toEqual(['Ada <Ada@Customer.io>', 'bob@customer.io'])
        expect((await written(h)).budget[0].used).toBe(4)
      } },
    { name: 'a simulator send works from any from address, without a verified domain', method: 'POST', path: '/emails',
      body: simulated({ to: ['delivered@simulator.test', 'bounced+signup@resend.dev'] }), status: 200,
      check: async (_r, _c, h) => {
        const [row] = await h.root.db.q.select().from(emails)
        expect(row).toMatchObject({ simulator: true, domainId: null, fromEmail: 'bot@unverified.dev' })
        expect((await written(h)).budget[0].used).toBe(2)
      } },
    { name: 'a sending-only key may send', method: 'POST', path: '/emails', as: 'sending', setup: ready, body: message(), status: 200 },
    { name: 'a key scoped to the from domain may send', method: 'POST', path: '/emails',
      setup: async (h) => (await ready(h), h.key({ name: 'scoped', domain_scope: 'acme.dev' })), body: message(), status: 200 },
    { name: 'keeps reply_to, tags, topic, headers and threading headers', method: 'POST', path: '/emails',
      setup: async (h) => (await ready(h), (await h.call('POST', '/topics', { body: { name: 'Receipts', default_subscription: 'opt_out' } })).body),
      body: (topic: any) => message({ reply_to: ['help@acme.dev'], tags: [{ name: 'category', value: 'receipt_v2' }], topic_id: topic.id, headers: { 'X-Entity-Ref-ID': '123', 'In-Reply-To': '<abc@x.io>', References: '<abc@x.io>' } }),
      status: 200,
      check: async (r, topic: any, h) => {
        const [row] = await h.root.db.q.select().from(emails)
        expect(row).toMatchObject({ replyTo: ['help@acme.dev'], tags: [{ name: 'category', value: 'receipt_v2' }], topicId: topic.id, headers: { 'X-Entity-Ref-ID': '123' }, inReplyTo: '<abc@x.io>', references: '<abc@x.io>' })
        expect(r.body.id).toBe(row.id)
      } },
    { name: 'click_tracking follows the domain unless the send overrides it', method: 'POST', path: '/emails',
      setup: (h) => verifiedDomain(h, 'acme.dev', { clickTracking: true }), body: message({ click_tracking: false, open_tracking: false }), status: 200,
      check: async (_r, _c, h) => expect((await h.root.db.q.select().from(emails))[0]).toMatchObject({ clickTracking: false, openTracking: false }) },
    { name: 'stores attachments given as base64, inline ones by content_id', method: 'POST', path: '/emails', setup: ready,
      body: message({ html: '<img src="cid:logo">', attachments: [{ filename: 'invoice.pdf', content: b64('%PDF-1.4') }, { filename: 'logo.png', content: b64('png'), content_id: 'logo' }, { content: b64('x'), content_type: 'text/calendar' }] }), status: 200,
      check: async (_r, _c, h) => {
        const rows = await h.root.db.q.select().from(emailAttachments)
        expect(rows.map((a) => [a.filename, a.contentType, a.disposition, a.contentId, a.size, a.content.toString()])).toEqual([
          ['invoice.pdf', 'application/pdf', 'attachment', null, 8, '%PDF-1.4'],
          ['logo.png', 'image/png', 'inline', 'logo', 3, 'png'],
          ['attachment-3', 'text/calendar', 'attachment', null, 1, 'x'],
        ])
      } },
    { name: 'HTML over 102 KB is accepted, with the clipping warning kept for /explain', method: 'POST', path: '/emails', setup: ready,
      body: message({ html: `<p>${'x'.repeat(110 * 1024)}</p>` }), status: 200,
      check: async (r, _c, h) => {
        const ex = await h.call('GET', `/emails/${r.body.id}/explain`)
        expect(ex.body.accepted.warnings).toEqual([expect.objectContaining({ code: 'html_clipped_by_inbox_provider', severity: 'warning' })])
      } },

    // Scheduling
    { name: 'schedules at an ISO 8601 time: deliveries wait for it', method: 'POST', path: '/emails', setup: ready, body: message({ scheduled_at: '2026-03-05T08:30:00Z' }), status: 200,
      check: async (r, _c, h) => {
        const w = await written(h)
        expect(w.emails[0]).toMatchObject({ lastEvent: 'scheduled', scheduledAt: '2026-03-05T08:30:00.000Z' })
        expect(w.deliveries[0]).toMatchObject({ state: 'scheduled', nextAttemptAt: '2026-03-05T08:30:00.000Z' })
        expect(w.events).toEqual([expect.objectContaining({ emailId: r.body.id, type: 'scheduled', data: expect.objectContaining({ scheduled_at: '2026-03-05T08:30:00.000Z' }) })])
      } },
    { name: 'an ISO time without an offset is UTC', method: 'POST', path: '/emails', setup: ready, body: message({ scheduled_at: '2026-03-05T08:30:00' }), status: 200,
      check: async (_r, _c, h) => expect((await written(h)).emails[0].scheduledAt).toBe('2026-03-05T08:30:00.000Z') },
    { name: 'refuses a scheduled_at in the past', method: 'POST', path: '/emails', setup: ready, body: message({ scheduled_at: '2026-03-01T00:00:00Z' }), status: 422, code: 'invalid_parameter',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain('scheduled_at')
        expect(r.body.details).toEqual([expect.objectContaining({ field: 'scheduled_at' })])
        await nothingWritten(h)
      } },
    { name: 'refuses a scheduled_at more than 30 days ahead', method: 'POST', path: '/emails', setup: ready, body: message({ scheduled_at: 'in 31 days' }), status: 422, code: 'invalid_parameter',
      expect: { message: expect.stringContaining('30 days') } },
    { name: 'refuses a scheduled_at that is no time', method: 'POST', path: '/emails', setup: ready, body: message({ scheduled_at: 'when pigs fly' }), status: 422, code: 'invalid_parameter',
      expect: { message: expect.stringContaining('scheduled_at') } },
    { name: 'refuses words that read only partly as a time', method: 'POST', path: '/emails', setup: ready, body: message({ scheduled_at: 'tomorrow-ish maybe' }), status: 422, code: 'invalid_parameter' },

    // The form
    { name: 'refuses a missing to as Resend does', method: 'POST', path: '/emails', setup: ready, body: message({ to: undefined }), status: 422, code: 'missing_required_field',
      expect: { message: 'Missing `to` field.', name: 'missing_required_field', details: [{ field: 'to', message: expect.any(String) }] } },
    { name: 'names every missing field at once', method: 'POST', path: '/emails', body: { html: '<p>x</p>' }, status: 422, code: 'missing_required_field',
      check: async (r, _c, h) => {
        expect(r.body.message).toBe('Missing `from`, `to` and `subject` fields.')
        expect(r.body.details.map((d: any) => d.field)).toEqual(['from', 'to', 'subject'])
        await nothingWritten(h)
      } },
    { name: 'refuses an empty to list', method: 'POST', path: '/emails', setup: ready, body: message({ to: [] }), status: 422, code: 'missing_required_field' },
    { name: 'refuses a from that is no address', method: 'POST', path: '/emails', setup: ready, body: message({ from: 'Acme' }), status: 422, code: 'invalid_from_address',
      expect: { name: 'invalid_from_address' } },
    { name: 'refuses a from with a line break in its name', method: 'POST', path: '/emails', setup: ready, body: message({ from: 'Acme\r\nBcc: x@y.io <hello@acme.dev>' }), status: 422, code: 'invalid_from_address' },
    { name: 'refuses a recipient that is no address, naming it', method: 'POST', path: '/emails', setup: ready, body: message({ to: ['ok@x.io', 'nope'] }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'to[1]' }] } },
    { name: 'refuses more than 50 to addresses', method: 'POST', path: '/emails', setup: ready, body: message({ to: Array.from({ length: 51 }, (_, i) => `r${i}@x.io`) }), status: 400, code: 'validation_error' },
    { name: 'refuses a template beside html and text', method: 'POST', path: '/emails', setup: ready, body: message({ template: { id: 'welcome', variables: { name: 'Ada' } } }), status: 422, code: 'invalid_parameter',
      expect: { message: expect.stringContaining('`template` cannot be combined with `html` or `text`'), details: [{ field: 'template' }] } },
    { name: 'refuses a subject with a line break', method: 'POST', path: '/emails', setup: ready, body: message({ subject: 'Hi\r\nBcc: x@y.io' }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a header value with CR/LF (header injection)', method: 'POST', path: '/emails', setup: ready, body: message({ headers: { 'X-Note': 'a\r\nBcc: victim@x.io' } }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'headers.X-Note' }] } },
    { name: 'refuses a header name that is no header name', method: 'POST', path: '/emails', setup: ready, body: message({ headers: { 'X Bad:Name': 'v' } }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a header the service sets itself', method: 'POST', path: '/emails', setup: ready, body: message({ headers: { 'Message-ID': '<mine@x.io>' } }), status: 422, code: 'header_replaced',
      expect: { message: expect.stringContaining('Message-ID') } },
    { name: 'refuses List-Unsubscribe and DKIM-Signature in any case', method: 'POST', path: '/emails', setup: ready, body: message({ headers: { 'list-unsubscribe': '<https://x.io/u>' } }), status: 422, code: 'header_replaced' },
    { name: 'refuses Reply-To as a header, pointing at reply_to', method: 'POST', path: '/emails', setup: ready, body: message({ headers: { 'Reply-To': 'a@b.io' } }), status: 422, code: 'header_replaced',
      expect: { message: expect.stringContaining('reply_to') } },
    { name: 'refuses open tracking: every API send is transactional', method: 'POST', path: '/emails', setup: ready, body: message({ open_tracking: true }), status: 422, code: 'open_tracking_on_transactional' },
    { name: 'refuses a tag name with other characters', method: 'POST', path: '/emails', setup: ready, body: message({ tags: [{ name: 'has space', value: 'v' }] }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'tags[0].name' }] } },
    { name: 'refuses a tag value over 256 characters', method: 'POST', path: '/emails', setup: ready, body: message({ tags: [{ name: 'k', value: 'v'.repeat(257) }] }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a topic that is not the account’s', method: 'POST', path: '/emails', setup: ready, body: message({ topic_id: '01890000-0000-7000-8000-000000000000' }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'topic_id' }] } },
    { name: 'refuses an unknown body field by name', method: 'POST', path: '/emails', setup: ready, body: message({ sender: 'x' }), status: 400, code: 'validation_error' },

    // Attachments
    { name: 'refuses an attachment with neither content nor path', method: 'POST', path: '/emails', setup: ready, body: message({ attachments: [{ filename: 'a.pdf' }] }), status: 422, code: 'invalid_attachment',
      expect: { name: 'invalid_attachment', details: [{ field: 'attachments[0]' }] } },
    { name: 'refuses an attachment with both content and path', method: 'POST', path: '/emails', setup: ready, body: message({ attachments: [{ filename: 'a.pdf', content: b64('x'), path: 'https://x.io/a.pdf' }] }), status: 422, code: 'invalid_attachment' },
    { name: 'refuses content that is not base64', method: 'POST', path: '/emails', setup: ready, body: message({ attachments: [{ filename: 'a.txt', content: 'not base64!' }] }), status: 422, code: 'invalid_attachment' },
    { name: 'refuses a path that is not an http(s) URL', method: 'POST', path: '/emails', setup: ready, body: message({ attachments: [{ path: 'file:///etc/passwd' }] }), status: 422, code: 'invalid_attachment' },

    // Content rules
    { name: 'refuses a message without html or text', method: 'POST', path: '/emails', setup: ready, body: message({ html: undefined, text: '  ' }), status: 422, code: 'content_refused',
      check: (r) => expect(r.body.message).toContain('no content') },
    { name: 'refuses script tags in the HTML', method: 'POST', path: '/emails', setup: ready, body: message({ html: '<p>Hi</p><script>steal()</script>' }), status: 422, code: 'content_refused',
      expect: { message: expect.stringContaining('<script>') } },
    { name: 'refuses javascript: links', method: 'POST', path: '/emails', setup: ready, body: message({ html: '<a href="javascript:alert(1)">x</a>' }), status: 422, code: 'content_refused' },
    { name: 'refuses executable attachments', method: 'POST', path: '/emails', setup: ready, body: message({ attachments: [{ filename: 'setup.exe', content: b64('MZ') }] }), status: 422, code: 'content_refused' },
    { name: 'refuses a link to a listed domain (shorteners)', method: 'POST', path: '/emails', setup: ready, body: message({ text: 'Go to https://bit.ly/abc now.' }), status: 422, code: 'link_domain_listed',
      expect: { message: expect.stringContaining('bit.ly') } },

    // Account checks
    { name: 'refuses a from outside the key’s domain scope', method: 'POST', path: '/emails',
      setup: async (h) => (await ready(h), await h.call('PATCH', `/api-keys/${(await h.call('GET', '/api-keys')).body.data[0].id}`, { body: { domain_scope: 'other.dev' } })),
      body: message(), status: 403, code: 'domain_scope_violation',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain('other.dev')
        await nothingWritten(h)
      } },
    { name: 'the scope holds for simulator sends too', method: 'POST', path: '/emails',
      setup: async (h) => h.call('PATCH', `/api-keys/${(await h.call('GET', '/api-keys')).body.data[0].id}`, { body: { domain_scope: 'other.dev' } }),
      body: simulated(), status: 403, code: 'domain_scope_violation' },
    { name: 'refuses a from domain the account does not have', method: 'POST', path: '/emails', body: message(), status: 403, code: 'domain_not_verified',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain('acme.dev')
        expect(r.body.name).toBe('validation_error')
        await nothingWritten(h)
      } },
    { name: 'refuses a from domain still pending verification', method: 'POST', path: '/emails', setup: (h) => verifiedDomain(h, 'acme.dev', { status: 'pending' }), body: message(), status: 403, code: 'domain_not_verified',
      expect: { message: expect.stringContaining('pending') } },
    { name: 'refuses a domain verified on another account', method: 'POST', path: '/emails', setup: async (h) => verifiedDomain(h, 'acme.dev', { accountId: (await h.otherAccount()).accountId }), body: message(), status: 403, code: 'domain_not_verified' },
    { name: 'refuses a verified domain whose sending is disabled', method: 'POST', path: '/emails', setup: (h) => verifiedDomain(h, 'acme.dev', { sendingEnabled: false }), body: message(), status: 403, code: 'domain_sending_disabled' },
    { name: 'a simulator send with one real recipient needs the verified domain', method: 'POST', path: '/emails', body: simulated({ to: ['delivered@simulator.test', 'ada@customer.io'] }), status: 403, code: 'domain_not_verified' },
    { name: 'refuses a suppressed recipient, naming it', method: 'POST', path: '/emails', setup: async (h) => (await ready(h), await suppress(h, 'bob@customer.io')),
      body: message({ to: 'ada@customer.io', bcc: 'Bob@Customer.io' }), status: 422, code: 'suppressed_recipient',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain('bob@customer.io')
        await nothingWritten(h)
      } },
    { name: 'another account’s suppression does not apply', method: 'POST', path: '/emails', setup: async (h) => (await ready(h), await suppress(h, 'ada@customer.io', 'bounce', (await h.otherAccount()).accountId)), body: message(), status: 200 },
    { name: 'refuses a recipient on the built-in blocklist', method: 'POST', path: '/emails', setup: ready, body: message({ cc: 'x@mail.invalid' }), status: 422, code: 'recipient_blocklisted',
      expect: { message: expect.stringContaining('x@mail.invalid') } },
    { name: 'refuses a key over its budget and spends nothing', method: 'POST', path: '/emails',
      setup: async (h) => (await ready(h), await h.call('PATCH', `/limits/keys/${(await h.call('GET', '/api-keys')).body.data[0].id}`, { body: { budget_per_period: 2, period: 'daily' } })), body: message({ to: ['a@x.io', 'b@x.io', 'c@x.io'] }), status: 402, code: 'agent_budget_exceeded',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain('0 of its 2')
        expect(r.body.name).toBe('monthly_quota_exceeded')
        await nothingWritten(h)
      } },
  ])
})

describe('POST /emails: with a harness of its own', () => {
  test('the key budget: a send that fits spends, the next one over it is refused and spends nothing', async () => {
    const h = await harness()
    try {
      await ready(h)
      const agent = await h.key({ name: 'agent', budget_per_period: 3, period: 'daily' })
      await sent(h, message({ to: ['a@x.io', 'b@x.io'] }), agent.token)
      const r = await h.call('POST', '/emails', { key: agent.token, body: message({ to: ['c@x.io', 'd@x.io'] }) })
      expectError(r, 'agent_budget_exceeded', 402)
      expect(r.body.message).toContain('2 of its 3')
      const budget = await h.root.db.q.select().from(apiKeyBudgetUsage).where(eq(apiKeyBudgetUsage.keyId, agent.id))
      expect(budget).toEqual([{ keyId: agent.id, periodStart: '2026-03-02T00:00:00.000Z', used: 2 }])
      expect(await h.root.db.q.select().from(emails)).toHaveLength(1)
      // A simulator send counts against the budget too (as Resend counts test sends).
      await sent(h, simulated(), agent.token)
      expectError(await h.call('POST', '/emails', { key: agent.token, body: simulated() }), 'agent_budget_exceeded', 402)
      // The next period starts afresh.
      h.clock.set('2026-03-03T00:00:01Z')
      await sent(h, message({ to: ['a@x.io', 'b@x.io', 'c@x.io'] }), agent.token)
      const limits = await h.call('GET', `/limits/keys/${agent.id}`)
      expect(limits.body).toMatchObject({ used: 3, remaining: 0 })
    } finally {
      await h.close()
    }
  })

  test('the daily quota counts every recipient; a refused send spends nothing', async () => {
    const h = await harness({ MAILROOM_DAILY_QUOTA: '3' })
    try {
      await ready(h)
      await sent(h, message({ to: ['a@x.io', 'b@x.io'] }))
      const r = await h.call('POST', '/emails', { body: message({ to: ['c@x.io'], cc: 'd@x.io' }) })
      expectError(r, 'daily_quota_exceeded', 429)
      expect(r.body.name).toBe('daily_quota_exceeded')
      expect(r.body.retry_after_seconds).toBeUndefined()
      const usage = await h.root.db.q.select().from(accountUsage)
      expect(usage.map((u) => [u.period, u.sent]).sort()).toEqual([['day:2026-03-02', 2], ['month:2026-03', 2]])
      await sent(h, message({ to: ['c@x.io'] }))
      h.clock.set('2026-03-03T00:00:00Z')
      await sent(h, message({ to: ['a@x.io', 'b@x.io', 'c@x.io'] }))
    } finally {
      await h.close()
    }
  })

  test('the monthly quota', async () => {
    const h = await harness({ MAILROOM_MONTHLY_QUOTA: '2' })
    try {
      await ready(h)
      await sent(h, message({ to: ['a@x.io'] }))
      h.clock.set('2026-03-20T00:00:00Z')
      expectError(await h.call('POST', '/emails', { body: message({ to: ['b@x.io', 'c@x.io'] }) }), 'monthly_quota_exceeded', 429)
      h.clock.set('2026-04-01T00:00:00Z')
      await sent(h, message({ to: ['b@x.io', 'c@x.io'] }))
    } finally {
      await h.close()
    }
  })

  test('each recipient is one email against the key’s rate ceiling; refused, nothing is written', async () => {
    const h = await harness()
    try {
      await ready(h)
      const agent = await h.key({ name: 'agent', rate_ceiling_per_minute: 4 })
      const one = await h.call('POST', '/emails', { key: agent.token, body: message({ to: ['a@x.io', 'b@x.io', 'c@x.io'] }) })
      expect(one.status).toBe(200)
      expect(one.headers.get('ratelimit-remaining')).toBe('1')
      const r = await h.call('POST', '/emails', { key: agent.token, body: message({ to: ['a@x.io', 'b@x.io'] }) })
      expectError(r, 'rate_ceiling_exceeded', 429)
      expect(r.headers.get('retry-after')).toBe('60')
      expect(await h.root.db.q.select().from(emails)).toHaveLength(1)
      h.clock.advance(60_000)
      expect((await h.call('POST', '/emails', { key: agent.token, body: message({ to: ['a@x.io', 'b@x.io'] }) })).status).toBe(200)
    } finally {
      await h.close()
    }
  })

  test('without a ceiling of its own the key meets the deployment window: rate_limit_exceeded', async () => {
    const h = await harness({ MAILROOM_RATE_LIMIT: '3' })
    try {
      await ready(h)
      const r = await h.call('POST', '/emails', { body: message({ to: ['a@x.io', 'b@x.io', 'c@x.io', 'd@x.io'] }) })
      expectError(r, 'rate_limit_exceeded', 429)
      await nothingWritten(h)
    } finally {
      await h.close()
    }
  })

  test('Idempotency-Key: the same send twice is one email and the reply is replayed', async () => {
    const h = await harness()
    try {
      await ready(h)
      const headers = { 'Idempotency-Key': 'receipt-42' }
      const a = await h.call('POST', '/emails', { body: message(), headers })
      const b = await h.call('POST', '/emails', { body: message(), headers })
      expect(a.status).toBe(200)
      expect(b.status).toBe(200)
      expect(b.body).toEqual(a.body)
      expect(b.headers.get('idempotent-replayed')).toBe('true')
      const w = await written(h)
      expect(w.emails).toHaveLength(1)
      expect(w.deliveries).toHaveLength(1)
      expect(w.budget[0].used).toBe(1)
      expectError(await h.call('POST', '/emails', { body: message({ subject: 'other' }), headers }), 'idempotency_payload_mismatch', 409)
    } finally {
      await h.close()
    }
  })

  test('natural-language scheduled_at is read against the clock, in UTC unless a zone is named', async () => {
    const h = await harness()
    try {
      await ready(h)
      h.clock.set('2026-03-02T10:00:00Z') // a Monday
      const cases: [string, string][] = [
        ['in 1 hour', '2026-03-02T11:00:00.000Z'],
        ['in 1 min', '2026-03-02T10:01:00.000Z'],
        ['tomorrow at 9am', '2026-03-03T09:00:00.000Z'],
        ['Friday at 3pm ET', '2026-03-06T20:00:00.000Z'],
        ['next monday 08:00 PST', '2026-03-09T16:00:00.000Z'],
        ['tomorrow at 9am Europe/Paris', '2026-03-03T08:00:00.000Z'],
        ['2026-03-10', '2026-03-10T00:00:00.000Z'],
      ]
      for (const [words, when] of cases) {
        const id = await sent(h, message({ scheduled_at: words }))
        const got = await h.call('GET', `/emails/${id}`)
        expect([words, got.body.scheduled_at, got.body.last_event]).toEqual([words, when, 'scheduled'])
        const [d] = await h.root.db.q.select().from(deliveries).where(eq(deliveries.emailId, id))
        expect(d).toMatchObject({ state: 'scheduled', nextAttemptAt: when })
      }
      // Across a daylight-saving change the zone's offset at the target time counts.
      h.clock.set('2026-03-27T10:00:00Z')
      const id = await sent(h, message({ scheduled_at: 'in 3 days at 9am Europe/Paris' }))
      expect((await h.call('GET', `/emails/${id}`)).body.scheduled_at).toBe('2026-03-30T07:00:00.000Z')
    } finally {
      await h.close()
    }
  })

  test('operator lists: MAILROOM_LINK_BLOCKLIST and MAILROOM_RECIPIENT_BLOCKLIST extend the built-in ones', async () => {
    const h = await harness({ MAILROOM_LINK_BLOCKLIST: 'evil.example.net', MAILROOM_RECIPIENT_BLOCKLIST: 'spamtrap.org,ceo@acme-corp.com' })
    try {
      await ready(h)
      expectError(await h.call('POST', '/emails', { body: message({ html: '<a href="https://login.evil.example.net/x">x</a>' }) }), 'link_domain_listed', 422)
      expectError(await h.call('POST', '/emails', { body: message({ to: 'trap@mx.spamtrap.org' }) }), 'recipient_blocklisted', 422)
      expectError(await h.call('POST', '/emails', { body: message({ to: 'CEO@acme-corp.com' }) }), 'recipient_blocklisted', 422)
      await sent(h, message({ to: 'cfo@acme-corp.com', html: '<a href="https://example.net">x</a>' }))
    } finally {
      await h.close()
    }
  })

  describe('attachments by path', () => {
    let server: ReturnType<typeof Bun.serve>
    let base: string
    const big = Buffer.alloc(41 * 1024 * 1024, 1)
    beforeAll(() => {
      server = Bun.serve({
        port: 0,
        hostname: '127.0.0.1',
        fetch(req) {
          const path = new URL(req.url).pathname
          if (path === '/files/report.pdf') return new Response('%PDF-1.7 report', { headers: { 'content-type': 'application/pdf' } })
          if (path === '/big.bin') return new Response(big)
          if (path === '/slow') return new Promise<Response>(() => {})
          return new Response('no', { status: 404 })
        },
      })
      base = `http://127.0.0.1:${server.port}`
    })
    afterAll(() => server.stop(true))

    test('fetches a path at accept time and stores its content and type', async () => {
      const h = await harness()
      try {
        await ready(h)
        await sent(h, message({ attachments: [{ path: `${base}/files/report.pdf` }] }))
        const [a] = await h.root.db.q.select().from(emailAttachments)
        expect([a.filename, a.contentType, a.content.toString()]).toEqual(['report.pdf', 'application/pdf', '%PDF-1.7 report'])
      } finally {
        await h.close()
      }
    })

    test('a path that answers 404 is invalid_attachment; more than 40 MB in all is payload_too_large', async () => {
      const h = await harness()
      try {
        await ready(h)
        const r = await h.call('POST', '/emails', { body: message({ attachments: [{ path: `${base}/missing.pdf` }] }) })
        expectError(r, 'invalid_attachment', 422)
        expect(r.body.message).toContain('404')
        const big = await h.call('POST', '/emails', { body: message({ attachments: [{ path: `${base}/big.bin` }] }) })
        expectError(big, 'payload_too_large', 413)
        expect(big.body.message).toContain('40 MB')
        await nothingWritten(h)
      } finally {
        await h.close()
      }
    })

    test('redirects are followed; a link-local address (cloud metadata) is refused, also behind a redirect', async () => {
      const h = await harness()
      const hop = Bun.serve({
        port: 0,
        hostname: '127.0.0.1',
        fetch: (req) => Response.redirect(new URL(req.url).pathname === '/meta' ? 'http://169.254.169.254/latest/meta-data/' : `${base}/files/report.pdf`, 302),
      })
      try {
        await ready(h)
        await sent(h, message({ attachments: [{ path: `http://127.0.0.1:${hop.port}/report` }] }))
        expect((await h.root.db.q.select().from(emailAttachments))[0].content.toString()).toBe('%PDF-1.7 report')
        for (const path of ['http://169.254.169.254/latest/meta-data/', `http://127.0.0.1:${hop.port}/meta`]) {
          const r = await h.call('POST', '/emails', { body: message({ attachments: [{ path }] }) })
          expectError(r, 'invalid_attachment', 422)
          expect(r.body.message).toContain('link-local')
        }
      } finally {
        hop.stop(true)
        await h.close()
      }
    })

    test('a path on a closed port is invalid_attachment', async () => {
      const h = await harness()
      try {
        await ready(h)
        const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') })
        const url = `http://127.0.0.1:${closed.port}/gone.pdf`
        closed.stop(true)
        expectError(await h.call('POST', '/emails', { body: message({ attachments: [{ path: url }] }) }), 'invalid_attachment', 422)
      } finally {
        await h.close()
      }
    })
  })

  test('tenancy: a domain, topic or suppression of another account is not this one’s', async () => {
    const h = await harness()
    try {
      const other = await h.otherAccount()
      await verifiedDomain(h, 'acme.dev', { accountId: other.accountId })
      expectError(await h.call('POST', '/emails', { body: message() }), 'domain_not_verified', 403)
      await sent(h, message(), other.token)
      const mine = (await h.call('POST', '/topics', { body: { name: 'News', default_subscription: 'opt_in' } })).body
      expectError(await h.call('POST', '/emails', { key: other.token, body: message({ topic_id: mine.id }) }), 'invalid_parameter', 422)
      await sent(h, message({ topic_id: (await h.call('POST', '/topics', { key: other.token, body: { name: 'News', default_subscription: 'opt_in' } })).body.id }), other.token)
      await suppress(h, 'ada@customer.io', 'complaint', other.accountId)
      expectError(await h.call('POST', '/emails', { key: other.token, body: message() }), 'suppressed_recipient', 422)
      await ready(h)
      await sent(h, message())
    } finally {
      await h.close()
    }
  })
})

describe('POST /emails/batch', () => {
  scenarios([
    { name: 'sends every email and answers {data: [{id}]} in order', method: 'POST', path: '/emails/batch', setup: ready,
      body: [message({ to: 'a@x.io' }), message({ to: ['b@x.io', 'c@x.io'], scheduled_at: 'in 1 hour' }), simulated()], status: 200,
      check: async (r, _c, h) => {
        expect(Object.keys(r.body)).toEqual(['data'])
        expect(r.body.data).toHaveLength(3)
        const w = await written(h)
        expect(w.emails.map((e) => e.id).sort()).toEqual(r.body.data.map((d: any) => d.id).sort())
        expect(w.deliveries).toHaveLength(4)
        expect(w.budget[0].used).toBe(4)
        const second = w.emails.find((e) => e.id === r.body.data[1].id)!
        expect(second).toMatchObject({ lastEvent: 'scheduled', scheduledAt: '2026-03-02T11:00:00.000Z' })
      } },
    { name: 'strict (the default) refuses the whole batch with the bad email’s error and index', method: 'POST', path: '/emails/batch', setup: ready,
      body: [message(), message({ from: 'not an address' }), message({ to: undefined })], status: 422, code: 'invalid_from_address',
      check: async (r, _c, h) => {
        expect(r.body).toMatchObject({ index: 1, message: expect.stringContaining('Email 1 of the batch'), details: [{ field: '[1].from' }] })
        await nothingWritten(h)
      } },
    { name: 'strict, asked for by name', method: 'POST', path: '/emails/batch', setup: ready, headers: { 'x-batch-validation': 'strict' },
      body: [message(), message({ headers: { Date: 'now' } })], status: 422, code: 'header_replaced', expect: { index: 1 } },
    { name: 'permissive sends the good ones and lists the others by index', method: 'POST', path: '/emails/batch', setup: ready, headers: { 'x-batch-validation': 'permissive' },
      body: [message({ to: 'a@x.io' }), message({ to: undefined }), message({ to: 'b@x.io' }), message({ from: 'x@unverified.dev' })], status: 200,
      check: async (r, _c, h) => {
        expect(r.body.data).toHaveLength(2)
        expect(r.body.errors).toEqual([
          { index: 1, message: 'Missing `to` field.', code: 'missing_required_field' },
          { index: 3, message: expect.stringContaining('unverified.dev'), code: 'domain_not_verified' },
        ])
        const w = await written(h)
        expect(w.deliveries.map((d) => d.recipient).sort()).toEqual(['a@x.io', 'b@x.io'])
        expect(w.budget[0].used).toBe(2)
      } },
    { name: 'permissive with nothing good sends nothing', method: 'POST', path: '/emails/batch', setup: ready, headers: { 'x-batch-validation': 'permissive' },
      body: [message({ subject: undefined })], status: 200, expect: { data: [], errors: [{ index: 0 }] },
      check: async (_r, _c, h) => nothingWritten(h) },
    { name: 'accepts attachments (Resend’s batch has none)', method: 'POST', path: '/emails/batch', setup: ready, body: [message({ attachments: [{ filename: 'a.txt', content: b64('hi') }] })], status: 200,
      check: async (_r, _c, h) => expect(await h.root.db.q.select().from(emailAttachments)).toHaveLength(1) },
    { name: 'refuses an x-batch-validation that is neither mode', method: 'POST', path: '/emails/batch', setup: ready, headers: { 'x-batch-validation': 'lenient' }, body: [message()], status: 422, code: 'invalid_parameter' },
    { name: 'refuses more than 100 emails', method: 'POST', path: '/emails/batch', setup: ready, body: Array.from({ length: 101 }, () => message()), status: 400, code: 'validation_error' },
    { name: 'refuses an empty batch', method: 'POST', path: '/emails/batch', body: [], status: 400, code: 'validation_error' },
    { name: 'refuses a body that is not a list', method: 'POST', path: '/emails/batch', body: message(), status: 400, code: 'validation_error' },
    { name: 'the budget meets the batch as a whole: over it, nothing is sent even in permissive mode', method: 'POST', path: '/emails/batch', headers: { 'x-batch-validation': 'permissive' },
      setup: async (h) => (await ready(h), await h.call('PATCH', `/limits/keys/${(await h.call('GET', '/api-keys')).body.data[0].id}`, { body: { budget_per_period: 2 } })),
      body: [message({ to: 'a@x.io' }), message({ to: 'b@x.io' }), message({ to: 'c@x.io' })], status: 402, code: 'agent_budget_exceeded',
      check: async (_r, _c, h) => nothingWritten(h) },
    { name: 'a sending-only key may send a batch', method: 'POST', path: '/emails/batch', as: 'sending', setup: ready, body: [message()], status: 200 },
    { name: 'a full batch writes every row, more than one insert statement takes (100 emails, 10 recipients and 2 tags each)', method: 'POST', path: '/emails/batch', setup: ready, env: { MAILROOM_RATE_LIMIT: '2000' },
      body: Array.from({ length: 100 }, (_, i) => message({ to: Array.from({ length: 10 }, (_, j) => `r${j}@x${i}.io`), subject: `Hi ${i}`, tags: [{ name: 'n', value: `v${i}` }, { name: 'batch', value: 'b' }] })), status: 200,
      check: async (r, _c, h) => {
        const w = await written(h)
        expect(w.emails).toHaveLength(100)
        const byId = new Map(w.emails.map((e) => [e.id, e]))
        r.body.data.forEach((d: any, i: number) => expect(byId.get(d.id)?.subject).toBe(`Hi ${i}`))
        expect(w.deliveries).toHaveLength(1000)
        const first = r.body.data[0].id
        expect(w.deliveries.filter((d) => d.emailId === first).map((d) => d.recipient).sort()).toEqual(Array.from({ length: 10 }, (_, j) => `r${j}@x0.io`).sort())
        expect(w.events.filter((e) => e.type === 'queued')).toHaveLength(100)
        expect(await h.root.db.q.select().from(emailTags)).toHaveLength(400)
        expect(w.budget[0].used).toBe(1000)
      } },
  ])

  test('one Idempotency-Key covers the whole batch', async () => {
    const h = await harness()
    try {
      await ready(h)
      const o = { body: [message({ to: 'a@x.io' }), message({ to: 'b@x.io' })], headers: { 'Idempotency-Key': 'batch-1' } }
      const a = await h.call('POST', '/emails/batch', o)
      const b = await h.call('POST', '/emails/batch', o)
      expect(b.body).toEqual(a.body)
      expect(b.headers.get('idempotent-replayed')).toBe('true')
      expect(await h.root.db.q.select().from(emails)).toHaveLength(2)
    } finally {
      await h.close()
    }
  })
})

describe('POST /emails/lint', () => {
  scenarios([
    { name: 'a clean message has no findings', method: 'POST', path: '/emails/lint', body: message(), status: 200,
      expect: { object: 'lint', ok: true, findings: [], links: [] },
      check: async (r, _c, h) => {
        expect(r.body.sizes).toEqual({ html_bytes: 14, text_bytes: 7, attachments_bytes: 0 })
        await nothingWritten(h)
      } },
    { name: 'reports every finding with its code, severity and fix', method: 'POST', path: '/emails/lint',
      body: { from: 'nobody', to: ['a@b.invalid'], subject: '', html: `<script>x</script><a href="https://tinyurl.com/x">x</a>${'y'.repeat(103 * 1024)}`, headers: { Subject: 'x' }, open_tracking: true, attachments: [{ filename: 'run.bat', content: b64('x') }, { filename: 'b.pdf' }], scheduled_at: 'yesterday' },
      status: 200,
      check: (r) => {
        expect(r.body.ok).toBe(false)
        const codes = r.body.findings.map((f: any) => `${f.severity}:${f.code}`)
        expect(codes).toEqual([
          'error:invalid_from_address',
          'error:header_replaced',
          'error:open_tracking_on_transactional',
          'error:invalid_parameter',
          'error:invalid_attachment',
          'error:content_refused',
          'error:content_refused',
          'error:link_domain_listed',
          'warning:html_clipped_by_inbox_provider',
          'warning:text_part_missing',
          'warning:subject_empty',
          'error:recipient_blocklisted',
        ])
        for (const f of r.body.findings) expect(f).toMatchObject({ message: expect.any(String), fix: expect.any(String) })
        expect(r.body.links).toEqual(['https://tinyurl.com/x'])
      } },
    { name: 'needs no verified domain and reads no account state', method: 'POST', path: '/emails/lint', as: 'sending', body: message({ from: 'x@unverified.dev' }), status: 200, expect: { ok: true } },
    { name: 'does not fetch path attachments: a warning says preflight does', method: 'POST', path: '/emails/lint', body: message({ attachments: [{ path: 'https://files.invalid/a.pdf' }] }), status: 200,
      expect: { ok: true, findings: [{ code: 'invalid_attachment', severity: 'warning' }] } },
  ])
})

describe('POST /emails/preflight', () => {
  scenarios([
    { name: 'a send that would pass: ok, with what it would spend', method: 'POST', path: '/emails/preflight', setup: ready, body: message({ to: ['a@x.io', 'b@x.io'] }), status: 200,
      expect: { object: 'preflight', ok: true, findings: [], recipients: 2, simulator: false, scheduled_at: null, domain: { name: 'acme.dev', status: 'verified', sending_enabled: true }, quota: { daily: null, monthly: null } },
      check: async (r, _c, h) => {
        expect(r.body.budget).toMatchObject({ limit: null, used: 0, period: 'monthly' })
        await nothingWritten(h)
      } },
    { name: 'reports the refusals a send would meet, writing and spending nothing', method: 'POST', path: '/emails/preflight',
      setup: async (h) => {
        await verifiedDomain(h, 'acme.dev', { status: 'pending' })
        await suppress(h, 'b@x.io')
        const agent = await h.key({ name: 'agent', budget_per_period: 1, domain_scope: 'other.dev' })
        return agent
      },
      as: 'full',
      body: message({ to: ['a@x.io', 'b@x.io'] }), status: 200,
      check: async (r, agent: any, h) => {
        const again = await h.call('POST', '/emails/preflight', { key: agent.token, body: message({ to: ['a@x.io', 'b@x.io'] }) })
        expect(again.body.ok).toBe(false)
        expect(again.body.findings.map((f: any) => f.code)).toEqual(['domain_scope_violation', 'domain_not_verified', 'suppressed_recipient', 'agent_budget_exceeded'])
        expect(again.body.budget).toMatchObject({ limit: 1, used: 0, remaining: 1 })
        expect(r.body.findings.map((f: any) => f.code)).toEqual(['domain_not_verified', 'suppressed_recipient'])
        await nothingWritten(h)
      } },
    { name: 'fetches path attachments as a send would', method: 'POST', path: '/emails/preflight', setup: ready,
      body: message({ attachments: [{ path: 'http://127.0.0.1:9/none.pdf' }] }), status: 200,
      expect: { ok: false, findings: [{ code: 'invalid_attachment', severity: 'error' }] } },
    { name: 'a simulator send needs no domain', method: 'POST', path: '/emails/preflight', body: simulated(), status: 200,
      expect: { ok: true, simulator: true, domain: { id: null, name: 'unverified.dev', status: null } } },
  ])

  test('reports quotas and the rate window without spending them', async () => {
    const h = await harness({ MAILROOM_DAILY_QUOTA: '2', MAILROOM_MONTHLY_QUOTA: '100' })
    try {
      await ready(h)
      const agent = await h.key({ name: 'agent', rate_ceiling_per_minute: 3 })
      const r = await h.call('POST', '/emails/preflight', { key: agent.token, body: message({ to: ['a@x.io', 'b@x.io', 'c@x.io'] }) })
      expect(r.body.ok).toBe(false)
      expect(r.body.findings.map((f: any) => f.code)).toEqual(['daily_quota_exceeded', 'rate_ceiling_exceeded'])
      expect(r.body.quota).toEqual({ daily: { limit: 2, used: 0, remaining: 2 }, monthly: { limit: 100, used: 0, remaining: 100 } })
      expect(r.body.rate).toEqual({ limit: 3, remaining: 2 })
      // The preflight spent only its own request: a send of two still fits the window.
      expect((await h.call('POST', '/emails', { key: agent.token, body: message({ to: ['a@x.io', 'b@x.io'] }) })).status).toBe(200)
    } finally {
      await h.close()
    }
  })
})

test('a scheduled send records one scheduled event', async () => {
  const h = await harness()
  try {
    await ready(h)
    const id = await sent(h, message({ scheduled_at: 'in 2 hours' }))
    const ev = await h.root.db.q.select().from(emailEvents).where(eq(emailEvents.emailId, id))
    expect(ev.map((e) => e.type)).toEqual(['scheduled'])
  } finally {
    await h.close()
  }
})
