// POST /contacts/imports: CSV text updates existing contacts; every row is accounted for.
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { MAX_ROWS } from '../src/contact-imports/service'
import { auditEntries, contactImports, contacts } from '../src/db/tables'
import { makeContact, makeProperty, missing, optedOutContact } from './support/contact-fixtures'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const csv = (...lines: string[]) => lines.join('\n')

/** Ada and Grace exist; plan (string) and seats (number) are defined. */
async function people(h: Harness) {
  await makeProperty(h, 'plan', 'string')
  await makeProperty(h, 'seats', 'number')
  const ada = await makeContact(h, { email: 'ada@example.com', first_name: 'Ada', properties: { plan: 'free', seats: 1 } })
  const grace = await makeContact(h, { email: 'grace@example.com', first_name: 'Grace' })
  h.clock.advance(60_000)
  return { ada, grace }
}

const contactOf = async (h: Harness, email: string) => (await h.call('GET', `/contacts/${email}`)).body
const rejectedRows = (r: { body: { rejected: { row: number }[] } }) => r.body.rejected.map((x) => x.row)
/** Counts add up: total is the sum of the four outcomes, and every failure is listed. */
function addsUp(r: { body: { counts: Record<string, number>; rejected: unknown[] } }) {
  const c = r.body.counts
  expect(c.created).toBe(0)
  expect(c.created + c.updated + c.skipped + c.failed).toBe(c.total)
  expect(r.body.rejected).toHaveLength(c.failed)
}

