import { describe, expect, test } from 'bun:test'
import { count } from 'drizzle-orm'
import { requestLogs } from '../src/db/tables'
import { iso, ManualClock } from '../src/lib/clock'
import { uuidV7 } from '../src/lib/ids'
import { setState } from '../src/http/state'
import { purgeRequestLogs, RequestLog, type LogEntry } from '../src/logs/buffer'
import { captureRequest } from '../src/logs/capture'
import { guardScenarios } from './support/guards'
import { asCookie, person } from './support/people'
import { expectError, harness, silentLog, type Harness, type Reply } from './support/harness'
import { scenarios } from './support/scenarios'

const missing = '01890000-0000-7000-8000-000000000000'
const DAY = 86_400_000

/** Lets the after-response hooks of the requests made so far run, as they do once a reply has left. */
const settle = () => new Promise((resolve) => setImmediate(resolve))
const requestId = (r: Reply) => r.headers.get('x-request-id')!
const logs = async (h: Harness, query: Record<string, string> = {}) => {
  await settle()
  const r = await h.call('GET', '/logs', { query })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.data as { id: string; endpoint: string; method: string; response_status: number; error_code: string | null; key_id: string | null }[]
}
const logOf = async (h: Harness, r: Reply) => {
  await settle()
  const got = await h.call('GET', `/logs/${requestId(r)}`)
  expect(got.status, JSON.stringify(got.body)).toBe(200)
  return got.body
}
/** The harness's first key: the oldest, last in the list. */
const ownerKeyId = async (h: Harness) => (await h.call('GET', '/api-keys')).body.data.at(-1).id as string

/** A created topic (POST 201) at 10:00, a missing one (GET 404) at 10:01, a second key's list (GET 200) at 10:02. */
async function traffic(h: Harness) {
  const created = await h.call('POST', '/topics', { body: { name: 'News', default_subscription: 'opt_in' }, headers: { 'user-agent': 'agent/1.0' } })
  h.clock.advance(60_000)
  const notFound = await h.call('GET', `/topics/${missing}`)
  h.clock.advance(60_000)
  const other = await h.key({ name: 'reader' })
  const listed = await h.call('GET', '/topics', { key: other.token, query: { limit: 5 } })
  await settle()
  return { created, notFound, listed, other }
}

