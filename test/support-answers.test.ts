import { describe, expect, test } from 'bun:test'
import { supportVotes } from '../src/db/tables'
import { DAY } from '../src/lib/clock'
import { ANSWERS, searchAnswers } from '../src/support/answers'
import { expectError, harness, type Harness } from './support/harness'
import { anotherSession, person } from './support/people'
import { scenarios } from './support/scenarios'

const vote = (h: Harness, helpful: boolean, o: { key?: string | null; headers?: Record<string, string>; slug?: string } = {}) =>
  h.call('POST', `/support/answers/${o.slug ?? 'limits'}/helpful`, { key: o.key, headers: o.headers, body: { helpful } })

describe('Support answers: scenarios', () => {
  scenarios([
    // GET /support/answers
    { name: 'lists every published answer in shipped order without a query', method: 'GET', path: '/support/answers', status: 200,
      check: (r) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((a: { slug: string }) => a.slug)).toEqual(['getting-started', 'dns-records', 'bounces', 'limits'])
        for (const a of r.body.data) expect(a).toMatchObject({ object: 'support_answer', title: expect.any(String), summary: expect.any(String), url: `http://mailroom.test/support/answers/${a.slug}`, score: null })
      } },
    { name: 'ranks the answer about the words asked first', method: 'GET', path: '/support/answers', query: { q: 'my DKIM record does not verify' }, status: 200,
      check: (r) => {
        expect(r.body.data[0].slug).toBe('dns-records')
        expect(typeof r.body.data[0].score).toBe('number')
        const scores = r.body.data.map((a: { score: number }) => a.score)
        expect(scores).toEqual([...scores].sort((a, b) => b - a))
      } },
    { name: 'finds bounces by another form of the word', method: 'GET', path: '/support/answers', query: { q: 'bounced complaints' }, status: 200, check: (r) => expect(r.body.data[0].slug).toBe('bounces') },
    { name: 'answers an empty list when no answer shares a word', method: 'GET', path: '/support/answers', query: { q: 'zebra xylophone' }, status: 200, expect: { object: 'list', data: [], has_more: false } },
    { name: 'cuts the list at limit and says more exist', method: 'GET', path: '/support/answers', query: { limit: 2 }, status: 200,
      check: (r) => expect({ n: r.body.data.length, more: r.body.has_more }).toEqual({ n: 2, more: true }) },
    { name: 'refuses a limit of 0', method: 'GET', path: '/support/answers', query: { limit: 0 }, status: 400, code: 'validation_error' },
    { name: 'refuses a query over 200 characters', method: 'GET', path: '/support/answers', query: { q: 'x'.repeat(201) }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown query parameter', method: 'GET', path: '/support/answers', query: { search: 'dns' }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/support/answers', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/support/answers', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/support/answers', as: 'revoked', status: 403, code: 'invalid_api_key' },
    { name: 'answers a console session', method: 'GET', path: '/support/answers', as: { role: 'viewer' }, status: 200 },

    // GET /support/answers/{slug}
    { name: 'gets one answer with its markdown and the counted votes', method: 'GET', path: '/support/answers/dns-records', setup: async (h) => {
      await vote(h, true, { slug: 'dns-records' })
      await vote(h, false, { slug: 'dns-records', key: (await h.key()).token })
      await vote(h, false, { slug: 'dns-records', key: (await h.key()).token })
    }, status: 200,
      expect: { object: 'support_answer', slug: 'dns-records', title: 'DNS records: what to publish for a sending domain', votes: { helpful: 1, not_helpful: 2 } },
      check: (r) => {
        expect(r.body.body).toContain('_domainkey')
        expect(r.body.body).toContain('MAILROOM_SPF_MECHANISM')
      } },
    { name: 'answers not_found for an unknown slug', method: 'GET', path: '/support/answers/how-to-fly', status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/support/answers/limits', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/support/answers/limits', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/support/answers/limits', as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /support/answers/{slug}/helpful
    { name: 'counts a first vote', method: 'POST', path: '/support/answers/limits/helpful', body: { helpful: true }, status: 200,
      check: async (r, _c, h) => {
        expect(r.body).toEqual({ ok: true, counted: true })
        expect(await h.root.db.q.select().from(supportVotes)).toMatchObject([{ slug: 'limits', day: '2026-03-02', helpful: true, accountId: h.accountId }])
      } },
    { name: 'does not count a second vote of the same key the same day, and keeps the first', method: 'POST', path: '/support/answers/limits/helpful', setup: (h) => vote(h, true), body: { helpful: false }, status: 200,
      check: async (r, _c, h) => {
        expect(r.body).toEqual({ ok: true, counted: false })
        expect((await h.call('GET', '/support/answers/limits')).body.votes).toEqual({ helpful: 1, not_helpful: 0 })
      } },
    { name: 'counts the same key again the next UTC day', method: 'POST', path: '/support/answers/limits/helpful', setup: async (h) => {
      await vote(h, true)
      h.clock.advance(DAY)
    }, body: { helpful: true }, status: 200, expect: { ok: true, counted: true } },
    { name: 'counts another answer the same day', method: 'POST', path: '/support/answers/bounces/helpful', setup: (h) => vote(h, true), body: { helpful: true }, status: 200, expect: { counted: true } },
    { name: 'counts another key as another voter', method: 'POST', path: '/support/answers/limits/helpful', setup: async (h) => {
      expect((await vote(h, true, { key: (await h.key({ name: 'second agent' })).token })).body.counted).toBe(true)
    }, body: { helpful: true }, status: 200, expect: { counted: true } },
    { name: 'answers not_found for an unknown slug and records nothing', method: 'POST', path: '/support/answers/nope/helpful', body: { helpful: true }, status: 404, code: 'not_found',
      check: async (_r, _c, h) => expect(await h.root.db.q.select().from(supportVotes)).toEqual([]) },
    { name: 'refuses a vote without helpful', method: 'POST', path: '/support/answers/limits/helpful', body: {}, status: 400, code: 'validation_error' },
    { name: 'refuses a helpful that is no boolean', method: 'POST', path: '/support/answers/limits/helpful', body: { helpful: 'yes' }, status: 400, code: 'validation_error' },
    { name: 'refuses a body that is not JSON', method: 'POST', path: '/support/answers/limits/helpful', headers: { 'content-type': 'text/plain' }, raw: 'helpful=true', status: 415, code: 'unsupported_media_type' },
    { name: 'refuses a body over 1 MB', method: 'POST', path: '/support/answers/limits/helpful', body: { helpful: true, pad: 'x'.repeat(1024 * 1024) }, status: 413, code: 'payload_too_large' },
    { name: 'refuses an Idempotency-Key reused with another body', method: 'POST', path: '/support/answers/limits/helpful', setup: async (h) => {
      expect((await h.call('POST', '/support/answers/limits/helpful', { headers: { 'Idempotency-Key': 'vote-1' }, body: { helpful: true } })).status).toBe(200)
    }, headers: { 'Idempotency-Key': 'vote-1' }, body: { helpful: false }, status: 409, code: 'idempotency_payload_mismatch' },
    { name: 'answers 429 past the key’s rate window', method: 'POST', path: '/support/answers/limits/helpful', env: { MAILROOM_RATE_LIMIT: '1' }, setup: async (h) => {
      await vote(h, true)
    }, body: { helpful: true }, status: 429, code: 'rate_limit_exceeded' },
    { name: 'refuses a sending-only key', method: 'POST', path: '/support/answers/limits/helpful', as: 'sending', body: { helpful: true }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/support/answers/limits/helpful', as: 'none', body: { helpful: true }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: '/support/answers/limits/helpful', as: 'revoked', body: { helpful: true }, status: 403, code: 'invalid_api_key' },
  ])
})

