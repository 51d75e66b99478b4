import { describe, expect, test } from 'bun:test'
import { suppressions } from '../src/db/tables'
import { iso } from '../src/lib/clock'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const add = async (h: Harness, email: string, reason: 'bounce' | 'complaint' | 'unsubscribe' | 'manual') => {
  const id = h.root.ids.uuid()
  await h.root.db.write((tx) => tx.insert(suppressions).values({ id, accountId: h.accountId, email, reason, sourceEmailId: null, detail: null, createdAt: iso(h.clock.now()) }))
  return { id, email }
}

describe('suppressions: scenarios', () => {
  scenarios([
    { name: 'suppresses an address by hand', method: 'POST', path: '/suppressions', body: { email: 'Someone@Example.com' }, status: 201, expect: { object: 'suppression', email: 'someone@example.com', reason: 'manual', origin: 'manual', clearable: true } },
    { name: 'refuses a malformed address', method: 'POST', path: '/suppressions', body: { email: 'not an address' }, status: 400, code: 'validation_error' },
    { name: 'gets one by address', method: 'GET', setup: (h) => add(h, 'b@example.com', 'bounce'), path: () => '/suppressions/b%40example.com', status: 200, expect: { email: 'b@example.com', reason: 'bounce', clearable: true } },
    { name: 'gets one by id', method: 'GET', setup: (h) => add(h, 'c@example.com', 'complaint'), path: (s) => `/suppressions/${s.id}`, status: 200, expect: { reason: 'complaint', clearable: false } },
    { name: 'answers 404 for an address not suppressed', method: 'GET', path: '/suppressions/nobody@example.com', status: 404, code: 'not_found' },
    { name: 'reads a literal % in the path as itself (found by the fuzz test)', method: 'GET', path: '/suppressions/%25xg%7C%25', status: 404, code: 'not_found' },
    { name: 'clears a hard bounce', method: 'DELETE', setup: (h) => add(h, 'fixed@example.com', 'bounce'), path: (s) => `/suppressions/${s.id}`, status: 200, expect: { object: 'suppression', deleted: true } },
    { name: 'refuses to clear a complaint', method: 'DELETE', setup: (h) => add(h, 'angry@example.com', 'complaint'), path: () => '/suppressions/angry@example.com', status: 409, code: 'contact_resubscribe_required' },
    { name: 'refuses to clear an unsubscribe', method: 'DELETE', setup: (h) => add(h, 'gone@example.com', 'unsubscribe'), path: () => '/suppressions/gone@example.com', status: 409, code: 'contact_resubscribe_required' },
    { name: 'answers 404 when clearing what is not there', method: 'DELETE', path: '/suppressions/nobody@example.com', status: 404, code: 'not_found' },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/suppressions', query: { cursor: 'abc.def' }, status: 400, code: 'invalid_cursor' },
  ])
})

test('the list filters by reason (and Resend’s origin), newest first, and keeps accounts apart', async () => {
  const h = await harness()
  await add(h, 'a@example.com', 'bounce')
  h.clock.advance(1000)
  await add(h, 'b@example.com', 'complaint')
  h.clock.advance(1000)
  await h.call('POST', '/suppressions', { body: { email: 'c@example.com' } })
  const all = await h.call('GET', '/suppressions')
  expect(all.body.data.map((s: { email: string }) => s.email)).toEqual(['c@example.com', 'b@example.com', 'a@example.com'])
  expect((await h.call('GET', '/suppressions', { query: { reason: 'bounce' } })).body.data.map((s: { email: string }) => s.email)).toEqual(['a@example.com'])
  expect((await h.call('GET', '/suppressions', { query: { origin: 'complaint' } })).body.data).toHaveLength(1)
  const other = await h.otherAccount()
  expect((await h.call('GET', '/suppressions', { key: other.token })).body.data).toHaveLength(0)
  expectError(await h.call('GET', '/suppressions/a@example.com', { key: other.token }), 'not_found', 404)
  // Suppressing an address twice keeps the first (stronger) reason.
  expect((await h.call('POST', '/suppressions', { body: { email: 'b@example.com' } })).body.reason).toBe('complaint')
  await h.close()
})