describe('Logs: scenarios', () => {
  scenarios([
    // GET /logs
    {
      name: 'lists requests newest first: method, path, status, key, duration, error code',
      method: 'GET',
      path: '/logs',
      setup: traffic,
      status: 200,
      check: async (r, t, h) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((l: any) => [l.method, l.endpoint, l.response_status])).toEqual([
          ['GET', '/topics', 200],
          ['GET', `/topics/${missing}`, 404],
          ['POST', '/topics', 201],
        ])
        expect(r.body.data[1]).toEqual({
          object: 'log',
          id: requestId(t.notFound),
          created_at: '2026-03-02T10:01:00.000Z',
          endpoint: `/topics/${missing}`,
          method: 'GET',
          response_status: 404,
          user_agent: null,
          key_id: await ownerKeyId(h),
          error_code: 'not_found',
          duration_ms: expect.any(Number),
        })
        expect(r.body.data[0].key_id).toBe(t.other.id)
        expect(r.body.data[2]).toMatchObject({ user_agent: 'agent/1.0', error_code: null })
        expect(r.body.data[2]).not.toHaveProperty('request_body')
      },
    },
    { name: 'filters by method', method: 'GET', path: '/logs', setup: traffic, query: { method: 'POST' }, status: 200, check: (r) => expect(r.body.data.map((l: any) => l.method)).toEqual(['POST']) },
    { name: 'filters by exact path', method: 'GET', path: '/logs', setup: traffic, query: { path: '/topics' }, status: 200, check: (r) => expect(r.body.data.map((l: any) => l.method)).toEqual(['GET', 'POST']) },
    { name: 'filters by path prefix', method: 'GET', path: '/logs', setup: traffic, query: { path_prefix: '/topics/' }, status: 200, check: (r) => expect(r.body.data.map((l: any) => l.response_status)).toEqual([404]) },
    { name: 'filters by status', method: 'GET', path: '/logs', setup: traffic, query: { status: '201' }, status: 200, check: (r) => expect(r.body.data.map((l: any) => l.response_status)).toEqual([201]) },
    { name: 'filters by status class', method: 'GET', path: '/logs', setup: traffic, query: { status: '2xx' }, status: 200, check: (r) => expect(r.body.data.map((l: any) => l.response_status)).toEqual([200, 201]) },
    { name: 'filters by key', method: 'GET', setup: traffic, path: (t) => `/logs?key_id=${t.other.id}`, status: 200, check: (r) => expect(r.body.data.map((l: any) => [l.method, l.endpoint])).toEqual([['GET', '/topics']]) },
    { name: 'filters by error code', method: 'GET', path: '/logs', setup: traffic, query: { error_code: 'not_found' }, status: 200, check: (r, t) => expect(r.body.data.map((l: any) => l.id)).toEqual([requestId(t.notFound)]) },
    {
      name: 'filters by date range',
      method: 'GET',
      path: '/logs',
      setup: traffic,
      query: { since: '2026-03-02T10:00:30Z', until: '2026-03-02T10:01:30Z' },
      status: 200,
      check: async (r, _t, h) => {
        expect(r.body.data.map((l: any) => l.response_status)).toEqual([404])
        expect(await logs(h, { since: '2026-03-03' })).toEqual([])
      },
    },
    {
      name: 'pages with a cursor bound to the filters',
      method: 'GET',
      setup: async (h) => {
        await traffic(h)
        return (await h.call('GET', '/logs', { query: { limit: 2, path_prefix: '/topics' } })).body.next_cursor as string
      },
      path: (cursor) => `/logs?limit=2&path_prefix=/topics&cursor=${encodeURIComponent(cursor)}`,
      status: 200,
      check: (r) => expect(r.body.data.map((l: any) => l.method)).toEqual(['POST']),
    },
    {
      name: 'refuses a cursor issued under other filters',
      method: 'GET',
      setup: async (h) => {
        await traffic(h)
        return (await h.call('GET', '/logs', { query: { limit: 1 } })).body.next_cursor as string
      },
      path: (cursor) => `/logs?status=4xx&cursor=${encodeURIComponent(cursor)}`,
      status: 400,
      code: 'invalid_cursor',
    },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/logs', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a status that is neither a status nor a class', method: 'GET', path: '/logs', query: { status: '4x' }, status: 400, code: 'validation_error' },
    { name: 'refuses a status class beyond 5xx', method: 'GET', path: '/logs', query: { status: '6xx' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown method', method: 'GET', path: '/logs', query: { method: 'FETCH' }, status: 400, code: 'validation_error' },
    { name: 'refuses a path without its leading slash', method: 'GET', path: '/logs', query: { path_prefix: 'emails' }, status: 400, code: 'validation_error' },
    { name: 'refuses an error code that is no code', method: 'GET', path: '/logs', query: { error_code: 'Not Found' }, status: 400, code: 'validation_error' },
    { name: 'refuses an until that is no date', method: 'GET', path: '/logs', query: { until: '02/03/2026' }, status: 400, code: 'validation_error' },
    { name: 'refuses a since after the until', method: 'GET', path: '/logs', query: { since: '2026-03-02T12:00:00Z', until: '2026-03-02T11:00:00Z' }, status: 422, code: 'invalid_parameter' },
    {
      name: 'lists only the caller’s account',
      method: 'GET',
      path: '/logs',
      setup: async (h) => {
        const o = await h.otherAccount()
        await h.call('GET', '/topics', { key: o.token })
        await settle()
      },
      status: 200,
      expect: { data: [] },
    },
    ...guardScenarios('/logs', 'request_logs'),

    // GET /logs/{id}
    {
      name: 'a failed request with its error code, its reply, and Authorization and secrets redacted',
      method: 'GET',
      setup: async (h) => {
        const r = await h.call('POST', '/topics', {
          body: { name: 'x'.repeat(51), default_subscription: 'opt_in', password: 'hunter2', note: `my key is ${h.token}` },
          headers: { 'x-api-key': 'abc', cookie: 'session=1', 'idempotency-key': 'k-1' },
          query: { debug: '1', token: 'abc', tag: 'a' },
        })
        await settle()
        return r
      },
      path: (r) => `/logs/${requestId(r)}`,
      status: 200,
      check: async (got, failed, h) => {
        expect(got.body).toMatchObject({
          object: 'log',
          id: requestId(failed),
          request_id: requestId(failed),
          method: 'POST',
          endpoint: '/topics',
          query: 'debug=1&token=%5Bredacted%5D&tag=a',
          response_status: 400,
          error_code: 'validation_error',
          key_id: await ownerKeyId(h),
          request_headers: { authorization: '[redacted]', 'x-api-key': '[redacted]', cookie: '[redacted]', 'idempotency-key': 'k-1', 'content-type': 'application/json' },
          request_body: { name: 'x'.repeat(51), default_subscription: 'opt_in', password: '[redacted]', note: 'my key is [redacted]' },
          request_body_truncated: false,
          response_body: { ...failed.body },
          response_body_truncated: false,
        })
        expect(JSON.stringify(got.body)).not.toContain(h.token.slice(3))
      },
    },
    {
      name: 'a key’s create: the token in the reply is redacted',
      method: 'GET',
      setup: async (h) => {
        const r = await h.call('POST', '/api-keys', { body: { name: 'ci' } })
        await settle()
        return r
      },
      path: (r) => `/logs/${requestId(r)}`,
      status: 200,
      check: (got, made) => {
        expect(got.body).toMatchObject({ response_status: 201, error_code: null, request_body: { name: 'ci' }, response_body: { id: made.body.id, token: '[redacted]', token_prefix: made.body.token_prefix } })
        expect(JSON.stringify(got.body)).not.toContain(made.body.token.slice(3))
      },
    },
    { name: 'gets a log by its upper-case id', method: 'GET', setup: traffic, path: (t) => `/logs/${requestId(t.created).toUpperCase()}`, status: 200, expect: { method: 'POST', response_status: 201 } },
    { name: 'refuses a path id that is no UUID', method: 'GET', path: '/logs/req_1', status: 400, code: 'validation_error' },
    { name: 'answers 404 for a request that was never logged', method: 'GET', path: `/logs/${missing}`, status: 404, code: 'not_found' },
    {
      name: 'answers 404 for another account’s request',
      method: 'GET',
      setup: async (h) => {
        const o = await h.otherAccount()
        const r = await h.call('GET', '/topics', { key: o.token })
        await settle()
        return r
      },
      path: (r) => `/logs/${requestId(r)}`,
      status: 404,
      code: 'not_found',
    },
    ...guardScenarios(`/logs/${missing}`, 'request_logs'),
  ])
})

