import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { pauseKey } from '../src/api-keys/service'
import { auditEntries, webhookAttempts, webhookDeliveries, webhookEndpoints } from '../src/db/tables'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'
import { startReceiver, type Receiver } from './support/webhook-receiver'
import { makeEndpoint } from './support/webhooks'

const WEBHOOK_FIELDS = ['object', 'id', 'url', 'endpoint', 'events', 'disabled', 'status', 'disabled_reason', 'webhook_compat', 'created_at', 'updated_at']
const missing = '01890000-0000-7000-8000-000000000000'
const PUBLIC_IP = '93.184.215.14'

let rx: Receiver
let dns: TestDnsServer
beforeAll(async () => {
  rx = await startReceiver()
  dns = await startDnsServer()
})
afterAll(async () => {
  await rx.close()
  await dns.close()
})
const reset = () => {
  rx.received.length = 0
  rx.respond = () => new Response('ok')
  dns?.reset()
}

const hook = (h: Harness, body: Record<string, unknown> = {}) => makeEndpoint(h, { url: rx.url, events: ['email.sent', 'email.delivered'], ...body })
/** An endpoint with one event in its log (a test event). */
const hookWithEvent = async (h: Harness) => {
  const e = await hook(h)
  const t = await h.call('POST', `/webhooks/${e.id}/test`)
  expect(t.status).toBe(200)
  return { e, event: t.body as { id: string } }
}
const theirs = async (h: Harness) => {
  const o = await h.otherAccount()
  const e = await makeEndpoint(h, { url: rx.url, events: ['email.sent'] }, o.token)
  const t = await h.call('POST', `/webhooks/${e.id}/test`, { key: o.token })
  return { o, e, event: t.body as { id: string } }
}
/** Refusals the auth layer gives every operation of the group. */
const refusals = (method: string, path: string, body?: unknown) => [
  { name: 'refuses a sending-only key', method, path, body, as: 'sending' as const, status: 403, code: 'restricted_api_key' as const },
  { name: 'refuses no key', method, path, body, as: 'none' as const, status: 401, code: 'missing_api_key' as const },
  { name: 'refuses a revoked key', method, path, body, as: 'revoked' as const, status: 403, code: 'invalid_api_key' as const },
]

