import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { idempotencyKeys, apiKeys } from '../src/db/tables'
import { storedIdempotencyKey } from '../src/http/idempotency'
import { iso } from '../src/lib/clock'
import { TokenBuckets } from '../src/lib/token-bucket'
import { expectError, harness, silentLog } from './support/harness'

const created = (name: string) => ({ name })

describe('the error envelope and request ids', () => {
  test('an unknown route answers 404 not_found in the full envelope with a request id and rate headers', async () => {
    const h = await harness()
    const r = await h.call('GET', '/no/such/route')
    expectError(r, 'not_found', 404)
    expect(r.body.name).toBe('not_found')
    expect(r.body.retry_after_seconds).toBeUndefined()
    await h.close()
  })

  test('a wrong method answers 405 method_not_allowed with Allow listing the methods', async () => {
    const h = await harness()
    const r = await h.call('PUT', '/api-keys')
    expectError(r, 'method_not_allowed', 405)
    expect(r.headers.get('allow')).toBe('POST, GET')
    await h.close()
  })

  test('every reply has a distinct x-request-id; success replies carry rate headers too', async () => {
    const h = await harness()
    const a = await h.call('GET', '/api-keys')
    const b = await h.call('GET', '/health', { key: null })
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'))
    for (const r of [a, b]) for (const k of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) expect(r.headers.get(k)).toMatch(/^\d+$/)
    await h.close()
  })

  test('an unexpected failure is a 500 internal_server_error that leaks nothing and is logged with the request id', async () => {
    const h = await harness()
    h.app.get('/__boom', () => {
      throw new Error('secret internals at /etc/passwd')
    }, { auth: 'public' } as never)
    const r = await h.call('GET', '/__boom')
    expectError(r, 'internal_server_error', 500)
    expect(JSON.stringify(r.body)).not.toContain('secret')
    expect(silentLog.errors.some((l) => l.includes(r.headers.get('x-request-id')!) && l.includes('secret internals'))).toBe(true)
    await h.close()
  })

  test('a reply that fails its own schema is a 500 internal_server_error, not the caller’s validation_error', async () => {
    const h = await harness()
    const { t } = await import('elysia')
    h.app.get('/__bad-reply', () => ({ wrong: true }) as never, { auth: 'public', response: { 200: t.Object({ object: t.Literal('thing') }) } } as never)
    expectError(await h.call('GET', '/__bad-reply'), 'internal_server_error', 500)
    await h.close()
  })

  test('storage that cannot be reached answers 503 service_unavailable with Retry-After, not a 500', async () => {
    const h = await harness()
    h.root.db.close()
    const r = await h.call('GET', '/api-keys/' + h.root.ids.uuid(), { key: 'mr_whatever_whatever_whatever' })
    expectError(r, 'service_unavailable', 503)
    expect(r.headers.get('retry-after')).toBe('30')
    expect(r.body.retry_after_seconds).toBe(30)
    await h.close()
  })
})

describe('bodies', () => {
  test('a body that is not JSON answers 415 unsupported_media_type', async () => {
    const h = await harness()
    const r = await h.call('POST', '/api-keys', { raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expectError(r, 'unsupported_media_type', 415)
    expect(await h.call('GET', '/api-keys').then((x) => x.body.data.length)).toBe(1)
    await h.close()
  })

  test('a body over 1 MB answers 413 payload_too_large and nothing is written', async () => {
    const h = await harness()
    const r = await h.call('POST', '/api-keys', { raw: JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }), headers: { 'content-type': 'application/json' } })
    expectError(r, 'payload_too_large', 413)
    expect(await h.call('GET', '/api-keys').then((x) => x.body.data.length)).toBe(1)
    await h.close()
  })

  test('an empty body with Content-Type application/json is accepted where the route needs no body', async () => {
    const h = await harness()
    const k = await h.key({ name: 'to rotate' })
    const r = await h.call('POST', `/api-keys/${k.id}/rotate`, { raw: '', headers: { 'content-type': 'application/json' } })
    expect(r.status).toBe(200)
    expect(r.body.token).toStartWith('mr_')
    await h.close()
  })

  test('broken JSON and wrong fields answer 400 validation_error (not 422) with details naming the fields', async () => {
    const h = await harness()
    const broken = await h.call('POST', '/api-keys', { raw: '{"name":', headers: { 'content-type': 'application/json' } })
    expectError(broken, 'validation_error', 400)
    const wrong = await h.call('POST', '/api-keys', { body: { name: 5, permission: 'root' } })
    expectError(wrong, 'validation_error', 400)
    expect(wrong.body.details.map((d: { field: string }) => d.field)).toEqual(expect.arrayContaining(['name', 'permission']))
    await h.close()
  })

  test('a path id that is not a UUID is a validation error', async () => {
    const h = await harness()
    const r = await h.call('GET', '/api-keys/not-a-uuid')
    expectError(r, 'validation_error', 400)
    expect(r.body.details[0].field).toBe('path.id')
    await h.close()
  })
})

