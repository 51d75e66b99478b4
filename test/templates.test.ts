import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { auditEntries, templates, templateVersions } from '../src/db/tables'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const missing = '01890000-0000-7000-8000-000000000000'
const SUMMARY_FIELDS = ['object', 'id', 'name', 'alias', 'status', 'current_version_id', 'published_at', 'has_unpublished_versions', 'created_at', 'updated_at']
const CONTENT_FIELDS = ['from', 'subject', 'reply_to', 'html', 'text', 'variables']

const ORDER = {
  name: 'Order confirmation',
  alias: 'order-confirmation',
  from: 'Shop <orders@acme.dev>',
  subject: 'Your order, {{{NAME}}}',
  html: '<p>Hi {{{NAME}}}, your total is {{ PRICE }}.</p>',
  variables: [
    { key: 'NAME', type: 'string' },
    { key: 'PRICE', type: 'number', fallback_value: 25 },
  ],
}

const make = async (h: Harness, body: Record<string, unknown> = {}, key?: string) => {
  const r = await h.call('POST', '/templates', { body: { ...ORDER, ...body }, key })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; name: string; alias: string | null; current_version_id: string | null }
}
const published = async (h: Harness, body: Record<string, unknown> = {}) => {
  const t = await make(h, body)
  const r = await h.call('POST', `/templates/${t.id}/publish`)
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body as { id: string; name: string; current_version_id: string }
}
const theirs = async (h: Harness) => {
  const o = await h.otherAccount()
  return { o, t: await make(h, {}, o.token) }
}
const stored = (h: Harness) => h.root.db.q.select().from(templates)
const versionsOf = (h: Harness, id: string) => h.root.db.q.select().from(templateVersions).where(eq(templateVersions.templateId, id)).orderBy(templateVersions.id)
const auditOf = (h: Harness, id: string) => h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resourceId, id)).orderBy(auditEntries.id)

/** Refusals for a missing, sending-only and revoked key on one route. */
const guarded = (method: string, path: string, body?: unknown) => [
  { name: 'refuses a sending-only key', method, path, as: 'sending' as const, body, status: 403, code: 'restricted_api_key' as const },
  { name: 'refuses no key', method, path, as: 'none' as const, body, status: 401, code: 'missing_api_key' as const },
  { name: 'refuses a revoked key', method, path, as: 'revoked' as const, body, status: 403, code: 'invalid_api_key' as const },
]