describe('Webhooks: scenarios', () => {
  scenarios(
    [
      // POST /webhooks
      { name: 'creates an endpoint and shows its signing secret once', method: 'POST', path: '/webhooks', body: () => ({ url: rx.url, events: ['email.delivered', 'email.bounced'] }), status: 201,
        expect: { object: 'webhook', events: ['email.delivered', 'email.bounced'], disabled: false, status: 'enabled', disabled_reason: null, webhook_compat: false, created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:00:00.000Z' },
        check: async (r, _c, h) => {
          for (const f of WEBHOOK_FIELDS) expect(r.body).toHaveProperty(f)
          expect(r.body.url).toBe(rx.url)
          expect(r.body.endpoint).toBe(rx.url)
          expect(r.body.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
          const again = await h.call('GET', `/webhooks/${r.body.id}`)
          expect(again.body).not.toHaveProperty('signing_secret')
          expect(JSON.stringify(again.body)).not.toContain(r.body.signing_secret)
          const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resourceId, r.body.id))
          expect(audit).toMatchObject({ resource: 'webhook', action: 'created' })
          expect(JSON.stringify(audit)).not.toContain(r.body.signing_secret)
        } },
      { name: 'takes Resend’s `endpoint` for the URL, and webhook_compat and disabled', method: 'POST', path: '/webhooks', body: () => ({ endpoint: rx.url, events: ['contact.created', 'topic.deleted', 'suppression.added'], webhook_compat: true, disabled: true }), status: 201,
        check: (r) => expect(r.body).toMatchObject({ url: rx.url, webhook_compat: true, disabled: true, status: 'disabled', disabled_reason: 'manual' }) },
      { name: 'takes url and endpoint together when they agree', method: 'POST', path: '/webhooks', body: () => ({ url: rx.url, endpoint: rx.url, events: ['email.sent'] }), status: 201 },
      { name: 'refuses url and endpoint that differ', method: 'POST', path: '/webhooks', body: () => ({ url: rx.url, endpoint: `${rx.url}/other`, events: ['email.sent'] }), status: 422, code: 'invalid_parameter' },
      { name: 'refuses an endpoint without a URL', method: 'POST', path: '/webhooks', body: { events: ['email.sent'] }, status: 422, code: 'missing_required_field',
        check: (r) => expect(r.body.details).toEqual([{ field: 'url', message: expect.any(String) }]) },
      { name: 'refuses an endpoint without events', method: 'POST', path: '/webhooks', body: () => ({ url: rx.url }), status: 400, code: 'validation_error' },
      { name: 'refuses an empty list of events', method: 'POST', path: '/webhooks', body: () => ({ url: rx.url, events: [] }), status: 400, code: 'validation_error' },
      { name: 'refuses an unknown event kind', method: 'POST', path: '/webhooks', body: () => ({ url: rx.url, events: ['email.sent', 'email.teleported'] }), status: 400, code: 'validation_error',
        check: (r) => expect(JSON.stringify(r.body.details)).toContain('events') },
      { name: 'refuses a repeated event kind', method: 'POST', path: '/webhooks', body: () => ({ url: rx.url, events: ['email.sent', 'email.sent'] }), status: 400, code: 'validation_error' },
      { name: 'refuses a URL that is no URL', method: 'POST', path: '/webhooks', body: { url: 'hooks.example.com/in', events: ['email.sent'] }, status: 422, code: 'invalid_parameter',
        check: (r) => expect(r.body.message).toContain('absolute URL') },
      { name: 'refuses a URL with credentials in it', method: 'POST', path: '/webhooks', body: { url: 'https://user:pw@hooks.example.com/in', events: ['email.sent'] }, status: 422, code: 'invalid_parameter' },
      { name: 'refuses http:// in production', method: 'POST', path: '/webhooks', env: { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' }, body: { url: `http://${PUBLIC_IP}/in`, events: ['email.sent'] }, status: 422, code: 'invalid_parameter',
        check: (r) => expect(r.body.message).toContain('https://') },
      ...['127.0.0.1', '10.0.0.8', '192.168.1.20', '172.16.5.5', '169.254.169.254', '100.100.100.200', '0.0.0.0', '[::1]', '[fd00:ec2::254]', '[::ffff:127.0.0.1]', '[fe80::1]'].map((host) => ({
        name: `refuses an address that is not public: ${host}`, method: 'POST', path: '/webhooks', env: { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' }, body: { url: `https://${host}/in`, events: ['email.sent'] }, status: 422, code: 'invalid_parameter' as const,
        check: (r: { body: { message: string } }) => expect(r.body.message).toContain('public addresses only'),
      })),
      { name: 'refuses a name that resolves to a private address', method: 'POST', path: '/webhooks', env: { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' }, setup: async () => dns.set('hooks.corp.test', 'A', ['10.1.2.3']),
        body: { url: 'https://hooks.corp.test/in', events: ['email.sent'] }, status: 422, code: 'invalid_parameter', check: (r) => expect(r.body.message).toContain('10.1.2.3') },
      { name: 'refuses a name with a public and a private address', method: 'POST', path: '/webhooks', env: { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' }, setup: async () => {
        dns.set('mixed.example.test', 'A', [PUBLIC_IP])
        dns.set('mixed.example.test', 'AAAA', ['::1'])
      }, body: { url: 'https://mixed.example.test/in', events: ['email.sent'] }, status: 422, code: 'invalid_parameter' },
      { name: 'refuses a name that does not exist', method: 'POST', path: '/webhooks', env: { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' }, body: { url: 'https://nowhere.example.test/in', events: ['email.sent'] }, status: 422, code: 'invalid_parameter',
        check: (r) => expect(r.body.message).toContain('no address') },
      { name: 'answers dns_unreachable when DNS does not answer, and creates nothing', method: 'POST', path: '/webhooks', env: { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' }, setup: async () => dns.failing(true),
        body: { url: 'https://hooks.example.test/in', events: ['email.sent'] }, status: 503, code: 'dns_unreachable',
        check: async (_r, _c, h) => expect(await h.root.db.q.select().from(webhookEndpoints)).toEqual([]) },
      { name: 'creates an https endpoint whose name resolves to public addresses', method: 'POST', path: '/webhooks', env: { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' }, setup: async () => dns.set('hooks.example.test', 'A', [PUBLIC_IP]),
        body: { url: 'https://hooks.example.test/in?source=mailroom', events: ['email.sent'] }, status: 201, expect: { url: 'https://hooks.example.test/in?source=mailroom' } },
      { name: 'refuses an endpoint beyond the account’s limit', method: 'POST', path: '/webhooks', env: { MAILROOM_WEBHOOK_ENDPOINT_LIMIT: '2' }, setup: async (h) => {
        await hook(h)
        await hook(h)
      }, body: () => ({ url: rx.url, events: ['email.sent'] }), status: 422, code: 'webhook_endpoint_limit_reached',
        check: async (_r, _c, h) => expect((await h.call('GET', '/webhooks')).body.data).toHaveLength(2) },
      { name: 'counts the limit per account', method: 'POST', path: '/webhooks', env: { MAILROOM_WEBHOOK_ENDPOINT_LIMIT: '1' }, setup: async (h) => theirs(h), body: () => ({ url: rx.url, events: ['email.sent'] }), status: 201 },
      { name: 'refuses an Idempotency-Key over 256 characters', method: 'POST', path: '/webhooks', headers: { 'Idempotency-Key': 'k'.repeat(257) }, body: () => ({ url: rx.url, events: ['email.sent'] }), status: 400, code: 'invalid_idempotency_key' },
      ...refusals('POST', '/webhooks', { url: 'https://hooks.example.com/', events: ['email.sent'] }),

      // GET /webhooks
      { name: 'lists endpoints newest first, without secrets', method: 'GET', path: '/webhooks', setup: async (h) => {
        const a = await hook(h)
        h.clock.advance(1000)
        const b = await hook(h, { events: ['email.bounced'] })
        return { a, b }
      }, status: 200,
        check: (r, c) => {
          expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
          expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([c.b.id, c.a.id])
          for (const f of WEBHOOK_FIELDS) expect(r.body.data[0]).toHaveProperty(f)
          expect(JSON.stringify(r.body)).not.toContain('whsec_')
        } },
      { name: 'pages with limit and after', method: 'GET', path: '/webhooks', setup: async (h) => {
        const ids = []
        for (let i = 0; i < 3; i++) ids.push((await hook(h)).id)
        return ids
      }, query: { limit: 1 }, status: 200,
        check: async (r, ids, h) => {
          expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([ids[2]])
          expect(r.body.has_more).toBe(true)
          const next = await h.call('GET', '/webhooks', { query: { limit: 5, after: ids[2] } })
          expect(next.body.data.map((x: { id: string }) => x.id)).toEqual([ids[1], ids[0]])
          const byCursor = await h.call('GET', '/webhooks', { query: { limit: 1, cursor: r.body.next_cursor } })
          expect(byCursor.body.data.map((x: { id: string }) => x.id)).toEqual([ids[1]])
        } },
      { name: 'lists nothing of another account', method: 'GET', path: '/webhooks', setup: (h) => theirs(h), status: 200, expect: { data: [], has_more: false } },
      { name: 'refuses a tampered cursor', method: 'GET', path: '/webhooks', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
      { name: 'refuses an after that is no endpoint id', method: 'GET', path: '/webhooks', query: { after: 'nope' }, status: 400, code: 'invalid_cursor' },
      { name: 'refuses a limit of 0', method: 'GET', path: '/webhooks', query: { limit: 0 }, status: 400, code: 'validation_error' },
      ...refusals('GET', '/webhooks'),

      // GET /webhooks/{id}
      { name: 'gets one endpoint without its secret', method: 'GET', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}`, status: 200,
        check: (r, e) => {
          expect(r.body).toMatchObject({ object: 'webhook', id: e.id, url: rx.url, events: ['email.sent', 'email.delivered'] })
          expect(Object.keys(r.body).sort()).toEqual([...WEBHOOK_FIELDS].sort())
        } },
      { name: 'refuses a path id that is no UUID', method: 'GET', path: '/webhooks/abc', status: 400, code: 'validation_error' },
      { name: 'answers 404 for an endpoint that does not exist', method: 'GET', path: `/webhooks/${missing}`, status: 404, code: 'not_found' },
      { name: 'answers 404 for another account’s endpoint', method: 'GET', setup: (h) => theirs(h), path: (c) => `/webhooks/${c.e.id}`, status: 404, code: 'not_found' },
      ...refusals('GET', `/webhooks/${missing}`),

      // PATCH /webhooks/{id}
      { name: 'changes the URL, events and webhook_compat', method: 'PATCH', setup: async (h) => {
        const e = await hook(h)
        h.clock.advance(60_000)
        return e
      }, path: (e) => `/webhooks/${e.id}`, body: () => ({ url: `${rx.url}/v2`, events: ['email.opened'], webhook_compat: true }), status: 200,
        expect: { events: ['email.opened'], webhook_compat: true, created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:01:00.000Z' },
        check: async (r, e, h) => {
          expect(r.body.url).toBe(`${rx.url}/v2`)
          expect((await h.call('GET', `/webhooks/${e.id}`)).body).toEqual(r.body)
        } },
      { name: 'disables with `disabled` and enables with Resend’s `status`', method: 'PATCH', setup: async (h) => {
        const e = await hook(h)
        expect((await h.call('PATCH', `/webhooks/${e.id}`, { body: { disabled: true } })).body).toMatchObject({ disabled: true, status: 'disabled', disabled_reason: 'manual' })
        return e
      }, path: (e) => `/webhooks/${e.id}`, body: { status: 'enabled' }, status: 200, expect: { disabled: false, status: 'enabled', disabled_reason: null } },
      { name: 'refuses `disabled` and `status` that disagree', method: 'PATCH', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}`, body: { disabled: true, status: 'enabled' }, status: 422, code: 'invalid_parameter' },
      { name: 'refuses a new URL at a private address in production', method: 'PATCH', env: { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' }, setup: async (h) => {
        dns.set('hooks.example.test', 'A', [PUBLIC_IP])
        return makeEndpoint(h, { url: 'https://hooks.example.test/in', events: ['email.sent'] })
      }, path: (e) => `/webhooks/${e.id}`, body: { url: 'https://127.0.0.1/in' }, status: 422, code: 'invalid_parameter',
        check: async (_r, e, h) => expect((await h.call('GET', `/webhooks/${e.id}`)).body.url).toBe('https://hooks.example.test/in') },
      { name: 'answers dns_unreachable for a new URL when DNS does not answer', method: 'PATCH', env: { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' }, setup: async (h) => {
        dns.set('hooks.example.test', 'A', [PUBLIC_IP])
        const e = await makeEndpoint(h, { url: 'https://hooks.example.test/in', events: ['email.sent'] })
        dns.failing(true)
        return e
      }, path: (e) => `/webhooks/${e.id}`, body: { url: 'https://other.example.test/in' }, status: 503, code: 'dns_unreachable' },
      { name: 'refuses an unknown event kind', method: 'PATCH', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}`, body: { events: ['email.exploded'] }, status: 400, code: 'validation_error' },
      { name: 'refuses a signing secret in the body (it is never set by hand)', method: 'PATCH', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}`, body: { signing_secret: 'whsec_mine' }, status: 400, code: 'validation_error' },
      { name: 'answers 404 when updating a missing endpoint', method: 'PATCH', path: `/webhooks/${missing}`, body: { disabled: true }, status: 404, code: 'not_found' },
      { name: 'answers 404 when updating another account’s endpoint', method: 'PATCH', setup: (h) => theirs(h), path: (c) => `/webhooks/${c.e.id}`, body: { disabled: true }, status: 404, code: 'not_found' },
      { name: 'refuses a path id that is no UUID', method: 'PATCH', path: '/webhooks/123', body: { disabled: true }, status: 400, code: 'validation_error' },
      ...refusals('PATCH', `/webhooks/${missing}`, { disabled: true }),

      // DELETE /webhooks/{id}
      { name: 'deletes an endpoint with its delivery log', method: 'DELETE', setup: (h) => hookWithEvent(h), path: (c) => `/webhooks/${c.e.id}`, status: 200,
        check: async (r, c, h) => {
          expect(r.body).toEqual({ object: 'webhook', id: c.e.id, deleted: true })
          expect(await h.root.db.q.select().from(webhookDeliveries)).toEqual([])
          expect(await h.root.db.q.select().from(webhookAttempts)).toEqual([])
          expectError(await h.call('GET', `/webhooks/${c.e.id}`), 'not_found', 404)
        } },
      { name: 'answers 404 when deleting a missing endpoint', method: 'DELETE', path: `/webhooks/${missing}`, status: 404, code: 'not_found' },
      { name: 'answers 404 when deleting another account’s endpoint, and leaves it', method: 'DELETE', setup: (h) => theirs(h), path: (c) => `/webhooks/${c.e.id}`, status: 404, code: 'not_found',
        check: async (_r, c, h) => expect((await h.call('GET', `/webhooks/${c.e.id}`, { key: c.o.token })).status).toBe(200) },
      { name: 'refuses a path id that is no UUID', method: 'DELETE', path: '/webhooks/abc', status: 400, code: 'validation_error' },
      ...refusals('DELETE', `/webhooks/${missing}`),

      // POST /webhooks/{id}/signing-secret/rotate
      { name: 'issues a new secret and keeps the old one for 24 hours', method: 'POST', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/signing-secret/rotate`, status: 200,
        check: async (r, e, h) => {
          expect(r.body).toMatchObject({ object: 'webhook', id: e.id, previous_secret_expires_at: '2026-03-03T10:00:00.000Z' })
          expect(r.body.signing_secret).toMatch(/^whsec_/)
          expect(r.body.signing_secret).not.toBe(e.signing_secret)
          const [row] = await h.root.db.q.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, e.id))
          expect(row).toMatchObject({ secret: r.body.signing_secret, previousSecret: e.signing_secret })
          expect(JSON.stringify((await h.call('GET', `/webhooks/${e.id}`)).body)).not.toContain('whsec_')
        } },
      { name: 'takes Resend’s SDK call: Content-Type JSON and no body', method: 'POST', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/signing-secret/rotate`, headers: { 'content-type': 'application/json' }, status: 200 },
      { name: 'answers 404 for a missing endpoint', method: 'POST', path: `/webhooks/${missing}/signing-secret/rotate`, status: 404, code: 'not_found' },
      { name: 'answers 404 for another account’s endpoint', method: 'POST', setup: (h) => theirs(h), path: (c) => `/webhooks/${c.e.id}/signing-secret/rotate`, status: 404, code: 'not_found' },
      { name: 'refuses a path id that is no UUID', method: 'POST', path: '/webhooks/abc/signing-secret/rotate', status: 400, code: 'validation_error' },
      ...refusals('POST', `/webhooks/${missing}/signing-secret/rotate`),

      // POST /webhooks/{id}/test
      { name: 'sends a signed sample event now and answers with its attempt', method: 'POST', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/test`, status: 200,
        check: async (r, e) => {
          expect(r.body).toMatchObject({ object: 'webhook_event', webhook_id: e.id, type: 'email.sent', status: 'success', attempt_count: 1, last_status_code: 200 })
          expect(r.body.payload).toMatchObject({ type: 'email.sent', data: { test: true, to: ['delivered@simulator.test'] } })
          expect(r.body.attempts).toEqual([{ id: expect.any(String), sent_at: '2026-03-02T10:00:00.000Z', http_status_code: 200, response: 'ok', duration_ms: expect.any(Number), outcome: 'succeeded' }])
          expect(rx.received).toHaveLength(1)
          expect(rx.received[0]!.headers['webhook-id']).toBe(r.body.id)
          expect(JSON.parse(rx.received[0]!.body)).toEqual(r.body.payload)
        } },
      { name: 'sends the kind asked for, even one the endpoint does not take', method: 'POST', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/test`, body: { type: 'contact.created' }, status: 200,
        check: (r) => expect(r.body.payload).toMatchObject({ type: 'contact.created', data: { object: 'contact', test: true } }) },
      { name: 'logs a failed test without retrying it', method: 'POST', setup: (h) => {
        rx.respond = () => new Response('down for maintenance', { status: 503 })
        return hook(h)
      }, path: (e) => `/webhooks/${e.id}/test`, status: 200, expect: { status: 'failed', last_status_code: 503, next_attempt_at: null, attempts: [{ http_status_code: 503, response: 'down for maintenance', outcome: 'failed' }] },
        check: async (_r, _e, h) => {
          h.clock.advance(3_600_000)
          expect(await h.dispatcher.runOnce()).toBe(0)
        } },
      { name: 'refuses an unknown kind', method: 'POST', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/test`, body: { type: 'email.imploded' }, status: 400, code: 'validation_error' },
      { name: 'answers 404 for a missing endpoint', method: 'POST', path: `/webhooks/${missing}/test`, status: 404, code: 'not_found' },
      { name: 'answers 404 for another account’s endpoint, and sends nothing', method: 'POST', setup: (h) => theirs(h), path: (c) => `/webhooks/${c.e.id}/test`, status: 404, code: 'not_found',
        check: () => expect(rx.received).toHaveLength(1) },
      ...refusals('POST', `/webhooks/${missing}/test`),

      // GET /webhooks/{id}/events
      { name: 'lists the delivery log newest first', method: 'GET', setup: async (h) => {
        const c = await hookWithEvent(h)
        h.clock.advance(1000)
        rx.respond = () => new Response('nope', { status: 500 })
        const failed = (await h.call('POST', `/webhooks/${c.e.id}/test`, { body: { type: 'email.bounced' } })).body
        return { ...c, failed }
      }, path: (c) => `/webhooks/${c.e.id}/events`, status: 200,
        check: (r, c) => {
          expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
          expect(r.body.data).toEqual([
            { object: 'webhook_event', id: c.failed.id, webhook_id: c.e.id, type: 'email.bounced', created_at: '2026-03-02T10:00:01.000Z', status: 'failed', attempt_count: 1, last_status_code: 500, next_attempt_at: null, delivered_at: null },
            { object: 'webhook_event', id: c.event.id, webhook_id: c.e.id, type: 'email.sent', created_at: '2026-03-02T10:00:00.000Z', status: 'success', attempt_count: 1, last_status_code: 200, next_attempt_at: null, delivered_at: '2026-03-02T10:00:00.000Z' },
          ])
        } },
      { name: 'filters by status and by kind', method: 'GET', setup: async (h) => {
        const c = await hookWithEvent(h)
        rx.respond = () => new Response('nope', { status: 500 })
        await h.call('POST', `/webhooks/${c.e.id}/test`, { body: { type: 'email.bounced' } })
        return c
      }, path: (c) => `/webhooks/${c.e.id}/events`, query: { status: 'success' }, status: 200,
        check: async (r, c, h) => {
          expect(r.body.data.map((e: { id: string }) => e.id)).toEqual([c.event.id])
          expect((await h.call('GET', `/webhooks/${c.e.id}/events`, { query: { type: 'email.bounced' } })).body.data.map((e: { status: string }) => e.status)).toEqual(['failed'])
          expect((await h.call('GET', `/webhooks/${c.e.id}/events`, { query: { status: 'pending' } })).body.data).toEqual([])
          // A cursor of one filter is refused under another.
          const page = await h.call('GET', `/webhooks/${c.e.id}/events`, { query: { limit: 1 } })
          expectError(await h.call('GET', `/webhooks/${c.e.id}/events`, { query: { status: 'failed', cursor: page.body.next_cursor } }), 'invalid_cursor', 400)
        } },
      { name: 'refuses an unknown status filter', method: 'GET', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/events`, query: { status: 'lost' }, status: 400, code: 'validation_error' },
      { name: 'refuses a tampered cursor', method: 'GET', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/events`, query: { cursor: 'abc.def' }, status: 400, code: 'invalid_cursor' },
      { name: 'answers 404 for a missing endpoint', method: 'GET', path: `/webhooks/${missing}/events`, status: 404, code: 'not_found' },
      { name: 'answers 404 for another account’s endpoint', method: 'GET', setup: (h) => theirs(h), path: (c) => `/webhooks/${c.e.id}/events`, status: 404, code: 'not_found' },
      ...refusals('GET', `/webhooks/${missing}/events`),

      // GET /webhooks/{id}/events/{event_id}
      { name: 'gets one event with its payload and every attempt', method: 'GET', setup: (h) => hookWithEvent(h), path: (c) => `/webhooks/${c.e.id}/events/${c.event.id}`, status: 200,
        check: (r, c) => {
          expect(r.body).toMatchObject({ object: 'webhook_event', id: c.event.id, status: 'success', payload: { type: 'email.sent' } })
          expect(r.body.attempts).toHaveLength(1)
          expect(r.body.attempts[0]).toMatchObject({ http_status_code: 200, response: 'ok', outcome: 'succeeded' })
        } },
      { name: 'answers 404 for an event of another endpoint', method: 'GET', setup: async (h) => ({ a: await hookWithEvent(h), b: await hook(h) }), path: (c) => `/webhooks/${c.b.id}/events/${c.a.event.id}`, status: 404, code: 'not_found' },
      { name: 'answers 404 for a missing event', method: 'GET', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/events/${missing}`, status: 404, code: 'not_found' },
      { name: 'answers 404 for another account’s event', method: 'GET', setup: (h) => theirs(h), path: (c) => `/webhooks/${c.e.id}/events/${c.event.id}`, status: 404, code: 'not_found' },
      { name: 'refuses an event id that is no UUID', method: 'GET', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/events/evt_1`, status: 400, code: 'validation_error' },
      ...refusals('GET', `/webhooks/${missing}/events/${missing}`),

      // POST /webhooks/{id}/events/{event_id}/replay
      { name: 'delivers an event again, with the same id and body', method: 'POST', setup: (h) => hookWithEvent(h), path: (c) => `/webhooks/${c.e.id}/events/${c.event.id}/replay`, status: 200,
        expect: { object: 'webhook_event', status: 'attempting', next_attempt_at: '2026-03-02T10:00:00.000Z' },
        check: async (_r, c, h) => {
          expect(await h.dispatcher.runOnce()).toBe(1)
          expect(rx.received.map((q) => q.headers['webhook-id'])).toEqual([c.event.id, c.event.id])
          expect(rx.received[1]!.body).toBe(rx.received[0]!.body)
          const one = await h.call('GET', `/webhooks/${c.e.id}/events/${c.event.id}`)
          expect(one.body).toMatchObject({ status: 'success', attempt_count: 2 })
          expect(one.body.attempts).toHaveLength(2)
        } },
      { name: 'answers 404 for a missing event', method: 'POST', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/events/${missing}/replay`, status: 404, code: 'not_found' },
      { name: 'answers 404 for another account’s event, and sends nothing', method: 'POST', setup: (h) => theirs(h), path: (c) => `/webhooks/${c.e.id}/events/${c.event.id}/replay`, status: 404, code: 'not_found',
        check: async (_r, _c, h) => {
          expect(await h.dispatcher.runOnce()).toBe(0)
          expect(rx.received).toHaveLength(1)
        } },
      { name: 'refuses an event id that is no UUID', method: 'POST', setup: (h) => hook(h), path: (e) => `/webhooks/${e.id}/events/nope/replay`, status: 400, code: 'validation_error' },
      ...refusals('POST', `/webhooks/${missing}/events/${missing}/replay`),
    ],
    { env: () => ({ MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true', MAILROOM_DNS_SERVERS: dns.address }), reset },
  )
})

describe('Webhooks: the platform’s refusals on every operation', () => {
  const ops = (id: string, event: string) =>
    [
      ['POST', '/webhooks'],
      ['GET', '/webhooks'],
      ['GET', `/webhooks/${id}`],
      ['PATCH', `/webhooks/${id}`],
      ['DELETE', `/webhooks/${id}`],
      ['POST', `/webhooks/${id}/signing-secret/rotate`],
      ['POST', `/webhooks/${id}/test`],
      ['GET', `/webhooks/${id}/events`],
      ['GET', `/webhooks/${id}/events/${event}`],
      ['POST', `/webhooks/${id}/events/${event}/replay`],
    ] as const

  test('a paused key, a spent rate window and a spent key ceiling are refused', async () => {
    const h = await harness({ MAILROOM_RATE_LIMIT: '3' })
    try {
      for (const [m, p] of ops(missing, missing)) {
        const body = m === 'GET' ? undefined : {}
        const paused = await h.key({ name: 'paused' })
        await pauseKey(h.root, paused.id, 'runaway')
        expectError(await h.call(m, p, { key: paused.token, body }), 'kill_switch_active', 403)
        const slow = await h.key({ name: 'slow', rate_ceiling_per_minute: 1 })
        await h.call('GET', '/webhooks', { key: slow.token })
        expectError(await h.call(m, p, { key: slow.token, body }), 'rate_ceiling_exceeded', 429)
        const busy = await h.key({ name: 'busy' })
        for (let i = 0; i < 3; i++) await h.call('GET', '/webhooks', { key: busy.token })
        expectError(await h.call(m, p, { key: busy.token, body }), 'rate_limit_exceeded', 429)
      }
    } finally {
      await h.close()
    }
  })

  test('changes refuse a body that is not JSON, one over 1 MB, a bad Idempotency-Key, and a reused one with another body', async () => {
    const h = await harness({ MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' })
    try {
      const { e, event } = await hookWithEvent(h)
      const changes = ops(e.id, event.id).filter(([m]) => m !== 'GET')
      for (const [m, p] of changes) {
        expectError(await h.call(m, p, { raw: 'url=x', headers: { 'content-type': 'text/plain' } }), 'unsupported_media_type', 415)
        expectError(await h.call(m, p, { raw: JSON.stringify({ url: 'x'.repeat(1024 * 1024 + 10) }), headers: { 'content-type': 'application/json' } }), 'payload_too_large', 413)
        expectError(await h.call(m, p, { headers: { 'Idempotency-Key': 'k'.repeat(257) }, body: {} }), 'invalid_idempotency_key', 400)
      }
      // The same key again with another body is refused; the same body again answers the first reply.
      const bodies: Record<string, [unknown, unknown]> = {
        POST: [{ url: rx.url, events: ['email.sent'] }, { url: rx.url, events: ['email.opened'] }],
        PATCH: [{ events: ['email.sent'] }, { events: ['email.opened'] }],
      }
      for (const [m, p] of changes.filter(([m]) => m !== 'DELETE')) {
        const [first, other] = p === '/webhooks' ? bodies.POST! : m === 'PATCH' ? bodies.PATCH! : p.endsWith('/test') ? [{ type: 'email.sent' }, { type: 'email.opened' }] : [{}, { note: 'other' }]
        const headers = { 'Idempotency-Key': `reuse ${m} ${p}` }
        const done = await h.call(m, p, { headers, body: first })
        expect(done.status, JSON.stringify(done.body)).toBeLessThan(300)
        expectError(await h.call(m, p, { headers, body: other }), 'idempotency_payload_mismatch', 409)
        const again = await h.call(m, p, { headers, body: first })
        expect(again.headers.get('idempotent-replayed')).toBe('true')
        expect(again.body).toEqual(done.body)
      }
      expect((await h.call('GET', '/webhooks')).body.data).toHaveLength(2)
      const headers = { 'Idempotency-Key': 'delete once' }
      expect((await h.call('DELETE', `/webhooks/${e.id}`, { headers })).status).toBe(200)
      expectError(await h.call('DELETE', `/webhooks/${e.id}`, { headers, body: { note: 'other' } }), 'idempotency_payload_mismatch', 409)
    } finally {
      await h.close()
    }
  })

  test('a test that is still waiting for the endpoint holds its Idempotency-Key: the same call meanwhile is refused', async () => {
    const h = await harness({ MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' })
    reset()
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    rx.respond = async () => {
      await gate
      return new Response('ok')
    }
    try {
      const e = await hook(h)
      const headers = { 'Idempotency-Key': 'slow test' }
      const first = h.call('POST', `/webhooks/${e.id}/test`, { headers })
      while (!rx.received.length) await Bun.sleep(5)
      expectError(await h.call('POST', `/webhooks/${e.id}/test`, { headers }), 'idempotency_in_flight', 409)
      release()
      expect((await first).status).toBe(200)
      expect(rx.received).toHaveLength(1)
    } finally {
      release()
      reset()
      await h.close()
    }
  })
})