describe('Support answers: rules', () => {
  test('a person is one voter across sessions; the account’s key votes apart from them', async () => {
    const h = await harness()
    try {
      const p = await person(h, { role: 'developer' })
      const origin = 'http://mailroom.test'
      expect((await vote(h, true, { key: null, headers: { cookie: p.cookie, origin } })).body).toEqual({ ok: true, counted: true })
      const second = await anotherSession(h, p, true)
      expect((await vote(h, false, { key: null, headers: { cookie: second, origin } })).body).toEqual({ ok: true, counted: false })
      expect((await vote(h, true)).body).toEqual({ ok: true, counted: true })
      expect((await h.call('GET', '/support/answers/limits')).body.votes).toEqual({ helpful: 2, not_helpful: 0 })
    } finally {
      await h.close()
    }
  })

  test('two votes at once count once', async () => {
    const h = await harness()
    try {
      const replies = await Promise.all([vote(h, true), vote(h, true), vote(h, false)])
      expect(replies.map((r) => r.body.counted).filter(Boolean)).toHaveLength(1)
      expect(await h.root.db.q.select().from(supportVotes)).toHaveLength(1)
    } finally {
      await h.close()
    }
  })

  test('the shipped answers are real text, each with a title, a summary and a body', () => {
    expect(ANSWERS.map((a) => a.slug)).toEqual(['getting-started', 'dns-records', 'bounces', 'limits'])
    for (const a of ANSWERS) {
      expect(a.title.length).toBeGreaterThan(10)
      expect(a.summary.length).toBeGreaterThan(40)
      expect(a.body.length).toBeGreaterThan(800)
    }
    expect(searchAnswers('rate limit quota')[0].answer.slug).toBe('limits')
    expect(searchAnswers('first API key')[0].answer.slug).toBe('getting-started')
  })

  test('an unknown slug on the vote route says what is missing', async () => {
    const h = await harness()
    try {
      const r = await vote(h, true, { slug: 'missing-answer' })
      expectError(r, 'not_found', 404)
      expect(r.body.message).toContain('missing-answer')
    } finally {
      await h.close()
    }
  })
})
