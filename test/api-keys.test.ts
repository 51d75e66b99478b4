import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { pauseKey, resumeKey } from '../src/api-keys/service'
import { apiKeyUsage, apiKeys } from '../src/db/tables'
import { HOUR } from '../src/lib/clock'
import { expectError, harness } from './support/harness'
import { scenarios } from './support/scenarios'

const SEED_FIELDS = [
  'object', 'id', 'name', 'permission', 'domain_scope', 'scopes', 'expires_at', 'token_prefix', 'system', 'created_at', 'last_used_at',
  'request_count_30d', 'rotated_at', 'previous_key_expires_at', 'budget_per_period', 'period', 'rate_ceiling_per_minute', 'loop_guard',
]
const missing = '01890000-0000-7000-8000-000000000000'
const withKey = async (h: Awaited<ReturnType<typeof harness>>) => h.key({ name: 'subject' })

describe('API keys: scenarios', () => {
  scenarios([
    { name: 'creates a full_access key and shows its token once', method: 'POST', path: '/api-keys', body: { name: 'agent' }, status: 201, expect: { object: 'api_key', name: 'agent', permission: 'full_access', system: false, token: expect.stringMatching(/^mr_[A-Za-z0-9]{40}$/) } },
    { name: 'creates a sending-only key scoped to a domain with a budget', method: 'POST', path: '/api-keys', body: { name: 'sender', permission: 'sending_access', domain_scope: 'Example.COM', budget_per_period: 100, period: 'hourly', rate_ceiling_per_minute: 30, loop_guard: 'block', scopes: ['emails'] }, status: 201, expect: { permission: 'sending_access', domain_scope: 'example.com', budget_per_period: 100, period: 'hourly', rate_ceiling_per_minute: 30, loop_guard: 'block', scopes: ['emails'] } },
    { name: 'refuses a missing name', method: 'POST', path: '/api-keys', body: {}, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown permission', method: 'POST', path: '/api-keys', body: { name: 'x', permission: 'root' }, status: 400, code: 'validation_error' },
    { name: 'refuses an expiry in the past', method: 'POST', path: '/api-keys', body: { name: 'x', expires_at: '2020-01-01T00:00:00Z' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a sending-only key', method: 'POST', path: '/api-keys', as: 'sending', body: { name: 'x' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/api-keys', as: 'none', body: { name: 'x' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: '/api-keys', as: 'revoked', body: { name: 'x' }, status: 403, code: 'invalid_api_key' },
    { name: 'refuses a key never issued', method: 'GET', path: '/api-keys', as: 'unknown', status: 403, code: 'invalid_api_key' },
    { name: 'lists keys with every seed field and never a token', method: 'GET', path: '/api-keys', status: 200, check: (r) => {
      expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
      for (const k of r.body.data) {
        for (const f of SEED_FIELDS) expect(k).toHaveProperty(f)
        expect(k.token).toBeUndefined()
        expect(JSON.stringify(k)).not.toContain('hash')
      }
    } },
    { name: 'refuses a limit of 0', method: 'GET', path: '/api-keys', query: { limit: 0 }, status: 400, code: 'validation_error' },
    { name: 'refuses a limit of 501', method: 'GET', path: '/api-keys', query: { limit: 501 }, status: 400, code: 'validation_error' },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/api-keys', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses an after that is no key id', method: 'GET', path: '/api-keys', query: { after: 'nope' }, status: 400, code: 'invalid_cursor' },
    { name: 'gets one key without its token', method: 'GET', setup: withKey, path: (k) => `/api-keys/${k.id}`, status: 200, expect: { object: 'api_key', name: 'subject' }, check: (r) => expect(r.body.token).toBeUndefined() },
    { name: 'answers 404 for a key that does not exist', method: 'GET', path: `/api-keys/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s key', method: 'GET', setup: (h) => h.otherAccount(), path: (o) => `/api-keys/${o.keyId}`, status: 404, code: 'not_found' },
    { name: 'renames a key and changes its scope, token unchanged', method: 'PATCH', setup: withKey, path: (k) => `/api-keys/${k.id}`, body: { name: 'renamed', domain_scope: 'mail.example.org', scopes: ['emails', 'topics:read'] }, status: 200,
      expect: { name: 'renamed', domain_scope: 'mail.example.org', scopes: ['emails', 'topics:read'] },
      check: async (r, k, h) => {
        expect(r.body.token).toBeUndefined()
        // The same token still authenticates; the new scopes now govern it.
        expect((await h.call('GET', '/api-keys', { key: k.token })).body.code).toBe('restricted_api_key')
      } },
    { name: 'refuses a bad domain scope', method: 'PATCH', setup: withKey, path: (k) => `/api-keys/${k.id}`, body: { domain_scope: 'not a domain' }, status: 400, code: 'validation_error' },
    { name: 'answers 404 when updating a missing key', method: 'PATCH', path: `/api-keys/${missing}`, body: { name: 'x' }, status: 404, code: 'not_found' },
    { name: 'revokes a key', method: 'DELETE', setup: withKey, path: (k) => `/api-keys/${k.id}`, status: 200,
      check: async (r, k, h) => {
        expect(r.body).toEqual({ object: 'api_key', id: k.id, deleted: true })
        expectError(await h.call('GET', '/api-keys', { key: k.token }), 'invalid_api_key', 403)
        expectError(await h.call('GET', `/api-keys/${k.id}`), 'not_found', 404)
      } },
    { name: 'answers 404 when deleting a missing key', method: 'DELETE', path: `/api-keys/${missing}`, status: 404, code: 'not_found' },
    { name: 'rotates a key', method: 'POST', setup: withKey, path: (k) => `/api-keys/${k.id}/rotate`, body: { grace_hours: 1 }, status: 200,
      expect: { object: 'api_key', token: expect.stringMatching(/^mr_/), rotated_at: '2026-03-02T10:00:00.000Z', previous_key_expires_at: '2026-03-02T11:00:00.000Z' } },
    { name: 'refuses a grace of 2 hours', method: 'POST', setup: withKey, path: (k) => `/api-keys/${k.id}/rotate`, body: { grace_hours: 2 }, status: 400, code: 'validation_error' },
    { name: 'answers 404 when rotating a missing key', method: 'POST', path: `/api-keys/${missing}/rotate`, body: {}, status: 404, code: 'not_found' },
    { name: 'refuses to resume a key with an API key', method: 'POST', setup: withKey, path: (k) => `/api-keys/${k.id}/resume`, status: 403, code: 'human_action_required' },
    { name: 'reads a key’s limits', method: 'GET', setup: withKey, path: (k) => `/limits/keys/${k.id}`, status: 200,
      expect: { object: 'key_limits', budget_per_period: null, period: 'monthly', used: 0, remaining: null, period_started_at: '2026-03-01T00:00:00.000Z', resets_at: '2026-04-01T00:00:00.000Z', rate: { limit: 600 }, paused: false } },
    { name: 'answers 404 for the limits of a missing key', method: 'GET', path: `/limits/keys/${missing}`, status: 404, code: 'not_found' },
    { name: 'sets a key’s limits', method: 'PATCH', setup: withKey, path: (k) => `/limits/keys/${k.id}`, body: { budget_per_period: 50, period: 'daily', rate_ceiling_per_minute: 10, loop_guard: 'warn' }, status: 200,
      expect: { budget_per_period: 50, period: 'daily', remaining: 50, resets_at: '2026-03-03T00:00:00.000Z', rate_ceiling_per_minute: 10, rate: { limit: 10 }, loop_guard: 'warn' } },
    { name: 'refuses a negative budget', method: 'PATCH', setup: withKey, path: (k) => `/limits/keys/${k.id}`, body: { budget_per_period: -1 }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending key setting limits', method: 'PATCH', as: 'sending', setup: withKey, path: (k) => `/limits/keys/${k.id}`, body: { period: 'daily' }, status: 403, code: 'restricted_api_key' },
  ])
})

describe('API keys: rules', () => {
  test('the token is shown once: list, get and update never return it, and only its hash is stored', async () => {
    const h = await harness()
    const made = await h.call('POST', '/api-keys', { body: { name: 'once' } })
    const token: string = made.body.token
    for (const r of [await h.call('GET', '/api-keys'), await h.call('GET', `/api-keys/${made.body.id}`), await h.call('PATCH', `/api-keys/${made.body.id}`, { body: { name: 'x' } })]) {
      expect(JSON.stringify(r.body)).not.toContain(token)
    }
    const [row] = await h.root.db.q.select().from(apiKeys).where(eq(apiKeys.id, made.body.id))
    expect(JSON.stringify(row)).not.toContain(token)
    expect(made.body.token_prefix).toBe(token.slice(0, 11))
    await h.close()
  })

  test.each([0, 1, 24] as const)('after a rotation with grace %i hours the old token works for exactly the grace', async (grace) => {
    const h = await harness()
    const k = await h.key({ name: 'rotating' })
    const rotated = await h.call('POST', `/api-keys/${k.id}/rotate`, { body: { grace_hours: grace } })
    const fresh: string = rotated.body.token
    expect((await h.call('GET', '/api-keys', { key: fresh })).status).toBe(200)
    if (grace > 0) {
      h.clock.advance(grace * HOUR - 1)
      expect((await h.call('GET', '/api-keys', { key: k.token })).status).toBe(200)
      h.clock.advance(1)
    }
    const old = await h.call('GET', '/api-keys', { key: k.token })
    expectError(old, 'invalid_api_key', 403)
    expect(old.body.message).toContain(grace > 0 ? 'grace' : 'invalid')
    expect((await h.call('GET', '/api-keys', { key: fresh })).status).toBe(200)
    await h.close()
  })

  test('expires_at is enforced', async () => {
    const h = await harness()
    const made = await h.call('POST', '/api-keys', { body: { name: 'short-lived', expires_at: '2026-03-02T11:00:00Z' } })
    expect((await h.call('GET', '/api-keys', { key: made.body.token })).status).toBe(200)
    h.clock.set('2026-03-02T11:00:00Z')
    const r = await h.call('GET', '/api-keys', { key: made.body.token })
    expectError(r, 'invalid_api_key', 403)
    expect(r.body.message).toContain('expired')
    await h.close()
  })

  test('last_used_at and request_count_30d follow use without a write per request', async () => {
    const h = await harness()
    const k = await h.key({ name: 'busy' })
    for (let i = 0; i < 3; i++) await h.call('GET', '/api-keys', { key: k.token })
    expect(await h.root.db.q.select().from(apiKeyUsage)).toHaveLength(0)
    const before = (await h.call('GET', `/api-keys/${k.id}`)).body
    expect(before).toMatchObject({ request_count_30d: 3, last_used_at: '2026-03-02T10:00:00.000Z' })
    await h.scheduler.runNow('flush-key-usage')
    expect(await h.root.db.q.select().from(apiKeyUsage)).toHaveLength(2)
    const after = (await h.call('GET', `/api-keys/${k.id}`)).body
    expect(after).toMatchObject({ request_count_30d: 3, last_used_at: '2026-03-02T10:00:00.000Z' })
    h.clock.advance(31 * 24 * HOUR)
    expect((await h.call('GET', `/api-keys/${k.id}`)).body.request_count_30d).toBe(0)
    await h.close()
  })

  test('a revoked key stays revoked: it cannot be found, listed, rotated or restored', async () => {
    const h = await harness()
    const k = await h.key({ name: 'gone' })
    await h.call('DELETE', `/api-keys/${k.id}`)
    expect((await h.call('GET', '/api-keys')).body.data.map((x: { id: string }) => x.id)).not.toContain(k.id)
    expectError(await h.call('POST', `/api-keys/${k.id}/rotate`, { body: {} }), 'not_found', 404)
    expectError(await h.call('DELETE', `/api-keys/${k.id}`), 'not_found', 404)
    expectError(await h.call('GET', '/api-keys', { key: k.token }), 'invalid_api_key', 403)
    await h.close()
  })

  test('the kill switch pauses every call of the key until a person resumes it', async () => {
    const h = await harness()
    const k = await h.key({ name: 'runaway agent' })
    await pauseKey(h.root, k.id, 'bounce spike')
    for (const [m, p] of [['GET', '/api-keys'], ['GET', `/limits/keys/${k.id}`]] as const) {
      const r = await h.call(m, p, { key: k.token })
      expectError(r, 'kill_switch_active', 403)
      expect(r.body.message).toContain('bounce spike')
    }
    // The key cannot resume itself, nor can another key.
    expectError(await h.call('POST', `/api-keys/${k.id}/resume`, { key: k.token }), 'kill_switch_active', 403)
    expectError(await h.call('POST', `/api-keys/${k.id}/resume`), 'human_action_required', 403)
    expect((await h.call('GET', `/api-keys/${k.id}`)).body.paused_reason).toBe('bounce spike')
    // A person in the console can.
    const person = { accountId: h.accountId, kind: 'session' as const, keyId: null, permission: 'full_access' as const, domainScope: null }
    await resumeKey(h.root, person, k.id)
    expect((await h.call('GET', '/api-keys', { key: k.token })).status).toBe(200)
    await h.close()
  })

  test('scopes limit the groups a key may call; `group:read` allows only reads', async () => {
    const h = await harness()
    const k = await h.key({ name: 'scoped', scopes: ['limits:read'] })
    expect((await h.call('GET', `/limits/keys/${k.id}`, { key: k.token })).status).toBe(200)
    expectError(await h.call('PATCH', `/limits/keys/${k.id}`, { key: k.token, body: { period: 'daily' } }), 'restricted_api_key', 403)
    const r = await h.call('GET', '/api-keys', { key: k.token })
    expectError(r, 'restricted_api_key', 403)
    expect(r.body.message).toContain('scopes')
    await h.close()
  })

  test('a sending key reads its own limits but not another key’s', async () => {
    const h = await harness()
    const sender = await h.key({ name: 'sender', permission: 'sending_access' })
    const other = await h.key({ name: 'other' })
    expect((await h.call('GET', `/limits/keys/${sender.id}`, { key: sender.token })).status).toBe(200)
    expectError(await h.call('GET', `/limits/keys/${other.id}`, { key: sender.token }), 'restricted_api_key', 403)
    await h.close()
  })

  test('a key may lower its own budget and ceiling but never raise them', async () => {
    const h = await harness()
    const k = await h.key({ name: 'self', budget_per_period: 100, rate_ceiling_per_minute: 60 })
    expect((await h.call('PATCH', `/limits/keys/${k.id}`, { key: k.token, body: { budget_per_period: 50, rate_ceiling_per_minute: 30 } })).status).toBe(200)
    for (const body of [{ budget_per_period: 51 }, { budget_per_period: null }, { rate_ceiling_per_minute: 31 }, { rate_ceiling_per_minute: null }]) {
      const r = await h.call('PATCH', `/limits/keys/${k.id}`, { key: k.token, body })
      // Held for a person: GET /agent-actions lists it (test/agent-actions.test.ts approves one).
      expectError(r, 'approval_required', 403)
      expect(r.body.agent_action_id).toEqual(expect.any(String))
    }
    // Another full_access key may raise it.
    expect((await h.call('PATCH', `/limits/keys/${k.id}`, { body: { budget_per_period: 500 } })).body.budget_per_period).toBe(500)
    await h.close()
  })

  test('a key budget must be a whole number at or below the monthly inclusion', async () => {
    const h = await harness({ MAILROOM_MONTHLY_QUOTA: '1000' })
    const k = await h.key({ name: 'budgeted' })
    expectError(await h.call('PATCH', `/limits/keys/${k.id}`, { body: { budget_per_period: 1001 } }), 'key_budget_exceeds_plan', 422)
    expectError(await h.call('PATCH', `/limits/keys/${k.id}`, { body: { budget_per_period: null } }), 'key_budget_exceeds_plan', 422)
    expectError(await h.call('POST', '/api-keys', { body: { name: 'big', budget_per_period: 5000 } }), 'key_budget_exceeds_plan', 422)
    expect((await h.call('PATCH', `/limits/keys/${k.id}`, { body: { budget_per_period: 1000 } })).status).toBe(200)
    await h.close()
  })

  test('the list pages newest first with opaque cursors, after and before', async () => {
    const h = await harness()
    const ids = [(await h.call('GET', '/api-keys')).body.data[0].id]
    for (let i = 0; i < 4; i++) {
      h.clock.advance(1000)
      ids.push((await h.call('POST', '/api-keys', { body: { name: `k${i}` } })).body.id)
    }
    const newestFirst = [...ids].reverse()
    const p1 = await h.call('GET', '/api-keys', { query: { limit: 2 } })
    expect(p1.body.data.map((k: { id: string }) => k.id)).toEqual(newestFirst.slice(0, 2))
    expect(p1.body.has_more).toBe(true)
    const p2 = await h.call('GET', '/api-keys', { query: { limit: 2, cursor: p1.body.next_cursor } })
    expect(p2.body.data.map((k: { id: string }) => k.id)).toEqual(newestFirst.slice(2, 4))
    const p3 = await h.call('GET', '/api-keys', { query: { limit: 2, cursor: p2.body.next_cursor } })
    expect(p3.body).toMatchObject({ has_more: false, next_cursor: null })
    expect(p3.body.data.map((k: { id: string }) => k.id)).toEqual(newestFirst.slice(4))
    const after = await h.call('GET', '/api-keys', { query: { after: newestFirst[1] } })
    expect(after.body.data.map((k: { id: string }) => k.id)).toEqual(newestFirst.slice(2))
    const before = await h.call('GET', '/api-keys', { query: { before: newestFirst[3], limit: 2 } })
    expect(before.body.data.map((k: { id: string }) => k.id)).toEqual(newestFirst.slice(1, 3))
    // A cursor of one list is refused by another.
    const { makeCursor } = await import('../src/lib/paging')
    const foreign = makeCursor(h.root.secret, 'topics?', newestFirst[0], 'after')
    expectError(await h.call('GET', '/api-keys', { query: { cursor: foreign } }), 'invalid_cursor', 400)
    await h.close()
  })
})
