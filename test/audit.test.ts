import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { recordChange } from '../src/audit/record'
import { REDACTED, redact, redactedJson } from '../src/audit/redact'
import { auditEntries, deliveries, emails, segments, webhookDeliveries, webhookEndpoints } from '../src/db/tables'
import { unsubscribeToken } from '../src/delivery/unsubscribe'
import { inTransaction } from '../src/deps'
import { systemActor } from '../src/lib/actor'
import { iso } from '../src/lib/clock'
import { insertDomain, insertEmail } from './support/delivery-fixtures'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { guardScenarios } from './support/guards'
import { asCookie, person } from './support/people'
import { expectError, harness, type Harness } from './support/harness'
import { smtpClient, verifiedDomain } from './support/inbound'
import { scenarios } from './support/scenarios'
import { startSmtpSink } from './support/smtp-sink'

const missing = '01890000-0000-7000-8000-000000000000'
const byKey = (keyId: string) => ({ kind: 'key', key_id: keyId, person_id: null, session_id: null })
const SYSTEM = { kind: 'system', key_id: null, person_id: null, session_id: null }

const makeTopic = async (h: Harness, name = 'News') => {
  const r = await h.call('POST', '/topics', { body: { name, default_subscription: 'opt_in' } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string }
}
/** The harness's first key: the oldest, last in the list. */
const ownerKeyId = async (h: Harness) => (await h.call('GET', '/api-keys')).body.data.at(-1).id as string
const listed = async (h: Harness, query: Record<string, string> = {}) => {
  const r = await h.call('GET', '/audit', { query })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.data as { id: string; resource: string; resource_id: string; action: string; actor: { kind: string; key_id: string | null; person_id: string | null; session_id: string | null } }[]
}
const detail = async (h: Harness, id: string) => (await h.call('GET', `/audit/${id}`)).body as { action: string; actor: { kind: string; key_id: string | null; person_id: string | null; session_id: string | null }; before: any; after: any }
/** The one entry for a resource and action, in full. */
const entryFor = async (h: Harness, resource: string, action: string, resourceId?: string) => {
  const found = await listed(h, { resource, action, ...(resourceId ? { resource_id: resourceId } : {}) })
  expect(found, `${resource} ${action}`).toHaveLength(1)
  return detail(h, found[0].id)
}

/** What the first start records, newest first: the owner account, then its bootstrap key. */
const FIRST_START = [['api_key', 'created'], ['account', 'created']]

/** A topic at 10:00, updated at 10:01; a contact at 10:02. */
async function history(h: Harness) {
  const topic = await makeTopic(h)
  h.clock.advance(60_000)
  await h.call('PATCH', `/topics/${topic.id}`, { body: { name: 'Launches' } })
  h.clock.advance(60_000)
  const contact = (await h.call('POST', '/contacts', { body: { email: 'ada@example.com' } })).body
  return { topic, contact }
}

describe('Audit: scenarios', () => {
  scenarios([
    // GET /audit
    {
      name: 'lists changes newest first with who made them, without before and after',
      method: 'GET',
      path: '/audit',
      setup: history,
      status: 200,
      check: async (r, c, h) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((e: any) => [e.resource, e.action])).toEqual([['contact', 'created'], ['topic', 'updated'], ['topic', 'created'], ...FIRST_START])
        expect(r.body.data[0]).toEqual({
          object: 'audit_entry',
          id: expect.any(String),
          resource: 'contact',
          resource_id: c.contact.id,
          action: 'created',
          actor: byKey(await ownerKeyId(h)),
          created_at: '2026-03-02T10:02:00.000Z',
        })
      },
    },
    {
      name: 'a new install holds only its first start: the account and its first key, made by the system',
      method: 'GET',
      path: '/audit',
      status: 200,
      check: (r) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((e: any) => [e.resource, e.action, e.actor])).toEqual(FIRST_START.map(([resource, action]) => [resource, action, SYSTEM]))
      },
    },
    {
      name: 'filters by resource, resource id and action',
      method: 'GET',
      path: '/audit',
      setup: history,
      query: { resource: 'topic', action: 'updated' },
      status: 200,
      check: async (r, c, h) => {
        expect(r.body.data.map((e: any) => e.resource_id)).toEqual([c.topic.id])
        expect((await listed(h, { resource_id: c.topic.id })).map((e) => e.action)).toEqual(['updated', 'created'])
        expect(await listed(h, { resource: 'domain' })).toEqual([])
      },
    },
    {
      name: 'filters by actor kind and key',
      method: 'GET',
      path: '/audit',
      setup: async (h) => {
        const other = await h.key({ name: 'agent' })
        await h.call('POST', '/topics', { key: other.token, body: { name: 'By agent', default_subscription: 'opt_in' } })
        await makeTopic(h, 'By owner')
        await inTransaction(h.root, (deps) => recordChange(deps, systemActor(h.accountId), { resource: 'domain', resourceId: missing, action: 'verified', before: null, after: null }))
        return other
      },
      query: { actor: 'key' },
      status: 200,
      check: async (r, other, h) => {
        expect(r.body.data).toHaveLength(2)
        expect((await listed(h, { key_id: other.id })).map((e) => e.actor)).toEqual([byKey(other.id)])
        expect((await listed(h, { actor: 'system' })).map((e) => [e.resource, e.actor])).toEqual([['domain', SYSTEM], ...FIRST_START.map(([resource]) => [resource, SYSTEM])])
      },
    },
    {
      name: 'filters by date range; a bare until date covers its whole day',
      method: 'GET',
      path: '/audit',
      setup: history,
      query: { since: '2026-03-02T10:00:30Z', until: '2026-03-02T10:01:30Z' },
      status: 200,
      check: async (r, _c, h) => {
        expect(r.body.data.map((e: any) => e.action)).toEqual(['updated'])
        expect(await listed(h, { until: '2026-03-02' })).toHaveLength(3 + FIRST_START.length)
        expect(await listed(h, { since: '2026-03-03' })).toEqual([])
      },
    },
    { name: 'refuses a since after the until', method: 'GET', path: '/audit', query: { since: '2026-03-03', until: '2026-03-02' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a since that is no date', method: 'GET', path: '/audit', query: { since: 'yesterday' }, status: 400, code: 'validation_error' },
    { name: 'refuses a resource type that is not snake_case', method: 'GET', path: '/audit', query: { resource: 'API Key' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown actor kind', method: 'GET', path: '/audit', query: { actor: 'robot' }, status: 400, code: 'validation_error' },
    { name: 'refuses a key id that is no UUID', method: 'GET', path: '/audit', query: { key_id: 'key_1' }, status: 400, code: 'validation_error' },
    { name: 'refuses a limit of 501', method: 'GET', path: '/audit', query: { limit: 501 }, status: 400, code: 'validation_error' },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/audit', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    {
      name: 'refuses a cursor issued under other filters',
      method: 'GET',
      setup: async (h) => {
        await history(h)
        return (await h.call('GET', '/audit', { query: { limit: 1 } })).body.next_cursor as string
      },
      path: (cursor) => `/audit?resource=topic&cursor=${encodeURIComponent(cursor)}`,
      status: 400,
      code: 'invalid_cursor',
    },
    {
      name: 'pages with the cursor under the same filters',
      method: 'GET',
      setup: async (h) => {
        await history(h)
        return (await h.call('GET', '/audit', { query: { limit: 2 } })).body.next_cursor as string
      },
      path: (cursor) => `/audit?limit=2&cursor=${encodeURIComponent(cursor)}`,
      status: 200,
      check: (r) => {
        expect(r.body.data.map((e: any) => [e.resource, e.action])).toEqual([['topic', 'created'], FIRST_START[0]])
        expect(r.body).toMatchObject({ has_more: true, next_cursor: expect.any(String) })
      },
    },
    { name: 'refuses an after that is no entry id', method: 'GET', path: '/audit', query: { after: 'nope' }, status: 400, code: 'invalid_cursor' },
    {
      name: 'lists only the caller’s account',
      method: 'GET',
      path: '/audit',
      setup: async (h) => {
        const o = await h.otherAccount()
        await h.call('POST', '/topics', { key: o.token, body: { name: 'Theirs', default_subscription: 'opt_in' } })
      },
      status: 200,
      check: (r) => expect(r.body.data.map((e: any) => [e.resource, e.action])).toEqual(FIRST_START),
    },
    ...guardScenarios('/audit', 'audit_entries'),

    // GET /audit/{id}
    {
      name: 'gets one change with the resource before and after it',
      method: 'GET',
      setup: async (h) => {
        await history(h)
        return (await listed(h, { action: 'updated' }))[0]
      },
      path: (e) => `/audit/${e.id}`,
      status: 200,
      check: (r, e) => {
        expect(r.body).toMatchObject({ ...e, before: { object: 'topic', name: 'News', updated_at: '2026-03-02T10:00:00.000Z' }, after: { object: 'topic', name: 'Launches', updated_at: '2026-03-02T10:01:00.000Z' } })
      },
    },
    {
      name: 'a create has no before, a delete no after',
      method: 'GET',
      setup: async (h) => {
        const t = await makeTopic(h)
        await h.call('DELETE', `/topics/${t.id}`)
        return listed(h)
      },
      path: (es) => `/audit/${es[0].id.toUpperCase()}`,
      status: 200,
      check: async (r, es, h) => {
        expect(r.body).toMatchObject({ action: 'deleted', before: { name: 'News' }, after: null })
        expect(await detail(h, es[1].id)).toMatchObject({ action: 'created', before: null, after: { name: 'News' } })
      },
    },
    { name: 'refuses a path id that is no UUID', method: 'GET', path: '/audit/42', status: 400, code: 'validation_error' },
    { name: 'answers 404 for an entry that does not exist', method: 'GET', path: `/audit/${missing}`, status: 404, code: 'not_found' },
    {
      name: 'answers 404 for another account’s entry',
      method: 'GET',
      setup: async (h) => {
        const o = await h.otherAccount()
        await h.call('POST', '/topics', { key: o.token, body: { name: 'Theirs', default_subscription: 'opt_in' } })
        return (await h.call('GET', '/audit', { key: o.token })).body.data[0].id as string
      },
      path: (id) => `/audit/${id}`,
      status: 404,
      code: 'not_found',
    },
    ...guardScenarios(`/audit/${missing}`, 'audit_entries'),
  ])
})