describe('rate windows', () => {
  test('a key spends from its own 60-second window and is refused with rate_limit_exceeded and Retry-After 60', async () => {
    const h = await harness({ MAILROOM_RATE_LIMIT: '3' })
    const seen = []
    for (let i = 0; i < 3; i++) seen.push(await h.call('GET', '/api-keys'))
    expect(seen.map((r) => r.headers.get('ratelimit-remaining'))).toEqual(['2', '1', '0'])
    expect(seen[0].headers.get('ratelimit-limit')).toBe('3')
    const refused = await h.call('GET', '/api-keys')
    expectError(refused, 'rate_limit_exceeded', 429)
    expect(refused.headers.get('retry-after')).toBe('60')
    expect(refused.body.retry_after_seconds).toBe(60)
    // Another key has its own window.
    const other = await h.key({ name: 'other' })
    expect((await h.call('GET', '/api-keys', { key: other.token })).status).toBe(200)
    // The window refills over 60 seconds.
    h.clock.advance(60_000)
    expect((await h.call('GET', '/api-keys')).status).toBe(200)
    await h.close()
  })

  test('a key with its own ceiling is refused with rate_ceiling_exceeded', async () => {
    const h = await harness()
    const k = await h.key({ name: 'slow agent', rate_ceiling_per_minute: 2 })
    await h.call('GET', '/api-keys', { key: k.token })
    const second = await h.call('GET', '/api-keys', { key: k.token })
    expect(second.headers.get('ratelimit-limit')).toBe('2')
    const refused = await h.call('GET', '/api-keys', { key: k.token })
    expectError(refused, 'rate_ceiling_exceeded', 429)
    expect(refused.body.name).toBe('rate_limit_exceeded')
    expect(refused.headers.get('retry-after')).toBe('60')
    await h.close()
  })

  test('public routes and failed credentials spend from the client address window', async () => {
    const h = await harness({ MAILROOM_PUBLIC_RATE_LIMIT: '2' })
    await h.call('GET', '/health', { key: null })
    await h.call('GET', '/api-keys', { key: 'mr_guessing_guessing_guessing_guessing' })
    expectError(await h.call('GET', '/health', { key: null }), 'rate_limit_exceeded', 429)
    await h.close()
  })

  test('buckets are dropped once idle long enough to be full, and bounded in number', () => {
    const b = new TokenBuckets(3)
    for (let i = 0; i < 10; i++) b.take(`k${i}`, 10, 0)
    expect(b.size).toBeLessThanOrEqual(3)
    b.sweep(60_000)
    expect(b.size).toBe(0)
  })
})