describe('Templates: scenarios', () => {
  scenarios([
    // POST /templates
    { name: 'creates a draft with Resend’s fields, and records it in the audit trail', method: 'POST', path: '/templates', body: { ...ORDER, reply_to: 'help@acme.dev', text: 'Hi {{{NAME}}}' }, status: 201,
      expect: {
        object: 'template', name: 'Order confirmation', alias: 'order-confirmation', status: 'draft', current_version_id: null, published_at: null, has_unpublished_versions: true,
        from: 'Shop <orders@acme.dev>', subject: 'Your order, {{{NAME}}}', reply_to: ['help@acme.dev'], html: ORDER.html, text: 'Hi {{{NAME}}}',
        variables: [{ key: 'NAME', type: 'string', fallback_value: null }, { key: 'PRICE', type: 'number', fallback_value: 25 }],
        created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:00:00.000Z',
      },
      check: async (r, _c, h) => {
        for (const f of [...SUMMARY_FIELDS, ...CONTENT_FIELDS]) expect(r.body).toHaveProperty(f)
        expect(r.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
        expect(await versionsOf(h, r.body.id)).toEqual([])
        const [entry] = await auditOf(h, r.body.id)
        expect(entry).toMatchObject({ resource: 'template', action: 'created', actorKind: 'key', before: null, after: r.body })
      } },
    { name: 'needs only a name and html; the rest defaults to null and no variables', method: 'POST', path: '/templates', body: { name: 'Plain', html: '<p>Hello</p>' }, status: 201,
      expect: { alias: null, from: null, subject: null, reply_to: null, text: null, variables: [] } },
    { name: 'takes a boolean variable and the `{{ KEY }}` form', method: 'POST', path: '/templates', body: { name: 'Flags', html: '<p>{{ VIP }}</p>', variables: [{ key: 'VIP', type: 'boolean', fallback_value: false }] }, status: 201,
      expect: { variables: [{ key: 'VIP', type: 'boolean', fallback_value: false }] } },
    { name: 'refuses a missing name', method: 'POST', path: '/templates', body: { html: '<p>x</p>' }, status: 400, code: 'validation_error' },
    { name: 'refuses a missing html', method: 'POST', path: '/templates', body: { name: 'x' }, status: 400, code: 'validation_error' },
    { name: 'refuses an empty html', method: 'POST', path: '/templates', body: { name: 'x', html: '' }, status: 400, code: 'validation_error' },
    { name: 'refuses a name over 200 characters', method: 'POST', path: '/templates', body: { name: 'n'.repeat(201), html: '<p>x</p>' }, status: 400, code: 'validation_error' },
    { name: 'refuses an alias with spaces', method: 'POST', path: '/templates', body: { name: 'x', alias: 'order confirmation', html: '<p>x</p>' }, status: 400, code: 'validation_error' },
    { name: 'refuses a UUID-shaped alias, which would read as an id', method: 'POST', path: '/templates', body: { name: 'x', alias: missing, html: '<p>x</p>' }, status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'alias' }] } },
    { name: 'refuses a variable key that is no identifier', method: 'POST', path: '/templates', body: { name: 'x', html: '<p>x</p>', variables: [{ key: '1st-name', type: 'string' }] }, status: 400, code: 'validation_error' },
    { name: 'refuses a variable type other than string, number or boolean', method: 'POST', path: '/templates', body: { name: 'x', html: '<p>x</p>', variables: [{ key: 'ITEMS', type: 'list' }] }, status: 400, code: 'validation_error' },
    { name: 'refuses more than 50 variables', method: 'POST', path: '/templates', body: { name: 'x', html: '<p>x</p>', variables: Array.from({ length: 51 }, (_, i) => ({ key: `V${i}`, type: 'string' })) }, status: 400, code: 'validation_error' },
    { name: 'refuses a reserved variable key', method: 'POST', path: '/templates', body: { name: 'x', html: '<p>{{{EMAIL}}}</p>', variables: [{ key: 'EMAIL', type: 'string' }] }, status: 422, code: 'invalid_parameter',
      expect: { message: expect.stringContaining('`EMAIL` is a reserved name'), details: [{ field: 'variables[0].key' }] } },
    { name: 'refuses a key declared twice', method: 'POST', path: '/templates', body: { name: 'x', html: '<p>x</p>', variables: [{ key: 'A', type: 'string' }, { key: 'A', type: 'number' }] }, status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'variables[1].key' }] } },
    { name: 'refuses a fallback of another type than declared', method: 'POST', path: '/templates', body: { name: 'x', html: '<p>x</p>', variables: [{ key: 'PRICE', type: 'number', fallback_value: 'cheap' }] }, status: 422, code: 'invalid_parameter',
      expect: { message: expect.stringContaining('must be a number'), details: [{ field: 'variables[0].fallback_value' }] } },
    { name: 'refuses a variable the html uses without declaring it', method: 'POST', path: '/templates', body: { name: 'x', html: '<p>{{{NAME}}} {{{CITY}}}</p>', variables: [{ key: 'NAME', type: 'string' }] }, status: 422, code: 'invalid_parameter',
      expect: { message: 'Variable `CITY` is used in the html but not declared in `variables`.', details: [{ field: 'html' }] },
      check: async (_r, _c, h) => expect(await stored(h)).toEqual([]) },
    { name: 'refuses an undeclared variable in the subject', method: 'POST', path: '/templates', body: { name: 'x', subject: 'For {{ WHO }}', html: '<p>x</p>' }, status: 422, code: 'invalid_parameter', expect: { details: [{ field: 'subject' }] } },
    { name: 'refuses an undeclared variable in the text, dotted names included', method: 'POST', path: '/templates', body: { name: 'x', html: '<p>x</p>', text: 'Hi {{{contact.first_name}}}' }, status: 422, code: 'invalid_parameter',
      expect: { message: expect.stringContaining('`contact.first_name`'), details: [{ field: 'text' }] } },
    { name: 'refuses a from that is no address', method: 'POST', path: '/templates', body: { ...ORDER, from: 'Shop at acme' }, status: 422, code: 'invalid_from_address' },
    { name: 'refuses a reply_to that is no address', method: 'POST', path: '/templates', body: { ...ORDER, reply_to: ['help@acme.dev', 'nobody'] }, status: 422, code: 'invalid_parameter', expect: { details: [{ field: 'reply_to[1]' }] } },
    { name: 'refuses a subject with a line break', method: 'POST', path: '/templates', body: { ...ORDER, subject: 'Hi\r\nBcc: x@y.z' }, status: 422, code: 'invalid_parameter', expect: { details: [{ field: 'subject' }] } },
    { name: 'refuses a name the account uses, whatever its case, and writes nothing', method: 'POST', path: '/templates', setup: (h) => make(h), body: { ...ORDER, name: 'ORDER CONFIRMATION', alias: 'other' }, status: 409, code: 'template_name_taken',
      check: async (_r, _c, h) => expect(await stored(h)).toHaveLength(1) },
    { name: 'refuses an alias the account uses, whatever its case', method: 'POST', path: '/templates', setup: (h) => make(h), body: { ...ORDER, name: 'Another', alias: 'Order-Confirmation' }, status: 409, code: 'template_alias_taken',
      check: async (_r, _c, h) => expect(await stored(h)).toHaveLength(1) },
    { name: 'lets another account use the same name and alias', method: 'POST', path: '/templates', setup: (h) => theirs(h), body: ORDER, status: 201 },
    { name: 'refuses a body that is not JSON', method: 'POST', path: '/templates', raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, code: 'unsupported_media_type' },
    ...guarded('POST', '/templates', ORDER),

    // GET /templates
    { name: 'lists templates newest first, without their content', method: 'GET', path: '/templates', setup: async (h) => {
      const a = await make(h)
      h.clock.advance(1000)
      const b = await published(h, { name: 'Welcome', alias: 'welcome' })
      return { a, b }
    }, status: 200,
      check: (r, c) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([c.b.id, c.a.id])
        expect(Object.keys(r.body.data[0]).sort()).toEqual([...SUMMARY_FIELDS].sort())
        expect(r.body.data[0]).toMatchObject({ status: 'published', current_version_id: c.b.current_version_id, has_unpublished_versions: false })
        expect(r.body.data[1]).toMatchObject({ status: 'draft', current_version_id: null, has_unpublished_versions: true })
      } },
    { name: 'lists nothing on a new account', method: 'GET', path: '/templates', status: 200, expect: { object: 'list', data: [], has_more: false, next_cursor: null } },
    { name: 'lists nothing of another account', method: 'GET', path: '/templates', setup: theirs, status: 200, expect: { data: [] } },
    { name: 'refuses a limit of 0', method: 'GET', path: '/templates', query: { limit: 0 }, status: 400, code: 'validation_error' },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/templates', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses an after that is no template id', method: 'GET', path: '/templates', query: { after: 'order-confirmation' }, status: 400, code: 'invalid_cursor' },
    ...guarded('GET', '/templates'),

    // GET /templates/{id}
    { name: 'gets one template with its draft', method: 'GET', setup: (h) => make(h), path: (t) => `/templates/${t.id}`, status: 200,
      check: (r, t) => {
        expect(r.body).toMatchObject({ object: 'template', id: t.id, name: 'Order confirmation', html: ORDER.html })
        for (const f of [...SUMMARY_FIELDS, ...CONTENT_FIELDS]) expect(r.body).toHaveProperty(f)
      } },
    { name: 'gets one template by its alias, whatever its case', method: 'GET', setup: (h) => make(h), path: '/templates/ORDER-confirmation', status: 200, check: (r, t) => expect(r.body.id).toBe(t.id) },
    { name: 'gets one template by its upper-case id', method: 'GET', setup: (h) => make(h), path: (t) => `/templates/${t.id.toUpperCase()}`, status: 200, expect: { name: 'Order confirmation' } },
    { name: 'answers 404 for an id that is no template', method: 'GET', path: `/templates/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for an alias that is no template', method: 'GET', path: '/templates/welcome', status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s template, by id and by alias', method: 'GET', setup: theirs, path: (c) => `/templates/${c.t.id}`, status: 404, code: 'not_found',
      check: async (_r, _c, h) => expectError(await h.call('GET', '/templates/order-confirmation'), 'not_found', 404) },
    { name: 'refuses a path longer than 100 characters', method: 'GET', path: `/templates/${'a'.repeat(101)}`, status: 400, code: 'validation_error' },
    ...guarded('GET', `/templates/${missing}`),

    // PATCH /templates/{id}
    { name: 'edits the draft of a published template; the published version stays as it was', method: 'PATCH', setup: async (h) => {
      const t = await published(h)
      h.clock.advance(60_000)
      return t
    }, path: (t) => `/templates/${t.id}`, body: { subject: 'Thanks, {{{NAME}}}', html: '<p>Thanks {{{NAME}}}!</p>', variables: [{ key: 'NAME', type: 'string', fallback_value: 'friend' }] }, status: 200,
      expect: { status: 'published', has_unpublished_versions: true, subject: 'Thanks, {{{NAME}}}', html: '<p>Thanks {{{NAME}}}!</p>', variables: [{ key: 'NAME', type: 'string', fallback_value: 'friend' }], updated_at: '2026-03-02T10:01:00.000Z' },
      check: async (r, t, h) => {
        expect(r.body.current_version_id).toBe(t.current_version_id)
        const [v] = await versionsOf(h, t.id)
        expect(v).toMatchObject({ id: t.current_version_id, html: ORDER.html, subject: ORDER.subject })
        expect((await h.call('GET', `/templates/${t.id}`)).body).toEqual(r.body)
        const [, updated] = await auditOf(h, t.id).then((es) => es.filter((e) => e.action !== 'published'))
        expect(updated).toMatchObject({ action: 'updated', before: { html: ORDER.html }, after: { html: '<p>Thanks {{{NAME}}}!</p>' } })
      } },
    { name: 'renames by alias without making the draft unpublished', method: 'PATCH', setup: (h) => published(h), path: '/templates/order-confirmation', body: { name: 'Receipt', alias: 'receipt' }, status: 200,
      expect: { name: 'Receipt', alias: 'receipt', has_unpublished_versions: false } },
    { name: 'removes the alias with null', method: 'PATCH', setup: (h) => make(h), path: (t) => `/templates/${t.id}`, body: { alias: null }, status: 200, expect: { alias: null },
      check: async (_r, _c, h) => expectError(await h.call('GET', '/templates/order-confirmation'), 'not_found', 404) },
    { name: 'allows a rename that only changes the case of its own name', method: 'PATCH', setup: (h) => make(h), path: (t) => `/templates/${t.id}`, body: { name: 'ORDER CONFIRMATION' }, status: 200, expect: { name: 'ORDER CONFIRMATION' } },
    { name: 'refuses a rename to a name the account uses', method: 'PATCH', setup: async (h) => (await make(h), make(h, { name: 'Welcome', alias: 'welcome' })), path: '/templates/welcome', body: { name: 'order confirmation' }, status: 409, code: 'template_name_taken' },
    { name: 'refuses an alias the account uses', method: 'PATCH', setup: async (h) => (await make(h), make(h, { name: 'Welcome', alias: 'welcome' })), path: '/templates/welcome', body: { alias: 'order-confirmation' }, status: 409, code: 'template_alias_taken',
      check: async (_r, _c, h) => expect((await h.call('GET', '/templates/welcome')).body.alias).toBe('welcome') },
    { name: 'refuses dropping a variable the content still uses', method: 'PATCH', setup: (h) => make(h), path: (t) => `/templates/${t.id}`, body: { variables: [{ key: 'NAME', type: 'string' }] }, status: 422, code: 'invalid_parameter',
      expect: { message: 'Variable `PRICE` is used in the html but not declared in `variables`.' },
      check: async (_r, t, h) => expect((await h.call('GET', `/templates/${t.id}`)).body.variables).toHaveLength(2) },
    { name: 'refuses a from that is no address', method: 'PATCH', setup: (h) => make(h), path: (t) => `/templates/${t.id}`, body: { from: '<>' }, status: 422, code: 'invalid_from_address' },
    { name: 'refuses an empty html', method: 'PATCH', setup: (h) => make(h), path: (t) => `/templates/${t.id}`, body: { html: '' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown field', method: 'PATCH', setup: (h) => make(h), path: (t) => `/templates/${t.id}`, body: { status: 'published' }, status: 400, code: 'validation_error' },
    { name: 'answers 404 when editing a missing template', method: 'PATCH', path: `/templates/${missing}`, body: { name: 'x' }, status: 404, code: 'not_found' },
    { name: 'answers 404 when editing another account’s template', method: 'PATCH', setup: theirs, path: (c) => `/templates/${c.t.id}`, body: { name: 'Hijacked' }, status: 404, code: 'not_found',
      check: async (_r, c, h) => expect((await h.call('GET', `/templates/${c.t.id}`, { key: c.o.token })).body.name).toBe('Order confirmation') },
    ...guarded('PATCH', `/templates/${missing}`, { name: 'x' }),

    // DELETE /templates/{id}
    { name: 'deletes a template by alias, with its published versions', method: 'DELETE', setup: async (h) => {
      const t = await published(h)
      await h.call('PATCH', `/templates/${t.id}`, { body: { html: '<p>v2 {{{NAME}}}</p>' } })
      await h.call('POST', `/templates/${t.id}/publish`)
      expect(await versionsOf(h, t.id)).toHaveLength(2)
      return { t, keep: await published(h, { name: 'Welcome', alias: 'welcome' }) }
    }, path: '/templates/order-confirmation', status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({ object: 'template', id: c.t.id, deleted: true })
        expect(await versionsOf(h, c.t.id)).toEqual([])
        expect((await stored(h)).map((t) => t.id)).toEqual([c.keep.id])
        expect(await versionsOf(h, c.keep.id)).toHaveLength(1)
        expectError(await h.call('GET', `/templates/${c.t.id}`), 'not_found', 404)
        expect((await auditOf(h, c.t.id)).at(-1)).toMatchObject({ action: 'deleted', before: { id: c.t.id, alias: 'order-confirmation' }, after: null })
      } },
    { name: 'answers 404 when deleting a missing template', method: 'DELETE', path: `/templates/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 when deleting another account’s template, and leaves it', method: 'DELETE', setup: theirs, path: (c) => `/templates/${c.t.id}`, status: 404, code: 'not_found',
      check: async (_r, c, h) => expect((await h.call('GET', `/templates/${c.t.id}`, { key: c.o.token })).status).toBe(200) },
    ...guarded('DELETE', `/templates/${missing}`),

    // POST /templates/{id}/publish
    { name: 'publishes the draft as a version that sends use', method: 'POST', setup: async (h) => {
      const t = await make(h)
      h.clock.advance(60_000)
      return t
    }, path: (t) => `/templates/${t.id}/publish`, status: 200,
      expect: { status: 'published', has_unpublished_versions: false, published_at: '2026-03-02T10:01:00.000Z', updated_at: '2026-03-02T10:01:00.000Z' },
      check: async (r, t, h) => {
        const versions = await versionsOf(h, t.id)
        expect(versions).toEqual([expect.objectContaining({ id: r.body.current_version_id, accountId: h.accountId, from: ORDER.from, subject: ORDER.subject, html: ORDER.html, text: null, replyTo: [], createdAt: '2026-03-02T10:01:00.000Z' })])
        expect(versions[0].variables).toEqual([{ key: 'NAME', type: 'string', fallback_value: null }, { key: 'PRICE', type: 'number', fallback_value: 25 }])
        expect((await auditOf(h, t.id)).at(-1)).toMatchObject({ action: 'published', before: { status: 'draft' }, after: { status: 'published', current_version_id: r.body.current_version_id } })
      } },
    { name: 'makes no new version when nothing changed since the last publish', method: 'POST', setup: (h) => published(h), path: '/templates/order-confirmation/publish', status: 200,
      check: async (r, t, h) => {
        expect(r.body.current_version_id).toBe(t.current_version_id)
        expect(await versionsOf(h, t.id)).toHaveLength(1)
      } },
    { name: 'makes a new version after an edit, keeping the old one', method: 'POST', setup: async (h) => {
      const t = await published(h)
      await h.call('PATCH', `/templates/${t.id}`, { body: { subject: 'Receipt' } })
      return t
    }, path: (t) => `/templates/${t.id}/publish`, status: 200, expect: { has_unpublished_versions: false },
      check: async (r, t, h) => {
        expect(r.body.current_version_id).not.toBe(t.current_version_id)
        expect((await versionsOf(h, t.id)).map((v) => [v.id, v.subject])).toEqual([[t.current_version_id, ORDER.subject], [r.body.current_version_id, 'Receipt']])
      } },
    { name: 'answers 404 when publishing a missing template', method: 'POST', path: `/templates/${missing}/publish`, status: 404, code: 'not_found' },
    { name: 'answers 404 when publishing another account’s template', method: 'POST', setup: theirs, path: (c) => `/templates/${c.t.id}/publish`, status: 404, code: 'not_found' },
    ...guarded('POST', `/templates/${missing}/publish`),

    // POST /templates/{id}/duplicate
    { name: 'copies the draft into a new unpublished template without the alias', method: 'POST', setup: async (h) => {
      const t = await published(h)
      await h.call('PATCH', `/templates/${t.id}`, { body: { subject: 'Edited' } })
      return t
    }, path: '/templates/order-confirmation/duplicate', status: 201,
      expect: { name: 'Order confirmation (copy)', alias: null, status: 'draft', current_version_id: null, published_at: null, has_unpublished_versions: true, subject: 'Edited', html: ORDER.html, from: ORDER.from },
      check: async (r, t, h) => {
        expect(r.body.id).not.toBe(t.id)
        expect(r.body.variables).toEqual((await h.call('GET', `/templates/${t.id}`)).body.variables)
        expect(await versionsOf(h, r.body.id)).toEqual([])
        expect((await auditOf(h, r.body.id))[0]).toMatchObject({ action: 'duplicated', before: null, after: { id: r.body.id, name: 'Order confirmation (copy)' } })
      } },
    { name: 'numbers further copies', method: 'POST', setup: async (h) => {
      const t = await make(h)
      await h.call('POST', `/templates/${t.id}/duplicate`)
      return t
    }, path: (t) => `/templates/${t.id}/duplicate`, status: 201, expect: { name: 'Order confirmation (copy 2)' } },
    { name: 'keeps the copy’s name within 200 characters', method: 'POST', setup: (h) => make(h, { name: 'n'.repeat(200) }), path: (t) => `/templates/${t.id}/duplicate`, status: 201,
      check: (r) => expect(r.body.name).toBe(`${'n'.repeat(193)} (copy)`) },
    { name: 'answers 404 when duplicating a missing template', method: 'POST', path: `/templates/${missing}/duplicate`, status: 404, code: 'not_found' },
    { name: 'answers 404 when duplicating another account’s template', method: 'POST', setup: theirs, path: (c) => `/templates/${c.t.id}/duplicate`, status: 404, code: 'not_found' },
    ...guarded('POST', `/templates/${missing}/duplicate`),

    // POST /templates/{id}/render
    { name: 'renders the draft: values escaped in the html, fallbacks, text derived from the html', method: 'POST', setup: (h) => make(h), path: '/templates/order-confirmation/render',
      body: { variables: { NAME: 'Ada <b>&</b> "Bob"' } }, status: 200,
      check: (r, t) => expect(r.body).toEqual({
        object: 'template_render', template_id: t.id, version: 'draft', version_id: null, from: ORDER.from, reply_to: null,
        subject: 'Your order, Ada <b>&</b> "Bob"',
        html: '<p>Hi Ada &lt;b&gt;&amp;&lt;/b&gt; &quot;Bob&quot;, your total is 25.</p>',
        text: 'Hi Ada <b>&</b> "Bob", your total is 25.',
      }) },
    { name: 'renders a template’s own text as written, without escaping', method: 'POST', setup: (h) => make(h, { text: 'Hi {{{NAME}}}, {{PRICE}} due' }), path: (t) => `/templates/${t.id}/render`,
      body: { variables: { NAME: '<Ada>', PRICE: 9.5 } }, status: 200, expect: { text: 'Hi <Ada>, 9.5 due', html: '<p>Hi &lt;Ada&gt;, your total is 9.5.</p>' } },
    { name: 'renders no text part when the template’s text is empty', method: 'POST', setup: (h) => make(h, { text: '' }), path: (t) => `/templates/${t.id}/render`, body: { variables: { NAME: 'Ada' } }, status: 200, expect: { text: null } },
    { name: 'takes a number for a string variable and booleans for boolean ones', method: 'POST', setup: (h) => make(h, { html: '<p>{{{NAME}}} {{{VIP}}}</p>', variables: [{ key: 'NAME', type: 'string' }, { key: 'VIP', type: 'boolean' }] }), path: (t) => `/templates/${t.id}/render`,
      body: { variables: { NAME: 42, VIP: true } }, status: 200, expect: { html: '<p>42 true</p>' } },
    { name: 'a variable named like an object property left out takes its fallback', method: 'POST', setup: (h) => make(h, { subject: 'x', html: '<p>{{{constructor}}}</p>', variables: [{ key: 'constructor', type: 'string', fallback_value: 'fallback' }] }),
      path: (t) => `/templates/${t.id}/render`, body: {}, status: 200, expect: { html: '<p>fallback</p>' } },
    { name: 'renders what sends use with version published, not the later draft', method: 'POST', setup: async (h) => {
      const t = await published(h)
      await h.call('PATCH', `/templates/${t.id}`, { body: { html: '<p>Draft {{{NAME}}}</p>' } })
      return t
    }, path: (t) => `/templates/${t.id}/render`, body: { variables: { NAME: 'Ada' }, version: 'published' }, status: 200,
      check: async (r, t, h) => {
        expect(r.body).toMatchObject({ version: 'published', version_id: t.current_version_id, html: '<p>Hi Ada, your total is 25.</p>' })
        expect((await h.call('POST', `/templates/${t.id}/render`, { body: { variables: { NAME: 'Ada' } } })).body.html).toBe('<p>Draft Ada</p>')
      } },
    { name: 'refuses version published while none is', method: 'POST', setup: (h) => make(h), path: (t) => `/templates/${t.id}/render`, body: { variables: { NAME: 'Ada' }, version: 'published' }, status: 422, code: 'template_not_published' },
    { name: 'names every required variable left out', method: 'POST', setup: (h) => make(h, { html: '<p>{{{NAME}}} {{{CITY}}} {{{PRICE}}}</p>', variables: [...ORDER.variables, { key: 'CITY', type: 'string' }] }), path: (t) => `/templates/${t.id}/render`,
      body: {}, status: 422, code: 'template_variable_missing',
      expect: { message: 'The template needs `NAME`, `CITY` in `variables`: they are declared without a fallback_value.', details: [{ field: 'variables' }] } },
    { name: 'refuses a variable the template does not declare', method: 'POST', setup: (h) => make(h), path: (t) => `/templates/${t.id}/render`, body: { variables: { NAME: 'Ada', NAEM: 'Ada' } }, status: 422, code: 'invalid_parameter',
      expect: { message: '`variables.NAEM` is no variable of the template; it declares `NAME`, `PRICE`.', details: [{ field: 'variables.NAEM' }] } },
    { name: 'refuses a value of the wrong type', method: 'POST', setup: (h) => make(h), path: (t) => `/templates/${t.id}/render`, body: { variables: { NAME: 'Ada', PRICE: 'ten' } }, status: 422, code: 'invalid_parameter',
      expect: { message: expect.stringContaining('`variables.PRICE` must be a number'), details: [{ field: 'variables.PRICE' }] } },
    { name: 'refuses a string for a boolean variable', method: 'POST', setup: (h) => make(h, { subject: 'News', html: '<p>{{{VIP}}}</p>', variables: [{ key: 'VIP', type: 'boolean' }] }), path: (t) => `/templates/${t.id}/render`, body: { variables: { VIP: 'yes' } }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a line break in a value the subject uses', method: 'POST', setup: (h) => make(h), path: (t) => `/templates/${t.id}/render`, body: { variables: { NAME: 'Ada\r\nBcc: x@y.z' } }, status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'variables.NAME' }] } },
    { name: 'refuses an unknown version', method: 'POST', setup: (h) => make(h), path: (t) => `/templates/${t.id}/render`, body: { version: 'latest' }, status: 400, code: 'validation_error' },
    { name: 'answers 404 when rendering a missing template', method: 'POST', path: '/templates/nothing-here/render', body: {}, status: 404, code: 'not_found' },
    ...guarded('POST', `/templates/${missing}/render`, {}),
  ])
})

