// The rate windows fail closed: a table full of buckets still owed never forgets a
// debt to make room, so a flood of distinct callers cannot reset anyone's window;
// a caller it cannot track gets 503 rate_limiter_unavailable on writes (reads pass).
import { describe, expect, test } from 'bun:test'
import { topics } from '../src/db/tables'
import { TokenBuckets } from '../src/lib/token-bucket'
import { expectError, harness } from './support/harness'
import { trySend } from './support/inbound'

describe('TokenBuckets', () => {
  test('a full table refuses to track a new key instead of evicting a live bucket', () => {
    const b = new TokenBuckets(3)
    for (const k of ['a', 'b', 'c']) for (let i = 0; i < 10; i++) b.take(k, 10, 0)
    expect(b.take('a', 10, 0).allowed).toBe(false)

    // A flood of new keys: none is tracked, and the spenders keep their debt.
    for (let i = 0; i < 100; i++) expect(b.take(`flood${i}`, 10, 0)).toEqual({ allowed: false, limit: 10, remaining: 0, resetSeconds: 5, untracked: true })
    expect(b.size).toBe(3)
    expect(b.take('a', 10, 0).allowed).toBe(false)
    expect(b.take('b', 10, 0)).toMatchObject({ allowed: false, remaining: 0 })

    // A peek never takes a place in the table.
    expect(b.peek('someone', 10, 0)).toEqual({ allowed: true, limit: 10, remaining: 10, resetSeconds: 0 })
    expect(b.size).toBe(3)

    // Once the window has refilled, the buckets carry nothing and make room.
    const later = b.take('new', 10, 60_000)
    expect(later).toMatchObject({ allowed: true, remaining: 9 })
    expect(later.untracked).toBeUndefined()
    expect(b.size).toBe(1)
  })

  test('a bucket part-way refilled is still owed and keeps its place', () => {
    const b = new TokenBuckets(1)
    for (let i = 0; i < 10; i++) b.take('a', 10, 0)
    expect(b.take('other', 10, 30_000).untracked).toBe(true)
    expect(b.take('a', 10, 30_000)).toMatchObject({ allowed: true, remaining: 4 })
  })
})

describe('rate_limiter_unavailable through HTTP', () => {
  test('a full limiter refuses a new caller’s writes with 503 and Retry-After 5, changes nothing, lets reads pass, and recovers when windows refill', async () => {
    const h = await harness({ MAILROOM_RATE_LIMITER_ENTRIES: '3', MAILROOM_TRUST_PROXY: 'true' })
    try {
      // The owner's key takes one place; two public callers from other addresses fill the rest.
      expect((await h.call('POST', '/topics', { body: { name: 'Before', default_subscription: 'opt_in' } })).status).toBe(201)
      for (const ip of ['192.0.2.1', '192.0.2.2']) expect((await h.call('GET', '/health', { key: null, headers: { 'x-forwarded-for': ip } })).status).toBe(200)
      expect(h.root.buckets.size).toBe(3)

      const other = await h.otherAccount()
      const refused = await h.call('POST', '/topics', { key: other.token, body: { name: 'Unmetered', default_subscription: 'opt_in' } })
      expectError(refused, 'rate_limiter_unavailable', 503)
      expect(refused.headers.get('retry-after')).toBe('5')
      expect(refused.body.retry_after_seconds).toBe(5)
      expect((await h.root.db.q.select().from(topics)).map((t) => t.name)).toEqual(['Before'])

      // A send from a caller the limiter cannot track is a write like any other: nothing is accepted.
      const send = await h.call('POST', '/emails', { key: other.token, body: { from: 'a@example.com', to: 'b@example.com', subject: 'x', text: 'x' } })
      expectError(send, 'rate_limiter_unavailable', 503)

      // Public writes from a new address are refused too; reads pass unmetered.
      expectError(await h.call('POST', '/auth/sign-in', { key: null, headers: { 'x-forwarded-for': '192.0.2.9' }, body: { email: 'x@example.com', password: 'p' } }), 'rate_limiter_unavailable', 503)
      const read = await h.call('GET', '/topics', { key: other.token })
      expect(read.status).toBe(200)
      expect(read.body.data).toEqual([])

      // The callers already tracked keep their windows (and their debts).
      expect((await h.call('GET', '/topics')).status).toBe(200)
      expect(h.root.buckets.size).toBe(3)

      // A minute later every window has refilled: the table makes room and the write goes through.
      h.clock.advance(60_000)
      const after = await h.call('POST', '/topics', { key: other.token, body: { name: 'After', default_subscription: 'opt_in' } })
      expect(after.status, JSON.stringify(after.body)).toBe(201)
      expect(after.headers.get('ratelimit-remaining')).toBeTruthy()
    } finally {
      await h.close()
    }
  })
})

describe('the inbound SMTP listener with its window table full', () => {
  test('a client address it cannot track gets a 451 temporary refusal at MAIL FROM; the tracked one is still metered', async () => {
    const h = await harness({ MAILROOM_RATE_LIMITER_ENTRIES: '1', MAILROOM_SMTP_RATE_LIMIT: '1' })
    try {
      const smtp = await h.listen()
      const mail = { from: 'someone@sender.test', to: 'nobody@nowhere.test', subject: 'hi', text: 'hi' }
      // 127.0.0.1 takes the one place (its message is refused later, at RCPT, for the unknown recipient).
      const first = await trySend(smtp.port, mail)
      expect(first.ok ? 0 : first.error.responseCode).toBe(550)

      // Another loopback address finds the table full: a temporary refusal it can retry, not a free pass.
      const other = await trySend(smtp.port, mail, { localAddress: '127.0.0.2' })
      expect(other.ok).toBe(false)
      if (!other.ok) {
        expect(other.error.responseCode).toBe(451)
        expect(other.error.response).toContain('4.3.2')
      }

      // 127.0.0.1 keeps its window: its second message in the minute is over its limit of one.
      const again = await trySend(smtp.port, mail)
      expect(again.ok ? '' : again.error.response).toContain('4.7.1 Too many messages from')
    } finally {
      await h.close()
    }
  })
})