describe('idempotency', () => {
  const post = (h: Awaited<ReturnType<typeof harness>>, key: string | undefined, body: unknown, header = 'Idempotency-Key') =>
    h.call('POST', '/api-keys', { body, headers: key === undefined ? {} : { [header]: key } })

  test('same key and body replays the first reply and does the work once', async () => {
    const h = await harness()
    const a = await post(h, 'k-1', created('agent'))
    const b = await post(h, 'k-1', created('agent'))
    expect(a.status).toBe(201)
    expect(b.status).toBe(201)
    expect(b.body).toEqual(a.body)
    expect(b.headers.get('idempotent-replayed')).toBe('true')
    expect((await h.call('GET', '/api-keys')).body.data).toHaveLength(2)
    await h.close()
  })

  test('the legacy X-Idempotency-Key header means the same; Idempotency-Key wins when both are sent', async () => {
    const h = await harness()
    const a = await post(h, 'legacy', created('agent'), 'X-Idempotency-Key')
    const b = await post(h, 'legacy', created('agent'))
    expect(b.body.id).toBe(a.body.id)
    const both = await h.call('POST', '/api-keys', { body: created('agent'), headers: { 'Idempotency-Key': 'fresh', 'X-Idempotency-Key': 'legacy' } })
    expect(both.body.id).not.toBe(a.body.id)
    await h.close()
  })

  test('same key with another body answers 409 idempotency_payload_mismatch', async () => {
    const h = await harness()
    await post(h, 'k-2', created('one'))
    const r = await post(h, 'k-2', created('two'))
    expectError(r, 'idempotency_payload_mismatch', 409)
    expect(r.body.name).toBe('invalid_idempotent_request')
    await h.close()
  })

  test('a key held by a running request answers 409 idempotency_in_flight with a 5-second hint; a dead holder is taken over after its lease', async () => {
    const h = await harness()
    const { fingerprint } = await import('../src/http/idempotency')
    const now = h.clock.now()
    await h.root.db.write((tx) =>
      tx.insert(idempotencyKeys).values({
        accountId: h.accountId, key: storedIdempotencyKey(h.accountId, 'busy'), fingerprint: fingerprint('POST', '/api-keys', created('agent')), state: 'in_flight',
        leaseUntil: iso(now + 60_000), createdAt: iso(now), expiresAt: iso(now + 7 * 86_400_000),
      }),
    )
    const r = await post(h, 'busy', created('agent'))
    expectError(r, 'idempotency_in_flight', 409)
    expect(r.body.name).toBe('concurrent_idempotent_requests')
    expect(r.body.retry_after_seconds).toBe(5)
    expect(r.headers.get('retry-after')).toBe('5')
    h.clock.advance(10 * 60_000)
    expect((await post(h, 'busy', created('agent'))).status).toBe(201)
    await h.close()
  })

  test('concurrent requests with one key: exactly one does the work, the others replay it or are told it is in flight', async () => {
    const h = await harness()
    const replies = await Promise.all(Array.from({ length: 8 }, () => post(h, 'race', created('racer'))))
    const ok = replies.filter((r) => r.status === 201)
    expect(new Set(ok.map((r) => r.body.id)).size).toBe(1)
    for (const r of replies.filter((r) => r.status !== 201)) expect(r.body.code).toBe('idempotency_in_flight')
    const rows = await h.root.db.q.select().from(apiKeys).where(eq(apiKeys.name, 'racer'))
    expect(rows).toHaveLength(1)
    await h.close()
  })

  test('a key outside 1 to 256 characters answers 400 invalid_idempotency_key', async () => {
    const h = await harness()
    expectError(await post(h, 'x'.repeat(257), created('a')), 'invalid_idempotency_key', 400)
    expectError(await post(h, '', created('a')), 'invalid_idempotency_key', 400)
    await h.close()
  })

  test('a refused request frees its key, so a corrected retry with the same key works', async () => {
    const h = await harness()
    const first = await h.call('PATCH', `/limits/keys/${h.root.ids.uuid()}`, { body: { period: 'daily' }, headers: { 'Idempotency-Key': 'retry-me' } })
    expect(first.status).toBe(404)
    const k = await h.key({ name: 'x' })
    const again = await h.call('PATCH', `/limits/keys/${k.id}`, { body: { period: 'daily' }, headers: { 'Idempotency-Key': 'retry-me-2' } })
    expect(again.status).toBe(200)
    const rows = await h.root.db.q.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, storedIdempotencyKey(h.accountId, 'retry-me')))
    expect(rows).toHaveLength(0)
    await h.close()
  })

  test('the database holds neither the Idempotency-Key nor the reply in the clear, so a new key’s token is not kept readable for a week', async () => {
    const h = await harness()
    const first = await post(h, 'new-agent-key', created('agent'))
    expect(first.status).toBe(201)
    const [row] = await h.root.db.q.select().from(idempotencyKeys)
    expect(row.key).toBe(storedIdempotencyKey(h.accountId, 'new-agent-key'))
    expect(JSON.stringify(row)).not.toContain('new-agent-key')
    expect(JSON.stringify(row)).not.toContain(first.body.token)
    const replay = await post(h, 'new-agent-key', created('agent'))
    expect(replay.body).toEqual(first.body)
    // Another account using the same key text finds nothing of it.
    const other = await h.otherAccount()
    const theirs = await h.call('POST', '/api-keys', { key: other.token, body: created('agent'), headers: { 'Idempotency-Key': 'new-agent-key' } })
    expect(theirs.status).toBe(201)
    expect(theirs.body.token).not.toBe(first.body.token)
    await h.close()
  })

  test('keys are per account and remembered for 7 days', async () => {
    const h = await harness()
    const other = await h.otherAccount()
    const mine = await post(h, 'shared', created('mine'))
    const theirs = await h.call('POST', '/api-keys', { key: other.token, body: created('mine'), headers: { 'Idempotency-Key': 'shared' } })
    expect(theirs.status).toBe(201)
    expect(theirs.body.id).not.toBe(mine.body.id)
    h.clock.advance(6 * 86_400_000)
    expect((await post(h, 'shared', created('mine'))).body.id).toBe(mine.body.id)
    h.clock.advance(2 * 86_400_000)
    expect((await post(h, 'shared', created('mine'))).body.id).not.toBe(mine.body.id)
    await h.close()
  })

  test('the work and the stored reply commit together: a reply that cannot be stored undoes the work', async () => {
    const h = await harness()
    const before = (await h.root.db.q.select().from(apiKeys)).length
    // A completed row for another fingerprint cannot exist under the same key; simulate a failing completion by
    // dropping the table between claim and commit.
    const real = h.root.db.write.bind(h.root.db)
    let claims = 0
    h.root.db.write = (async (fn: never) => {
      const out = await real(fn)
      if (++claims === 1) await h.root.db.execute('ALTER TABLE idempotency_keys RENAME TO idempotency_keys_gone')
      return out
    }) as never
    const r = await post(h, 'atomic', created('half'))
    expect(r.status).toBeGreaterThanOrEqual(500)
    await h.root.db.execute('ALTER TABLE idempotency_keys_gone RENAME TO idempotency_keys')
    expect((await h.root.db.q.select().from(apiKeys)).length).toBe(before)
    const leftover = await h.root.db.q.select().from(idempotencyKeys).where(and(eq(idempotencyKeys.key, storedIdempotencyKey(h.accountId, 'atomic')), eq(idempotencyKeys.state, 'completed')))
    expect(leftover).toHaveLength(0)
    await h.close()
  })
})

describe('strict validation', () => {
  test('a query parameter out of range is named in details', async () => {
    const h = await harness()
    const r = await h.call('GET', '/api-keys', { query: { limit: 0 } })
    expectError(r, 'validation_error', 400)
    expect(r.body.details).toEqual([{ field: 'query.limit', message: expect.stringContaining('greater or equal to 1') }])
    await h.close()
  })

  test('unknown body fields and query parameters are refused by name, so a typo is never silently ignored', async () => {
    const h = await harness()
    const body = await h.call('POST', '/api-keys', { body: { name: 'x', permision: 'sending_access' } })
    expectError(body, 'validation_error', 400)
    expect(body.body.details[0].field).toBe('permision')
    const query = await h.call('GET', '/api-keys', { query: { limt: 5 } })
    expectError(query, 'validation_error', 400)
    expect(query.body.details[0].field).toBe('query.limt')
    await h.close()
  })

  test('a body of the wrong JSON type is refused, not read as an empty object', async () => {
    const h = await harness()
    const k = await h.key({ name: 'x' })
    expectError(await h.call('PATCH', `/api-keys/${k.id}`, { raw: '5', headers: { 'content-type': 'application/json' } }), 'validation_error', 400)
    await h.close()
  })
})