describe('Logs: what is recorded', () => {
  test('requests refused before their route ran are logged under the key they name', async () => {
    const h = await harness()
    try {
      const unknownRoute = await h.call('GET', '/no/such/route')
      const wrongMethod = await h.call('PUT', '/api-keys', { body: {} })
      const notJson = await h.call('POST', '/api-keys', { raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
      const brokenJson = await h.call('POST', '/topics', { raw: '{"name":', headers: { 'content-type': 'application/json' } })
      const found = await logs(h)
      expect(found.map((l) => [l.id, l.response_status, l.error_code])).toEqual([
        [requestId(brokenJson), 400, 'validation_error'],
        [requestId(notJson), 415, 'unsupported_media_type'],
        [requestId(wrongMethod), 405, 'method_not_allowed'],
        [requestId(unknownRoute), 404, 'not_found'],
      ])
      const key = await ownerKeyId(h)
      for (const l of found) expect(l.key_id).toBe(key)
      expect((await logOf(h, notJson)).request_body).toBeNull()
    } finally {
      await h.close()
    }
  })

  test('a console session’s request is logged under its account, with no key and its cookie redacted', async () => {
    const h = await harness()
    try {
      const p = await person(h)
      const r = await h.call('GET', '/topics', asCookie(p.cookie))
      expect(r.status).toBe(200)
      expect(await logOf(h, r)).toMatchObject({ key_id: null, response_status: 200, request_headers: { cookie: '[redacted]' } })
    } finally {
      await h.close()
    }
  })

  test('a session refused after it is known (two-factor still due) is logged under its account with its code', async () => {
    const h = await harness()
    try {
      const p = await person(h, { mfa: 'pending' })
      const r = await h.call('GET', '/topics', asCookie(p.cookie))
      expectError(r, 'mfa_required', 401)
      expect(await logOf(h, r)).toMatchObject({ key_id: null, response_status: 401, error_code: 'mfa_required' })
    } finally {
      await h.close()
    }
  })

  test('public pages and requests that name no account are not logged', async () => {
    const h = await harness()
    try {
      await h.call('GET', '/health', { key: null })
      await h.call('GET', '/health')
      await h.call('GET', '/openapi.json')
      await h.call('GET', '/unsubscribe/not-a-token')
      await h.call('GET', '/topics', { key: null })
      await h.call('GET', '/topics', { key: 'mr_thisKeyWasNeverIssuedByThisServer000000' })
      await h.call('GET', '/no/such/route', { key: null })
      expect(await logs(h)).toEqual([])
    } finally {
      await h.close()
    }
  })

  test('attachment contents and long strings are cut; a body over 8 KB is kept as its first 8 KB of text', async () => {
    const h = await harness()
    try {
      const content = Buffer.from('x'.repeat(6000)).toString('base64')
      const one = await h.call('POST', '/emails', { body: { from: 'a@nowhere.test', to: 'b@example.com', subject: 'Report', text: 'See attached', attachments: [{ filename: 'r.txt', content }] } })
      const l = await logOf(h, one)
      expect(l.request_body.attachments[0].filename).toBe('r.txt')
      expect(l.request_body.attachments[0].content).toBe(`${content.slice(0, 1000)}… (${content.length} characters)`)
      expect(l.request_body_truncated).toBe(false)
      const many = await h.call('POST', '/emails', { body: { from: 'a@nowhere.test', to: 'b@example.com', subject: 'Report', text: 'See attached', attachments: Array.from({ length: 12 }, (_, i) => ({ filename: `r${i}.txt`, content })) } })
      const big = await logOf(h, many)
      expect(big.request_body_truncated).toBe(true)
      expect(typeof big.request_body).toBe('string')
      expect(big.request_body).toHaveLength(8192)
      expect(big.request_body).toStartWith('{"from":"a@nowhere.test"')
      expect(big.response_body).toMatchObject({ code: many.body.code })
    } finally {
      await h.close()
    }
  })

  test('a reply replayed under an Idempotency-Key is logged as replayed', async () => {
    const h = await harness()
    try {
      const body = { name: 'Once', default_subscription: 'opt_in' }
      const first = await h.call('POST', '/topics', { body, headers: { 'idempotency-key': 'same' } })
      const again = await h.call('POST', '/topics', { body, headers: { 'idempotency-key': 'same' } })
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      const l = await logOf(h, again)
      expect(l).toMatchObject({ response_status: 201, error_code: null, response_body: { id: first.body.id, name: 'Once' } })
    } finally {
      await h.close()
    }
  })

  test('an entry that cannot be made is logged as a failure, never thrown after the reply', async () => {
    const h = await harness()
    try {
      const request = new Request('http://localhost/topics', { method: 'POST' })
      setState(request, { id: h.root.ids.uuid(), start: performance.now(), address: 'local', level: 'full', caller: { accountId: h.accountId, keyId: null } })
      const before = silentLog.errors.length
      expect(() => captureRequest(h.root, { request, path: '/topics', set: { status: 201 }, body: { n: 1n } })).not.toThrow()
      expect(silentLog.errors.slice(before)).toEqual([expect.stringContaining('request log entry failed')])
      expect(await logs(h)).toEqual([])
    } finally {
      await h.close()
    }
  })

  test('the scheduler writes what waits every second, without anyone reading', async () => {
    const h = await harness()
    try {
      const r = await h.call('GET', '/topics')
      await settle()
      await h.scheduler.runNow('flush-request-logs')
      expect((await h.root.db.q.select().from(requestLogs)).map((l) => l.id)).toEqual([requestId(r)])
      expect(h.scheduler.jobs().map((j) => j.name)).toEqual(expect.arrayContaining(['flush-request-logs', 'purge-request-logs']))
    } finally {
      await h.close()
    }
  })
})

describe('Logs: the buffer and retention', () => {
  /** An entry as the platform makes it: its id made by the clock at its time. */
  const entry = (h: Harness, at: number, path = '/topics'): LogEntry => ({
    id: uuidV7(new ManualClock(at)).uuid(),
    accountId: h.accountId,
    keyId: null,
    method: 'GET',
    path,
    query: null,
    status: 200,
    errorCode: null,
    durationMs: 1.5,
    userAgent: null,
    requestHeaders: {},
    requestBody: null,
    requestBodyTruncated: false,
    responseBody: null,
    responseBodyTruncated: false,
    createdAt: iso(at),
  })

  test('the retention job removes entries older than 30 days and keeps the rest', async () => {
    const h = await harness()
    try {
      const now = h.clock.now()
      const log = new RequestLog(h.root.db, silentLog)
      for (const age of [40, 31, 29, 1]) log.record(entry(h, now - age * DAY, `/age/${age}`))
      await log.flush()
      await h.scheduler.runNow('purge-request-logs')
      expect((await h.root.db.q.select().from(requestLogs)).map((l) => l.path).sort()).toEqual(['/age/1', '/age/29'])
      // Moving on a day takes the next one out.
      h.clock.advance(2 * DAY)
      expect(await purgeRequestLogs(h.root.db, h.clock.now())).toBe(1)
      expect((await h.root.db.q.select().from(requestLogs)).map((l) => l.path)).toEqual(['/age/1'])
    } finally {
      await h.close()
    }
  })

  test('retention deletes in batches until nothing old is left', async () => {
    const h = await harness()
    try {
      const log = new RequestLog(h.root.db, silentLog)
      for (let i = 0; i < 7; i++) log.record(entry(h, h.clock.now() - 60 * DAY))
      log.record(entry(h, h.clock.now()))
      await log.flush()
      expect(await purgeRequestLogs(h.root.db, h.clock.now(), 3)).toBe(7)
      expect(await h.root.db.q.select().from(requestLogs)).toHaveLength(1)
    } finally {
      await h.close()
    }
  })

  test('a large flush lets the event loop and other writers run between its steps, and writes every row', async () => {
    const h = await harness()
    try {
      const log = new RequestLog(h.root.db, silentLog, { flushAt: 100_000, maxPending: 100_000 })
      for (let i = 0; i < 2_000; i++) log.record(entry(h, h.clock.now(), `/r/${i}`))
      // Other work, one turn of the loop at a time, for as long as the flush runs.
      let turns = 0
      let flushed = false
      const spin = () => {
        if (flushed) return
        turns++
        setImmediate(spin)
      }
      setImmediate(spin)
      const flushing = log.flush()
      // A request's write meanwhile goes between two steps, not after the whole flush.
      await new Promise((r) => setImmediate(r))
      let logRowsBefore = -1
      const request = h.root.db.write(async (tx) => {
        logRowsBefore = (await tx.select({ n: count() }).from(requestLogs))[0].n
      })
      await Promise.all([flushing, request])
      flushed = true
      // 2,000 rows are 20 steps: the loop turned between them, not only once the rows were in.
      expect(turns).toBeGreaterThanOrEqual(19)
      expect(logRowsBefore).toBeGreaterThan(0)
      expect(logRowsBefore).toBeLessThan(2_000)
      expect(await h.root.db.q.select().from(requestLogs)).toHaveLength(2_000)
    } finally {
      await h.close()
    }
  })

  test('a flush the database refuses part-way keeps every row for the next one, with no error left unhandled', async () => {
    const h = await harness()
    try {
      const log = new RequestLog(h.root.db, silentLog, { flushAt: 10_000, maxPending: 10_000 })
      for (let i = 0; i < 250; i++) log.record(entry(h, h.clock.now(), `/k/${i}`))
      await h.root.db.execute("create trigger refuse_logs before insert on request_logs begin select raise(abort, 'refused'); end")
      await expect(log.flush()).rejects.toThrow('refused')
      await h.root.db.execute('drop trigger refuse_logs')
      await log.flush()
      expect((await h.root.db.q.select().from(requestLogs)).map((r) => r.path).sort()).toEqual(Array.from({ length: 250 }, (_, i) => `/k/${i}`).sort())
    } finally {
      await h.close()
    }
  })

  test('a full buffer writes itself; a buffer the database does not take drops its oldest entries', async () => {
    const h = await harness()
    try {
      const log = new RequestLog(h.root.db, silentLog, { flushAt: 3, maxPending: 5 })
      for (let i = 0; i < 3; i++) log.record(entry(h, h.clock.now()))
      await log.flush()
      expect(await h.root.db.q.select().from(requestLogs)).toHaveLength(3)
      await h.root.db.execute('drop table request_logs')
      const failing = new RequestLog(h.root.db, silentLog, { flushAt: 100, maxPending: 5 })
      for (let i = 0; i < 7; i++) failing.record(entry(h, h.clock.now(), `/n/${i}`))
      expect(failing.dropped).toBe(2)
      await expect(failing.flush()).rejects.toThrow()
      // The failed rows wait for the next flush.
      failing.record(entry(h, h.clock.now(), '/n/7'))
      expect(failing.dropped).toBe(3)
    } finally {
      await h.close()
    }
  })
})