describe('Templates: rules', () => {
  test('pages newest first across pages with next_cursor, and with after and before', async () => {
    const h = await harness()
    try {
      const made: string[] = []
      for (let i = 0; i < 5; i++) {
        made.push((await make(h, { name: `T${i}`, alias: `t${i}` })).id)
        h.clock.advance(1000)
      }
      const newestFirst = [...made].reverse()
      const seen: string[] = []
      let cursor: string | undefined
      do {
        const r = await h.call('GET', '/templates', { query: { limit: 2, cursor } })
        seen.push(...r.body.data.map((t: { id: string }) => t.id))
        cursor = r.body.next_cursor ?? undefined
      } while (cursor)
      expect(seen).toEqual(newestFirst)
      expect((await h.call('GET', '/templates', { query: { after: newestFirst[1], limit: 2 } })).body.data.map((t: { id: string }) => t.id)).toEqual(newestFirst.slice(2, 4))
      expect((await h.call('GET', '/templates', { query: { before: newestFirst[3], limit: 2 } })).body.data.map((t: { id: string }) => t.id)).toEqual(newestFirst.slice(1, 3))
    } finally {
      await h.close()
    }
  })

  test('an Idempotency-Key replays the create and makes no second template', async () => {
    const h = await harness()
    try {
      const create = () => h.call('POST', '/templates', { headers: { 'Idempotency-Key': 'tpl-1' }, body: ORDER })
      const first = await create()
      const second = await create()
      expect(second.body).toEqual(first.body)
      expect(second.headers.get('idempotent-replayed')).toBe('true')
      expect((await stored(h)).map((t) => t.id)).toEqual([first.body.id])
      expectError(await h.call('POST', '/templates', { headers: { 'Idempotency-Key': 'tpl-1' }, body: { ...ORDER, name: 'Other' } }), 'idempotency_payload_mismatch', 409)
    } finally {
      await h.close()
    }
  })

  test('a refused publish or duplicate of another account’s template changes nothing of it', async () => {
    const h = await harness()
    try {
      const { o, t } = await theirs(h)
      expectError(await h.call('POST', `/templates/${t.id}/publish`), 'not_found', 404)
      expectError(await h.call('POST', `/templates/${t.id}/duplicate`), 'not_found', 404)
      expect((await h.call('GET', `/templates/${t.id}`, { key: o.token })).body).toMatchObject({ status: 'draft' })
      expect(await stored(h)).toHaveLength(1)
    } finally {
      await h.close()
    }
  })
})