describe('Audit: what the services record', () => {
  let h: Harness
  beforeAll(async () => {
    h = await harness({ MAILROOM_MONTHLY_QUOTA: '1000' })
  })
  afterAll(() => h.close())

  test('an API key’s create, rotate and delete, with before and after and never a token or hash', async () => {
    const made = await h.call('POST', '/api-keys', { body: { name: 'ci', permission: 'sending_access' } })
    h.clock.advance(1000)
    const rotated = await h.call('POST', `/api-keys/${made.body.id}/rotate`, { body: { grace_hours: 1 } })
    h.clock.advance(1000)
    await h.call('DELETE', `/api-keys/${made.body.id}`)
    const found = await listed(h, { resource: 'api_key', resource_id: made.body.id })
    expect(found.map((e) => e.action)).toEqual(['deleted', 'rotated', 'created'])
    const owner = await ownerKeyId(h)
    const [deleted, rotation, created] = await Promise.all(found.map((e) => detail(h, e.id)))
    for (const e of [deleted, rotation, created]) expect(e.actor).toEqual(byKey(owner))
    expect(created.before).toBeNull()
    expect(created.after).toMatchObject({ object: 'api_key', id: made.body.id, name: 'ci', permission: 'sending_access', token_prefix: made.body.token_prefix, rotated_at: null })
    expect(rotation.before).toMatchObject({ token_prefix: made.body.token_prefix, rotated_at: null })
    expect(rotation.after).toMatchObject({ token_prefix: rotated.body.token_prefix, rotated_at: '2026-03-02T10:00:01.000Z', previous_key_expires_at: '2026-03-02T11:00:01.000Z' })
    expect(deleted).toMatchObject({ before: { id: made.body.id, name: 'ci' }, after: null })
    const text = JSON.stringify([deleted, rotation, created])
    for (const secret of [made.body.token, rotated.body.token]) expect(text).not.toContain(secret.slice(11))
    expect(text).not.toMatch(/token_hash|"token"/)
  })

  test('a key’s rename and its limits', async () => {
    const k = await h.key({ name: 'agent' })
    await h.call('PATCH', `/api-keys/${k.id}`, { body: { name: 'agent-2' } })
    await h.call('PATCH', `/limits/keys/${k.id}`, { body: { budget_per_period: 500, period: 'daily' } })
    expect(await entryFor(h, 'api_key', 'updated', k.id)).toMatchObject({ before: { name: 'agent' }, after: { name: 'agent-2' } })
    expect(await entryFor(h, 'key_limit', 'updated', k.id)).toMatchObject({
      before: { key_id: k.id, budget_per_period: null, period: 'monthly' },
      after: { key_id: k.id, budget_per_period: 500, period: 'daily' },
    })
  })

  test('contacts: create, update, topic answers and delete', async () => {
    const topic = await makeTopic(h, 'Contact news')
    const c = (await h.call('POST', '/contacts', { body: { email: 'grace@example.com', first_name: 'Grace' } })).body
    await h.call('PATCH', `/contacts/${c.id}`, { body: { last_name: 'Hopper' } })
    await h.call('PATCH', `/contacts/${c.id}/topics`, { body: { topics: [{ topic_id: topic.id, subscribed: true }] } })
    await h.call('DELETE', `/contacts/${c.id}`)
    expect((await listed(h, { resource_id: c.id })).map((e) => e.action)).toEqual(['deleted', 'topics_updated', 'updated', 'created'])
    expect(await entryFor(h, 'contact', 'updated', c.id)).toMatchObject({ before: { last_name: null }, after: { first_name: 'Grace', last_name: 'Hopper' } })
    expect(await entryFor(h, 'contact', 'topics_updated', c.id)).toMatchObject({ before: { topics: [] }, after: { topics: [{ topic_id: topic.id, subscribed: true }] } })
    expect(await entryFor(h, 'contact', 'deleted', c.id)).toMatchObject({ before: { email: 'grace@example.com' }, after: null })
  })

  test('a change in a console session names the person and the session', async () => {
    const p = await person(h, { role: 'admin' })
    const t = await h.call('POST', '/topics', { ...asCookie(p.cookie), body: { name: 'From the console', default_subscription: 'opt_in' } })
    expect(t.status, JSON.stringify(t.body)).toBe(201)
    expect((await entryFor(h, 'topic', 'created', t.body.id)).actor).toEqual({ kind: 'session', key_id: null, person_id: p.id, session_id: p.sessionId })
    expect((await listed(h, { actor: 'session' })).map((e) => e.resource_id)).toContain(t.body.id)
  })

  test('suppressions added and cleared by hand', async () => {
    const s = (await h.call('POST', '/suppressions', { body: { email: 'typo@example.com' } })).body
    await h.call('DELETE', `/suppressions/${s.id}`)
    expect(await entryFor(h, 'suppression', 'created', s.id)).toMatchObject({ actor: { kind: 'key' }, before: null, after: { email: 'typo@example.com', reason: 'manual' } })
    expect(await entryFor(h, 'suppression', 'deleted', s.id)).toMatchObject({ before: { email: 'typo@example.com' }, after: null })
  })

  test('a refused change leaves no entry: the row is written in the change’s transaction', async () => {
    await makeTopic(h, 'Unique')
    const before = (await h.root.db.q.select().from(auditEntries)).length
    expectError(await h.call('POST', '/topics', { body: { name: 'unique', default_subscription: 'opt_in' } }), 'topic_name_taken', 409)
    expect(await h.root.db.q.select().from(auditEntries)).toHaveLength(before)
  })

  test('a send writes no audit entry: an email is recorded by its own events', async () => {
    await insertDomain(h.root, h.accountId, 'audit-send.test')
    const before = (await h.root.db.q.select().from(auditEntries)).length
    const sent = await h.call('POST', '/emails', { body: { from: 'a@audit-send.test', to: 'delivered@simulator.test', subject: 'x', text: 'y' } })
    expect(sent.status, JSON.stringify(sent.body)).toBe(200)
    expect(await h.root.db.q.select().from(auditEntries)).toHaveLength(before)
  })

  test('a recipient’s one-click unsubscribe from a broadcast: contact and suppression changed by the system', async () => {
    const domain = await insertDomain(h.root, h.accountId, 'audit-news.test')
    const { email } = await insertEmail(h.root, { accountId: h.accountId, domain, to: ['eve@customer.test'], priority: 'bulk' })
    await h.root.db.write((tx) => tx.update(emails).set({ broadcastId: 'b-1' }).where(eq(emails.id, email.id)))
    const res = await h.app.handle(new Request(`http://mailroom.test/unsubscribe/${unsubscribeToken(h.root.secret, email.id, 'eve@customer.test')}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' }))
    expect(res.status).toBe(200)
    const contact = (await h.call('GET', '/contacts/eve@customer.test')).body
    const suppression = (await h.call('GET', '/suppressions/eve@customer.test')).body
    expect(await entryFor(h, 'contact', 'created', contact.id)).toMatchObject({ actor: SYSTEM, after: { email: 'eve@customer.test', unsubscribed: false } })
    expect(await entryFor(h, 'contact', 'updated', contact.id)).toMatchObject({ actor: SYSTEM, before: { unsubscribed: false }, after: { unsubscribed: true } })
    expect(await entryFor(h, 'suppression', 'created', suppression.id)).toMatchObject({ actor: SYSTEM, after: { reason: 'unsubscribe', source_email_id: email.id } })
  })
})

describe('Audit: domains, verification by the re-check job, and bounces', () => {
  let dns: TestDnsServer
  let h: Harness
  beforeAll(async () => {
    dns = await startDnsServer()
    h = await harness({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_HOSTNAME: 'mx.mailroom.test', MAILROOM_DELIVERY: 'capture' })
  })
  afterAll(async () => {
    await h.close()
    await dns.close()
  })

  test('create, update, DKIM rotation and delete by a key; never the private key', async () => {
    const d = (await h.call('POST', '/domains', { body: { name: 'keys.test' } })).body
    await h.call('PATCH', `/domains/${d.id}`, { body: { tracking_subdomain: 'links' } })
    await h.call('POST', `/domains/${d.id}/dkim/rotate`)
    await h.call('DELETE', `/domains/${d.id}`)
    const found = await listed(h, { resource_id: d.id })
    expect(found.map((e) => e.action)).toEqual(['deleted', 'dkim_rotated', 'updated', 'created'])
    expect(await entryFor(h, 'domain', 'updated', d.id)).toMatchObject({ before: { tracking_subdomain: null }, after: { tracking_subdomain: 'links' } })
    const text = JSON.stringify(await Promise.all(found.map((e) => detail(h, e.id))))
    expect(text).not.toContain('PRIVATE KEY')
    expect(text).not.toMatch(/private_?key/i)
  })

  test('the re-check job verifying a domain is recorded as the system, with the status before and after', async () => {
    const d = (await h.call('POST', '/domains', { body: { name: 'later.test' } })).body
    expect(d.status).toBe('pending')
    for (const r of d.records as { name: string; type: 'TXT' | 'MX' | 'CNAME'; value: string; priority?: number }[]) {
      dns.set(r.name, r.type, [r.type === 'MX' ? { exchange: r.value, priority: r.priority ?? 10 } : r.value])
    }
    h.clock.advance(5 * 60_000)
    await h.scheduler.runNow('recheck-domains')
    const e = await entryFor(h, 'domain', 'verified', d.id)
    expect(e.actor).toEqual(SYSTEM)
    expect(e.before).toMatchObject({ id: d.id, status: 'pending' })
    expect(e.after).toMatchObject({ id: d.id, status: 'verified', verified_at: iso(h.clock.now()) })
    // A later check that changes nothing a person would see is not an entry.
    h.clock.advance(7 * 3_600_000)
    await h.scheduler.runNow('recheck-domains')
    expect(await listed(h, { resource_id: d.id, actor: 'system' })).toHaveLength(1)
  })

  test('a bounce reported by a DSN suppresses the address as the system', async () => {
    await verifiedDomain(h, dns, 'shop.test', false)
    const smtp = await h.listen()
    const sent = await h.call('POST', '/emails', { body: { from: 'Shop <orders@shop.test>', to: 'ghost@gmail-user.test', subject: 'Your order', text: 'Thanks' } })
    await h.worker.runOnce()
    const [delivery] = await h.root.db.q.select().from(deliveries).where(eq(deliveries.emailId, sent.body.id))
    const rcpt = `bounces+${delivery.id}@send.shop.test`
    const dsn = [
      'From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>',
      `To: ${rcpt}`,
      'Subject: Delivery Status Notification (Failure)',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; boundary="b1"; report-type=delivery-status',
      '',
      '--b1',
      'Content-Type: text/plain',
      '',
      'Address not found',
      '--b1',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; googlemail.com',
      '',
      'Final-Recipient: rfc822; ghost@gmail-user.test',
      'Action: failed',
      'Status: 5.1.1',
      'Diagnostic-Code: smtp; 550 5.1.1 The email account that you tried to reach does not exist',
      '--b1--',
      '',
    ].join('\r\n')
    await smtpClient(smtp.port).sendMail({ envelope: { from: '', to: [rcpt] }, raw: dsn } as never)
    const suppression = (await h.call('GET', '/suppressions/ghost@gmail-user.test')).body
    expect(suppression).toMatchObject({ reason: 'bounce', source_email_id: sent.body.id })
    const e = await entryFor(h, 'suppression', 'created', suppression.id)
    expect(e).toMatchObject({ actor: SYSTEM, before: null, after: { email: 'ghost@gmail-user.test', reason: 'bounce', source_email_id: sent.body.id } })
  })
})

describe('Audit: a bounce at delivery', () => {
  test('a 5xx at RCPT TO suppresses the address as the system', async () => {
    const sink = await startSmtpSink({ auth: { user: 'mailroom', pass: 's3cret' } })
    const h = await harness({ MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: sink.url(), MAILROOM_HOSTNAME: 'mx.mailroom.test' })
    try {
      sink.failAddress('nobody@example.net', '550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown')
      const domain = await insertDomain(h.root, h.accountId)
      const { email } = await insertEmail(h.root, { accountId: h.accountId, domain, to: ['nobody@example.net'] })
      await h.worker.runOnce()
      const suppression = (await h.call('GET', '/suppressions/nobody@example.net')).body
      expect(await entryFor(h, 'suppression', 'created', suppression.id)).toMatchObject({
        actor: SYSTEM,
        before: null,
        after: { email: 'nobody@example.net', reason: 'bounce', source_email_id: email.id },
      })
    } finally {
      await h.close()
      await sink.close()
    }
  })
})

describe('Audit: resource webhook events', () => {
  test('contact, topic, domain and suppression changes queue their events for subscribed endpoints; other changes none', async () => {
    const h = await harness()
    try {
      const now = iso(h.clock.now())
      const endpoint = { id: h.root.ids.uuid(), accountId: h.accountId, url: 'http://127.0.0.1:9/hook', disabled: false, webhookCompat: false, secret: 'whsec_dGVzdHRlc3R0ZXN0dGVzdA==', createdAt: now, updatedAt: now }
      await h.root.db.write((tx) =>
        tx.insert(webhookEndpoints).values({ ...endpoint, events: ['contact.created', 'contact.updated', 'contact.deleted', 'topic.created', 'suppression.added'] }),
      )
      const c = (await h.call('POST', '/contacts', { body: { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' } })).body
      await h.call('PATCH', `/contacts/${c.id}`, { body: { unsubscribed: true } })
      const t = await makeTopic(h)
      await h.call('PATCH', `/contacts/${c.id}/topics`, { body: { topics: [{ topic_id: t.id, subscribed: true }] } })
      await h.call('POST', '/api-keys', { body: { name: 'not an event' } })
      await h.call('DELETE', `/topics/${t.id}`)
      await h.call('POST', '/suppressions', { body: { email: 'gone@example.com' } })
      await h.call('DELETE', `/contacts/${c.id}`)
      const rows = await h.root.db.q.select().from(webhookDeliveries).orderBy(webhookDeliveries.id)
      expect(rows.map((r) => r.type)).toEqual(['contact.created', 'contact.updated', 'topic.created', 'suppression.added', 'contact.deleted'])
      for (const r of rows) expect(r).toMatchObject({ endpointId: endpoint.id, accountId: h.accountId, state: 'pending' })
      const created = JSON.parse(rows[0].payload)
      expect(created).toEqual({
        type: 'contact.created',
        created_at: '2026-03-02T10:00:00.000Z',
        data: { id: c.id, segment_ids: [], email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', unsubscribed: false, created_at: c.created_at, updated_at: c.updated_at },
      })
      expect(rows[0].orderKey).toBe(c.id)
      expect(JSON.parse(rows[1].payload).data).toMatchObject({ id: c.id, unsubscribed: true })
      expect(JSON.parse(rows[2].payload).data).toMatchObject({ id: t.id, name: 'News', default_subscription: 'opt_in' })
      expect(JSON.parse(rows[2].payload).data).not.toHaveProperty('object')
      expect(JSON.parse(rows[4].payload).data).toMatchObject({ id: c.id, email: 'ada@example.com' })
    } finally {
      await h.close()
    }
  })

  test('a contact event names the segments the contact is in', async () => {
    const h = await harness()
    try {
      const now = iso(h.clock.now())
      const segmentId = h.root.ids.uuid()
      await h.root.db.write(async (tx) => {
        await tx.insert(segments).values({ id: segmentId, accountId: h.accountId, name: 'Customers', createdAt: now, updatedAt: now })
        await tx.insert(webhookEndpoints).values({ id: h.root.ids.uuid(), accountId: h.accountId, url: 'http://127.0.0.1:9/hook', events: ['contact.created'], disabled: false, webhookCompat: false, secret: 'whsec_dGVzdA==', createdAt: now, updatedAt: now })
      })
      const c = await h.call('POST', '/contacts', { body: { email: 'member@example.com', segments: [segmentId] } })
      expect(c.status, JSON.stringify(c.body)).toBe(201)
      const [row] = await h.root.db.q.select().from(webhookDeliveries)
      expect(JSON.parse(row.payload).data).toMatchObject({ id: c.body.id, segment_ids: [segmentId] })
    } finally {
      await h.close()
    }
  })

  test('a domain event carries Resend’s domain data', async () => {
    const h = await harness()
    try {
      const now = iso(h.clock.now())
      await h.root.db.write((tx) =>
        tx.insert(webhookEndpoints).values({ id: h.root.ids.uuid(), accountId: h.accountId, url: 'http://127.0.0.1:9/hook', events: ['domain.created'], disabled: false, webhookCompat: false, secret: 'whsec_dGVzdA==', createdAt: now, updatedAt: now }),
      )
      const d = (await h.call('POST', '/domains', { body: { name: 'events.test', region: 'eu-west-1' } })).body
      const [row] = await h.root.db.q.select().from(webhookDeliveries)
      const payload = JSON.parse(row.payload)
      expect(payload.type).toBe('domain.created')
      expect(Object.keys(payload.data).sort()).toEqual(['created_at', 'id', 'name', 'records', 'region', 'status'])
      expect(payload.data).toMatchObject({ id: d.id, name: 'events.test', status: 'pending', region: 'eu', records: d.records })
    } finally {
      await h.close()
    }
  })
})

describe('Audit: redaction', () => {
  test('members named like credentials lose their value, wherever they sit', () => {
    const out = redact({
      token: 'mr_x',
      token_prefix: 'mr_abc',
      nested: [{ signing_secret: 'whsec_x', password: 'p', dkimPrivateKey: 'k', 'x-api-key': 'k', token_hash: 'h', name: 'kept' }],
      none: null,
    })
    expect(out).toEqual({
      token: REDACTED,
      token_prefix: 'mr_abc',
      nested: [{ signing_secret: REDACTED, password: REDACTED, dkimPrivateKey: REDACTED, 'x-api-key': REDACTED, token_hash: REDACTED, name: 'kept' }],
      none: null,
    })
  })

  test('as JSON text: a clean body is kept as it is; anything suspect goes through the same redaction', () => {
    const clean = { from: 'a@b.test', to: ['c@d.test'], subject: 'Hi', text: 'Hello' }
    expect(redactedJson(clean)).toBe(JSON.stringify(clean))
    expect(JSON.parse(redactedJson({ Private_Key: 'k', note: 'ok' }))).toEqual({ Private_Key: REDACTED, note: 'ok' })
    expect(JSON.parse(redactedJson({ note: `key mr_${'b'.repeat(40)}` }))).toEqual({ note: `key ${REDACTED}` })
    expect(JSON.parse(redactedJson({ html: 'x'.repeat(20) }, { maxString: 5 }))).toEqual({ html: 'xxxxx… (20 characters)' })
  })

  test('credential-shaped text is cut out of any string, and long strings are shortened', () => {
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----'
    const out = redact({ note: `use mr_${'a'.repeat(40)} or whsec_c2VjcmV0c2VjcmV0 then ${pem} done`, blob: 'x'.repeat(50) }, { maxString: 10 })
    expect(out.blob).toBe('xxxxxxxxxx… (50 characters)')
    expect(redact({ note: `use mr_${'a'.repeat(40)} or whsec_c2VjcmV0c2VjcmV0 then ${pem} done` }).note).toBe(`use ${REDACTED} or ${REDACTED} then ${REDACTED} done`)
    expect(out.note).not.toContain('aaaa')
  })
})