describe('Contact imports: scenarios', () => {
  scenarios([
    // POST /contacts/imports
    { name: 'updates existing contacts, rejects a new address, and answers the result', method: 'POST', path: '/contacts/imports', setup: people,
      body: { csv: csv('email,first_name,last_name,unsubscribed,plan,seats,notes', 'ADA@example.com,Ada,Lovelace,false,pro,3,likes tea', 'grace@example.com,,Hopper,true,,,', 'new@example.com,New,Person,,,,') }, status: 200,
      check: async (r, x, h) => {
        expect(r.body).toEqual({
          object: 'contact_import',
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          status: 'completed',
          on_conflict: 'upsert',
          counts: { created: 0, updated: 2, skipped: 0, failed: 1, total: 3 },
          rejected: [{ row: 3, line: 4, code: 'not_found', email: 'new@example.com', message: expect.stringContaining('does not create contacts'), fix: expect.stringContaining('POST /contacts') }],
          ignored_columns: ['notes'],
          created_at: '2026-03-02T10:01:00.000Z',
          completed_at: '2026-03-02T10:01:00.000Z',
        })
        expect(await contactOf(h, 'ada@example.com')).toMatchObject({ id: x.ada.id, first_name: 'Ada', last_name: 'Lovelace', unsubscribed: false, properties: { plan: 'pro', seats: 3 }, updated_at: '2026-03-02T10:01:00.000Z' })
        // An empty cell leaves the stored value.
        expect(await contactOf(h, 'grace@example.com')).toMatchObject({ first_name: 'Grace', last_name: 'Hopper', unsubscribed: true })
        expectError(await h.call('GET', '/contacts/new@example.com'), 'not_found', 404)
        expect((await h.call('GET', `/contacts/imports/${r.body.id}`)).body).toEqual(r.body)
        expect((await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'updated'))).map((a) => a.resourceId).sort()).toEqual([x.ada.id, x.grace.id].sort())
      } },
    { name: 'maps columns with column_map; header field names match in any case', method: 'POST', path: '/contacts/imports', setup: people,
      body: { csv: csv('E-mail address,Given name,Last_Name', 'ada@example.com,Augusta,King'), column_map: { 'E-mail address': 'email', 'Given name': 'first_name' } }, status: 200,
      expect: { counts: { updated: 1, total: 1 }, ignored_columns: [] },
      check: async (_r, _x, h) => expect(await contactOf(h, 'ada@example.com')).toMatchObject({ first_name: 'Augusta', last_name: 'King' }) },
    { name: 'skip leaves existing contacts unchanged', method: 'POST', path: '/contacts/imports', setup: people, body: { csv: csv('email,first_name', 'ada@example.com,Changed', 'nobody@example.com,X'), on_conflict: 'skip' }, status: 200,
      expect: { on_conflict: 'skip', counts: { created: 0, updated: 0, skipped: 1, failed: 1, total: 2 } },
      check: async (r, _x, h) => {
        addsUp(r)
        expect((await contactOf(h, 'ada@example.com')).first_name).toBe('Ada')
      } },
    { name: 'a row that changes nothing counts as skipped', method: 'POST', path: '/contacts/imports', setup: people, body: { csv: csv('email,first_name,seats', 'ada@example.com,Ada,1') }, status: 200,
      expect: { counts: { updated: 0, skipped: 1, total: 1 } },
      check: async (_r, _x, h) => expect((await contactOf(h, 'ada@example.com')).updated_at).toBe('2026-03-02T10:00:00.000Z') },
    { name: 'reads quoted fields with commas, doubled quotes and line breaks; CRLF and a BOM', method: 'POST', path: '/contacts/imports', setup: people,
      body: { csv: '\uFEFFemail,first_name,last_name\r\n"ada@example.com","Ada, Countess","Love""lace"\r\n"grace@example.com","Grace\r\nBrewster",Hopper\r\n' }, status: 200,
      expect: { counts: { updated: 2, failed: 0, total: 2 } },
      check: async (_r, _x, h) => {
        expect(await contactOf(h, 'ada@example.com')).toMatchObject({ first_name: 'Ada, Countess', last_name: 'Love"lace' })
        expect((await contactOf(h, 'grace@example.com')).first_name).toBe('Grace\nBrewster')
      } },
    { name: 'reports a row with the wrong number of fields and applies the others', method: 'POST', path: '/contacts/imports', setup: people, body: { csv: csv('email,first_name', 'ada@example.com,Ada,extra', 'grace@example.com,G') }, status: 200,
      check: async (r, _x, h) => {
        addsUp(r)
        expect(r.body.counts).toMatchObject({ updated: 1, failed: 1 })
        expect(r.body.rejected).toEqual([{ row: 1, line: 2, code: 'validation_error', email: 'ada@example.com', message: 'The row has 3 fields; the header has 2 columns.', fix: expect.any(String) }])
        expect((await contactOf(h, 'ada@example.com')).first_name).toBe('Ada')
        expect((await contactOf(h, 'grace@example.com')).first_name).toBe('G')
      } },
    { name: 'reports a stray quote in a field without losing the rows after it', method: 'POST', path: '/contacts/imports', setup: people, body: { csv: csv('email,first_name', 'ada@example.com,Ad"a', 'grace@example.com,"Gr"ace', 'ada2@example.com,x', 'grace@example.com, "Grace" H') }, status: 200,
      check: async (r, _x, h) => {
        addsUp(r)
        expect(r.body.rejected.map((x: { row: number; code: string; email: string }) => [x.row, x.code, x.email])).toEqual([
          [1, 'validation_error', 'ada@example.com'],
          [2, 'validation_error', 'grace@example.com'],
          [3, 'not_found', 'ada2@example.com'],
          [4, 'validation_error', 'grace@example.com'],
        ])
        expect(r.body.rejected[0].message).toBe('The row cannot be read: a quote (") stands inside a field that does not start with one.')
        for (const i of [1, 3]) expect(r.body.rejected[i].message).toBe('The row cannot be read: a closing quote (") is followed by more text before the next comma.')
        expect((await contactOf(h, 'grace@example.com')).first_name).toBe('Grace')
      } },
    { name: 'a quote never closed: that row and every line after it are reported, none applied', method: 'POST', path: '/contacts/imports', setup: people, body: { csv: csv('email,first_name', 'grace@example.com,Grace2', 'ada@example.com,"Ada', 'grace@example.com,Changed', '', 'x@example.com,X') }, status: 200,
      check: async (r, _x, h) => {
        addsUp(r)
        expect(r.body.counts).toEqual({ created: 0, updated: 1, skipped: 0, failed: 3, total: 4 })
        expect(r.body.rejected.map((x: { row: number; line: number; email: string }) => [x.row, x.line, x.email])).toEqual([[2, 3, 'ada@example.com'], [3, 4, 'grace@example.com'], [4, 6, 'x@example.com']])
        expect(r.body.rejected[1].message).toContain('opens on line 3 and is never closed')
        expect((await contactOf(h, 'ada@example.com')).first_name).toBe('Ada')
        expect((await contactOf(h, 'grace@example.com')).first_name).toBe('Grace2')
      } },
    { name: 'reports bad and missing addresses', method: 'POST', path: '/contacts/imports', setup: people, body: { csv: csv('email,first_name', 'not-an-address,X', ',Y', 'ada@example.com,Z') }, status: 200,
      check: (r) => {
        addsUp(r)
        expect(r.body.rejected.map((x: { code: string; email: string }) => [x.code, x.email])).toEqual([['validation_error', 'not-an-address'], ['missing_required_field', '']])
      } },
    { name: 'an address twice in the file: none of its rows is applied', method: 'POST', path: '/contacts/imports', setup: people, body: { csv: csv('email,first_name', 'ada@example.com,One', 'grace@example.com,G', 'ADA@example.com,Two') }, status: 200,
      check: async (r, _x, h) => {
        addsUp(r)
        expect(rejectedRows(r)).toEqual([1, 3])
        expect(r.body.rejected[0]).toMatchObject({ code: 'validation_error', email: 'ada@example.com', message: expect.stringContaining('rows 1, 3') })
        expect((await contactOf(h, 'ada@example.com')).first_name).toBe('Ada')
      } },
    { name: 'reports values that do not fit: flag and property types', method: 'POST', path: '/contacts/imports', setup: people, body: { csv: csv('email,unsubscribed,seats', 'ada@example.com,maybe,two', 'grace@example.com,YES,2.5') }, status: 200,
      check: async (r, _x, h) => {
        addsUp(r)
        expect(r.body.rejected).toEqual([expect.objectContaining({ row: 1, code: 'validation_error', message: expect.stringMatching(/unsubscribed.*seats/s) })])
        expect(await contactOf(h, 'grace@example.com')).toMatchObject({ unsubscribed: true, properties: { seats: 2.5 } })
      } },
    { name: 'cannot subscribe again a contact who unsubscribed themselves', method: 'POST', path: '/contacts/imports', setup: (h) => optedOutContact(h), body: { csv: csv('email,unsubscribed', 'ada@example.com,false') }, status: 200,
      check: async (r, _x, h) => {
        expect(r.body.rejected).toEqual([expect.objectContaining({ code: 'contact_resubscribe_required', email: 'ada@example.com' })])
        expect((await contactOf(h, 'ada@example.com')).unsubscribed).toBe(true)
      } },
    { name: 'refuses a header without email and changes nothing', method: 'POST', path: '/contacts/imports', setup: people, body: { csv: csv('address,first_name', 'ada@example.com,X') }, status: 400, code: 'validation_error',
      check: async (r, _x, h) => {
        expect(r.body.message).toContain('must include `email`')
        expect(await h.root.db.q.select().from(contactImports)).toEqual([])
      } },
    { name: 'refuses a column_map naming a column the header lacks', method: 'POST', path: '/contacts/imports', body: { csv: csv('email', 'a@example.com'), column_map: { Name: 'first_name' } }, status: 400, code: 'validation_error',
      check: (r) => expect(r.body.details).toEqual([{ field: 'column_map.Name', message: expect.stringContaining('"Name"') }]) },
    { name: 'refuses two columns filling one field', method: 'POST', path: '/contacts/imports', body: { csv: csv('email,Mail', 'a@example.com,b@example.com'), column_map: { Mail: 'email' } }, status: 400, code: 'validation_error' },
    { name: 'refuses a column_map target that is no contact field', method: 'POST', path: '/contacts/imports', body: { csv: csv('email,Plan', 'a@example.com,pro'), column_map: { Plan: 'plan' } }, status: 400, code: 'validation_error' },
    { name: 'refuses a header naming a column twice', method: 'POST', path: '/contacts/imports', body: { csv: csv('email,name,name', 'a@example.com,x,y') }, status: 400, code: 'validation_error' },
    { name: 'refuses a header whose quote is never closed', method: 'POST', path: '/contacts/imports', body: { csv: csv('email,"first_name', 'a@example.com,x') }, status: 400, code: 'validation_error' },
    { name: 'refuses CSV text with no header row', method: 'POST', path: '/contacts/imports', body: { csv: '\n \n' }, status: 400, code: 'validation_error' },
    { name: 'refuses more than 1,000 data rows and changes nothing', method: 'POST', path: '/contacts/imports', setup: (h) => makeContact(h, { email: 'c0@example.com' }), body: { csv: ['email,first_name', ...Array.from({ length: MAX_ROWS + 1 }, (_, i) => `c${i}@example.com,N`)].join('\n') }, status: 400, code: 'validation_error',
      check: async (r, _x, h) => {
        expect(r.body.message).toContain('1001 data rows')
        expect((await contactOf(h, 'c0@example.com')).first_name).toBeNull()
      } },
    { name: 'refuses a missing csv', method: 'POST', path: '/contacts/imports', body: { on_conflict: 'upsert' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown on_conflict', method: 'POST', path: '/contacts/imports', body: { csv: 'email', on_conflict: 'replace' }, status: 400, code: 'validation_error' },
    { name: 'refuses a multipart upload: the body must be JSON', method: 'POST', path: '/contacts/imports', raw: '--x\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\nemail\r\n--x--\r\n', headers: { 'content-type': 'multipart/form-data; boundary=x' }, status: 415, code: 'unsupported_media_type' },
    { name: 'refuses a body over 1 MB', method: 'POST', path: '/contacts/imports', body: { csv: `email\n${'a'.repeat(1024 * 1024)}` }, status: 413, code: 'payload_too_large' },
    { name: 'refuses an Idempotency-Key over 256 characters', method: 'POST', path: '/contacts/imports', headers: { 'Idempotency-Key': 'k'.repeat(257) }, body: { csv: 'email' }, status: 400, code: 'invalid_idempotency_key' },
    { name: 'refuses a sending-only key', method: 'POST', path: '/contacts/imports', as: 'sending', body: { csv: 'email' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/contacts/imports', as: 'none', body: { csv: 'email' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: '/contacts/imports', as: 'revoked', body: { csv: 'email' }, status: 403, code: 'invalid_api_key' },

    // GET /contacts/imports
    { name: 'lists past imports newest first, without their rejected rows', method: 'GET', path: '/contacts/imports', setup: async (h) => {
      const a = await h.call('POST', '/contacts/imports', { body: { csv: csv('email', 'x@example.com') } })
      h.clock.advance(1000)
      const b = await h.call('POST', '/contacts/imports', { body: { csv: 'email', on_conflict: 'skip' } })
      return [a.body.id, b.body.id]
    }, status: 200,
      check: async (r, ids, h) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((i: { id: string }) => i.id)).toEqual([ids[1], ids[0]])
        expect(r.body.data[1]).toEqual({ object: 'contact_import', id: ids[0], status: 'completed', on_conflict: 'upsert', counts: { created: 0, updated: 0, skipped: 0, failed: 1, total: 1 }, created_at: '2026-03-02T10:00:00.000Z', completed_at: '2026-03-02T10:00:00.000Z' })
        expect((await h.call('GET', '/contacts/imports', { query: { status: 'completed', limit: 1 } })).body).toMatchObject({ data: [{ id: ids[1] }], has_more: true })
        expect((await h.call('GET', '/contacts/imports', { query: { status: 'queued' } })).body.data).toEqual([])
      } },
    { name: 'refuses an unknown status', method: 'GET', path: '/contacts/imports', query: { status: 'done' }, status: 400, code: 'validation_error' },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/contacts/imports', query: { cursor: 'a.b' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/contacts/imports', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/contacts/imports', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/contacts/imports', as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /contacts/imports/{id}
    { name: 'answers 404 for an unknown import', method: 'GET', path: `/contacts/imports/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s import', method: 'GET', setup: async (h) => (await h.call('POST', '/contacts/imports', { key: (await h.otherAccount()).token, body: { csv: 'email' } })).body, path: (i) => `/contacts/imports/${i.id}`, status: 404, code: 'not_found' },
    { name: 'refuses an id over 100 characters', method: 'GET', path: `/contacts/imports/${'x'.repeat(101)}`, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/contacts/imports/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/contacts/imports/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/contacts/imports/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },
  ])
})

describe('Contact imports: rules', () => {
  test('1,000 rows are read and every one is accounted for', async () => {
    const h = await harness()
    try {
      await h.call('POST', '/contacts/batch', { body: Array.from({ length: 100 }, (_, i) => ({ email: `c${i}@example.com` })) })
      // Rows 7, 257, 507 and 757 have a field too many.
      const rows = Array.from({ length: MAX_ROWS }, (_, i) => (i % 250 === 7 ? `c${i}@example.com,Name,extra` : `c${i}@example.com,Name ${i}`))
      const r = await h.call('POST', '/contacts/imports', { body: { csv: ['email,first_name', ...rows].join('\r\n') } })
      expect(r.status).toBe(200)
      addsUp(r)
      expect(r.body.counts.total).toBe(MAX_ROWS)
      expect(r.body.counts.updated).toBe(99)
      expect(r.body.rejected.filter((x: { code: string }) => x.code === 'validation_error').map((x: { row: number }) => x.row)).toEqual([8, 258, 508, 758])
      expect(r.body.rejected.filter((x: { code: string }) => x.code === 'not_found')).toHaveLength(MAX_ROWS - 100 - 3)
      expect((await contactOf(h, 'c99@example.com')).first_name).toBe('Name 99')
      expect((await contactOf(h, 'c7@example.com')).first_name).toBeNull()
    } finally {
      await h.close()
    }
  })

  test('an Idempotency-Key replays the import without applying it twice', async () => {
    const h = await harness()
    try {
      await makeContact(h)
      const body = { csv: csv('email,first_name', 'ada@example.com,Ada') }
      const first = await h.call('POST', '/contacts/imports', { headers: { 'Idempotency-Key': 'imp-1' }, body })
      const again = await h.call('POST', '/contacts/imports', { headers: { 'Idempotency-Key': 'imp-1' }, body })
      expect(again.body).toEqual(first.body)
      expect(await h.root.db.q.select().from(contactImports)).toHaveLength(1)
      expect(await h.root.db.q.select().from(contacts)).toHaveLength(1)
    } finally {
      await h.close()
    }
  })
})
