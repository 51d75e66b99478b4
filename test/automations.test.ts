import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { Resend } from 'resend'
import { pauseKey } from '../src/api-keys/service'
import { automationRuns, automations, automationVersions } from '../src/db/tables'
import { automation, contact, defineEvent, publishedTemplate, runsOf, sendEvent } from './support/automations'
import { verifiedDomain } from './support/emails'
import { expectError, harness, type Harness } from './support/harness'
import { scenarios } from './support/scenarios'

const missing = '01890000-0000-7000-8000-000000000000'
const AUTOMATION_FIELDS = ['object', 'id', 'name', 'status', 'version', 'version_id', 'steps', 'connections', 'created_at', 'updated_at']

interface Base {
  event: string
  tpl: { id: string }
  ada: { id: string }
}

/** What most automations here name: a defined event, a published template, a contact. */
async function base(h: Harness): Promise<Base> {
  await verifiedDomain(h, 'acme.dev')
  await defineEvent(h.call, 'user.signed_up', { plan: 'string' })
  const tpl = await publishedTemplate(h.call)
  const ada = await contact(h.call, 'ada@customer.io', { first_name: 'Ada' })
  return { event: 'user.signed_up', tpl, ada }
}

const trigger = (event = 'user.signed_up', key = 'start') => ({ key, type: 'trigger', config: { event_name: event } })
const delay = (duration = '1 day', key = 'pause') => ({ key, type: 'delay', config: { duration } })
const send = (template: string, key = 'mail') => ({ key, type: 'send_email', config: { template: { id: template } } })

/** A welcome series in Resend's shape: trigger, a day, a send. */
const welcome = (b: Base, over: Record<string, unknown> = {}) => ({
  name: 'Welcome series',
  steps: [trigger(), delay(), send(b.tpl.id)],
  connections: [
    { from: 'start', to: 'pause', type: 'default' },
    { from: 'pause', to: 'mail' },
  ],
  ...over,
})

/** Steps after a trigger, for refusals of one step. */
const withStep = (step: Record<string, unknown>) => ({ name: 'One step', steps: [trigger(), step] })

/** An automation with a run waiting in its delay. */
async function withRun(h: Harness) {
  const b = await base(h)
  const a = await automation(h.call, welcome(b, { status: 'enabled' }))
  await sendEvent(h.call, b.event, 'ada@customer.io', { plan: 'pro' })
  await h.automations.runOnce()
  const [run] = await runsOf(h.call, a.id)
  return { ...b, a, run }
}

async function made(h: Harness, over: Record<string, unknown> = {}) {
  const b = await base(h)
  return { ...b, a: await automation(h.call, welcome(b, over)) }
}

/** A static segment an automation adds contacts to. */
async function segmentInUse(h: Harness) {
  await base(h)
  const seg = (await h.call('POST', '/segments', { body: { name: 'Onboarded' } })).body as { id: string }
  const a = await automation(h.call, withStep({ key: 'join', type: 'add_to_segment', config: { segment_id: seg.id } }))
  return { seg, a }
}

const othersAutomation = async (h: Harness) => {
  const o = await h.otherAccount()
  await defineEvent((m, p, opts = {}) => h.call(m, p, { ...opts, key: o.token }), 'theirs')
  const r = await h.call('POST', '/automations', { key: o.token, body: { name: 'Theirs', steps: [trigger('theirs')] } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return { o, a: r.body as { id: string } }
}

describe('Automations: scenarios', () => {
  scenarios([
    // POST /automations
    { name: 'creates an automation in Resend’s shape as version 1, disabled', method: 'POST', path: '/automations', setup: base, body: (b: Base) => welcome(b), status: 201,
      expect: { object: 'automation', name: 'Welcome series', status: 'disabled', version: 1, created_at: '2026-03-02T10:00:00.000Z' },
      check: async (r, b: Base, h) => {
        for (const f of AUTOMATION_FIELDS) expect(r.body).toHaveProperty(f)
        expect(r.body.steps).toEqual(welcome(b).steps)
        expect(r.body.connections).toEqual([{ from: 'start', to: 'pause', type: 'default' }, { from: 'pause', to: 'mail', type: 'default' }])
        expect(await h.root.db.q.select().from(automationVersions).where(eq(automationVersions.automationId, r.body.id))).toHaveLength(1)
      } },
    { name: 'runs steps given without connections in their order; a condition goes on when met', method: 'POST', path: '/automations', setup: base,
      body: (b: Base) => ({ name: 'Ordered', status: 'enabled', steps: [trigger(), { key: 'pro', type: 'condition', config: { field: 'event.plan', operator: 'eq', value: 'pro' } }, send(b.tpl.id)] }), status: 201,
      expect: { status: 'enabled', connections: [{ from: 'start', to: 'pro', type: 'default' }, { from: 'pro', to: 'mail', type: 'condition_met' }] } },
    { name: 'stores a template named by its alias under its id', method: 'POST', path: '/automations', setup: async (h) => {
      const b = await base(h)
      return { ...b, aliased: await publishedTemplate(h.call, { name: 'Aliased', alias: 'welcome-mail' }) }
    }, body: { name: 'By alias', steps: [trigger(), send('welcome-mail')] }, status: 201,
      check: (r, c) => expect(r.body.steps[1].config.template.id).toBe(c.aliased.id) },
    { name: 'takes every step type', method: 'POST', path: '/automations', setup: async (h) => {
      const b = await base(h)
      await defineEvent(h.call, 'payment.completed')
      await h.call('POST', '/contact-properties', { body: { key: 'plan', type: 'string' } })
      return b
    }, body: (b: Base) => ({
      name: 'Everything',
      steps: [
        trigger(),
        { key: 'paid', type: 'wait_for_event', config: { event_name: 'payment.completed', timeout: '2 days', filter_rule: { field: 'event.status', operator: 'exists' } } },
        { key: 'big', type: 'condition', config: { type: 'or', rules: [{ field: 'wait_events.payment.completed.amount', operator: 'gt', value: 10 }, { type: 'and', rules: [{ field: 'contact.email', operator: 'ends_with', value: '.io' }] }] } },
        { key: 'tag', type: 'contact_update', config: { first_name: { var: 'event.first' }, properties: { plan: 'pro' } } },
        send(b.tpl.id),
        { key: 'tell', type: 'webhook', config: { url: 'https://hooks.example.com/automation', headers: { 'x-token': 'abc' }, timeout: '20 seconds' } },
        { key: 'bye', type: 'contact_delete', config: {} },
      ],
      connections: [
        { from: 'start', to: 'paid' },
        { from: 'paid', to: 'big', type: 'event_received' },
        { from: 'paid', to: 'tell', type: 'timeout' },
        { from: 'big', to: 'tag', type: 'condition_met' },
        { from: 'big', to: 'bye', type: 'condition_not_met' },
        { from: 'tag', to: 'mail' },
      ],
    }), status: 201, check: (r) => expect(r.body.steps.map((s: { type: string }) => s.type)).toEqual(['trigger', 'wait_for_event', 'condition', 'contact_update', 'send_email', 'webhook', 'contact_delete']) },
    { name: 'refuses a missing name', method: 'POST', path: '/automations', setup: base, body: (b: Base) => ({ steps: welcome(b).steps }), status: 400, code: 'validation_error' },
    { name: 'refuses an empty step list', method: 'POST', path: '/automations', body: { name: 'x', steps: [] }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown step type', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [trigger(), { key: 'x', type: 'teleport', config: {} }] }, status: 400, code: 'validation_error',
      check: (r) => expect(r.body.details[0].field).toBe('steps.1') },
    { name: 'refuses a step whose config does not fit its type', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 'pause', type: 'delay', config: { for: '1 day' } }), status: 400, code: 'validation_error' },
    { name: 'refuses steps without a trigger', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [delay()] }, status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.message).toContain('exactly one `trigger`') },
    { name: 'refuses two triggers', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [trigger(), trigger('user.signed_up', 'again')] }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a repeated step key', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [trigger(), delay(), delay('2 days')] }, status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.details).toEqual([{ field: 'steps[2].key', message: expect.stringContaining('`pause`') }]) },
    { name: 'refuses a connection to a step that does not exist', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [trigger(), delay()], connections: [{ from: 'start', to: 'nowhere' }] }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a connection type the step cannot take', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [trigger(), delay()], connections: [{ from: 'start', to: 'pause', type: 'timeout' }] }, status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.message).toContain('cannot leave a `trigger` step as `timeout`') },
    { name: 'refuses a loop', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [trigger(), delay('1 day', 'a'), delay('1 day', 'b')], connections: [{ from: 'start', to: 'a' }, { from: 'a', to: 'b' }, { from: 'b', to: 'a' }] }, status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.message).toContain('a → b → a') },
    { name: 'refuses a step the trigger never reaches', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [trigger(), delay('1 day', 'a'), delay('1 day', 'b')], connections: [{ from: 'start', to: 'a' }] }, status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.message).toContain('`b` unreachable') },
    { name: 'refuses a duration it cannot read', method: 'POST', path: '/automations', setup: base, body: withStep(delay('soonish')), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a delay over 30 days', method: 'POST', path: '/automations', setup: base, body: withStep(delay('31 days')), status: 422, code: 'invalid_parameter', check: (r) => expect(r.body.message).toContain('at most 30 days') },
    { name: 'refuses a webhook timeout over 30 seconds', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 'w', type: 'webhook', config: { url: 'https://hooks.example.com/', timeout: '1 minute' } }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses an unknown rule operator', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 'c', type: 'condition', config: { field: 'event.plan', operator: 'like', value: 'x' } }), status: 400, code: 'validation_error' },
    { name: 'refuses a malformed nested rule', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 'c', type: 'condition', config: { type: 'and', rules: [{ field: 'plan', operator: 'eq', value: 'x' }] } }), status: 400, code: 'validation_error',
      check: (r) => expect(r.body.details[0].field).toBe('steps[1].config.rules[0].field') },
    { name: 'refuses a rule that needs a value and has none', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 'c', type: 'condition', config: { field: 'event.plan', operator: 'gt' } }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a reference to an event no step waits for', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 'c', type: 'condition', config: { field: 'wait_events.payment.completed.amount', operator: 'exists' } }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses an event that is not defined', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [trigger('never.defined')] }, status: 404, code: 'not_found',
      check: (r) => expect(r.body.message).toContain('POST /events') },
    { name: 'refuses an unknown system event', method: 'POST', path: '/automations', setup: base, body: { name: 'x', steps: [trigger('mailroom:contact.sneezed')] }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a template that does not exist', method: 'POST', path: '/automations', setup: base, body: withStep(send(missing)), status: 404, code: 'not_found' },
    { name: 'refuses a template that was never published', method: 'POST', path: '/automations', setup: async (h) => {
      await base(h)
      return (await h.call('POST', '/templates', { body: { name: 'Draft only', from: 'a@acme.dev', subject: 'x', html: '<p>x</p>' } })).body
    }, body: (d: { id: string }) => withStep(send(d.id)), status: 422, code: 'template_not_published' },
    { name: 'refuses a send with no sender: neither the step nor the template gives one', method: 'POST', path: '/automations', setup: async (h) => {
      await base(h)
      return publishedTemplate(h.call, { name: 'No sender', from: null })
    }, body: (t: { id: string }) => withStep(send(t.id)), status: 422, code: 'invalid_parameter', check: (r) => expect(r.body.details[0].field).toBe('steps[1].config.from') },
    { name: 'refuses a variable the template does not declare', method: 'POST', path: '/automations', setup: base,
      body: (b: Base) => withStep({ key: 'mail', type: 'send_email', config: { template: { id: b.tpl.id, variables: { shoe_size: 44 } } } }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a topic that does not exist', method: 'POST', path: '/automations', setup: base,
      body: (b: Base) => withStep({ key: 'mail', type: 'send_email', config: { template: { id: b.tpl.id }, topic_id: missing } }), status: 404, code: 'not_found' },
    { name: 'refuses a segment that does not exist', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 's', type: 'add_to_segment', config: { segment_id: missing } }), status: 404, code: 'not_found' },
    { name: 'refuses adding to a segment chosen by rules', method: 'POST', path: '/automations', setup: async (h) => {
      await base(h)
      return (await h.call('POST', '/segments', { body: { name: 'Unsubscribed', rules: [{ field: 'unsubscribed', value: true }] } })).body
    }, body: (seg: { id: string }) => withStep({ key: 's', type: 'add_to_segment', config: { segment_id: seg.id } }), status: 422, code: 'invalid_parameter',
      check: (r) => expect(r.body.message).toContain('chosen by rules') },
    { name: 'refuses a contact update that changes nothing', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 'u', type: 'contact_update', config: {} }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a property the account does not define', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 'u', type: 'contact_update', config: { properties: { shoe_size: 44 } } }), status: 400, code: 'validation_error' },
    { name: 'refuses a webhook URL that is not https', method: 'POST', path: '/automations', setup: base, body: withStep({ key: 'w', type: 'webhook', config: { url: 'http://hooks.example.com/' } }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses a sending-only key', method: 'POST', path: '/automations', as: 'sending', body: { name: 'x', steps: [trigger()] }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/automations', as: 'none', body: { name: 'x', steps: [trigger()] }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: '/automations', as: 'revoked', body: { name: 'x', steps: [trigger()] }, status: 403, code: 'invalid_api_key' },
    { name: 'refuses an Idempotency-Key over 256 characters', method: 'POST', path: '/automations', headers: { 'Idempotency-Key': 'k'.repeat(257) }, body: { name: 'x', steps: [trigger()] }, status: 400, code: 'invalid_idempotency_key' },

    // GET /automations
    { name: 'lists automations newest first, filtered by status', method: 'GET', path: '/automations', query: { status: 'enabled' }, setup: async (h) => {
      const b = await base(h)
      const on = await automation(h.call, welcome(b, { name: 'On', status: 'enabled' }))
      h.clock.advance(1000)
      await automation(h.call, welcome(b, { name: 'Off' }))
      return on
    }, status: 200, check: (r, on) => {
      expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
      expect(r.body.data).toEqual([{ object: 'automation', id: on.id, name: 'On', status: 'enabled', version: 1, trigger: 'user.signed_up', created_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T10:00:00.000Z' }])
    } },
    { name: 'lists nothing on a new account', method: 'GET', path: '/automations', status: 200, expect: { object: 'list', data: [], has_more: false, next_cursor: null } },
    { name: 'refuses an unknown status filter', method: 'GET', path: '/automations', query: { status: 'paused' }, status: 400, code: 'validation_error' },
    { name: 'refuses a limit of 0', method: 'GET', path: '/automations', query: { limit: 0 }, status: 400, code: 'validation_error' },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/automations', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/automations', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/automations', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/automations', as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /automations/{id}
    { name: 'gets one automation with its steps', method: 'GET', setup: made, path: (c) => `/automations/${c.a.id}`, status: 200, expect: { object: 'automation', name: 'Welcome series', version: 1 },
      check: (r, c) => expect(r.body.steps).toEqual(welcome(c).steps) },
    { name: 'refuses a path id that is no UUID', method: 'GET', path: '/automations/nope', status: 400, code: 'validation_error' },
    { name: 'answers 404 for an automation that does not exist', method: 'GET', path: `/automations/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s automation', method: 'GET', setup: othersAutomation, path: (c) => `/automations/${c.a.id}`, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/automations/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/automations/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/automations/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // PATCH /automations/{id}
    { name: 'a rename makes version 2 with the same steps', method: 'PATCH', setup: async (h) => {
      const c = await made(h)
      h.clock.advance(60_000)
      return c
    }, path: (c) => `/automations/${c.a.id}`, body: { name: 'Renamed' }, status: 200, expect: { name: 'Renamed', version: 2, updated_at: '2026-03-02T10:01:00.000Z' },
      check: async (r, c, h) => {
        expect(r.body.version_id).not.toBe(c.a.version_id)
        expect(r.body.steps).toEqual(welcome(c).steps)
        const versions = (await h.call('GET', `/automations/${c.a.id}/versions`)).body.data
        expect(versions.map((v: { version: number; name: string }) => [v.version, v.name])).toEqual([[2, 'Renamed'], [1, 'Welcome series']])
      } },
    { name: 'new steps make a new version and change the trigger', method: 'PATCH', setup: async (h) => {
      const c = await made(h)
      await defineEvent(h.call, 'trial.ended')
      return c
    }, path: (c) => `/automations/${c.a.id}`, body: (c: Base) => ({ steps: [trigger('trial.ended'), send(c.tpl.id)] }), status: 200, expect: { version: 2, connections: [{ from: 'start', to: 'mail', type: 'default' }] },
      check: async (_r, c, h) => expect((await h.call('GET', '/automations')).body.data[0].trigger).toBe('trial.ended') },
    { name: '`status: enabled` enables it without a new version', method: 'PATCH', setup: made, path: (c) => `/automations/${c.a.id}`, body: { status: 'enabled' }, status: 200, expect: { status: 'enabled', version: 1 } },
    { name: '`status: disabled` ends the runs in progress', method: 'PATCH', setup: withRun, path: (c) => `/automations/${c.a.id}`, body: { status: 'disabled' }, status: 200, expect: { status: 'disabled' },
      check: async (_r, c, h) => expect((await runsOf(h.call, c.a.id))[0].status).toBe('cancelled') },
    { name: 'refuses a body that changes nothing', method: 'PATCH', setup: made, path: (c) => `/automations/${c.a.id}`, body: {}, status: 422, code: 'missing_required_field' },
    { name: 'refuses connections without steps', method: 'PATCH', setup: made, path: (c) => `/automations/${c.a.id}`, body: { connections: [{ from: 'start', to: 'mail' }] }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a graph with a problem and keeps the version it had', method: 'PATCH', setup: made, path: (c) => `/automations/${c.a.id}`, body: { steps: [delay()] }, status: 422, code: 'invalid_parameter',
      check: async (_r, c, h) => expect((await h.call('GET', `/automations/${c.a.id}`)).body.version).toBe(1) },
    { name: 'refuses a template that was never published', method: 'PATCH', setup: async (h) => {
      const c = await made(h)
      return { ...c, draft: (await h.call('POST', '/templates', { body: { name: 'Draft', from: 'a@acme.dev', subject: 'x', html: '<p>x</p>' } })).body }
    }, path: (c) => `/automations/${c.a.id}`, body: (c: { draft: { id: string } }) => ({ steps: [trigger(), send(c.draft.id)] }), status: 422, code: 'template_not_published' },
    { name: 'refuses an empty name', method: 'PATCH', setup: made, path: (c) => `/automations/${c.a.id}`, body: { name: '' }, status: 400, code: 'validation_error' },
    { name: 'answers 404 when updating a missing automation', method: 'PATCH', path: `/automations/${missing}`, body: { name: 'x' }, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'PATCH', path: `/automations/${missing}`, as: 'sending', body: { name: 'x' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'PATCH', path: `/automations/${missing}`, as: 'none', body: { name: 'x' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'PATCH', path: `/automations/${missing}`, as: 'revoked', body: { name: 'x' }, status: 403, code: 'invalid_api_key' },

    // DELETE /automations/{id}
    { name: 'deletes an automation with its versions and runs', method: 'DELETE', setup: withRun, path: (c) => `/automations/${c.a.id}`, status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({ object: 'automation', id: c.a.id, deleted: true })
        expect(await h.root.db.q.select().from(automations).where(eq(automations.id, c.a.id))).toEqual([])
        expect(await h.root.db.q.select().from(automationVersions).where(eq(automationVersions.automationId, c.a.id))).toEqual([])
        expect(await h.root.db.q.select().from(automationRuns).where(eq(automationRuns.automationId, c.a.id))).toEqual([])
        expectError(await h.call('GET', `/automations/${c.a.id}`), 'not_found', 404)
      } },
    { name: 'refuses a path id that is no UUID', method: 'DELETE', path: '/automations/abc', status: 400, code: 'validation_error' },
    { name: 'answers 404 when deleting a missing automation', method: 'DELETE', path: `/automations/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s automation, and leaves it', method: 'DELETE', setup: othersAutomation, path: (c) => `/automations/${c.a.id}`, status: 404, code: 'not_found',
      check: async (_r, c, h) => expect((await h.call('GET', `/automations/${c.a.id}`, { key: c.o.token })).status).toBe(200) },
    { name: 'refuses a sending-only key', method: 'DELETE', path: `/automations/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'DELETE', path: `/automations/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'DELETE', path: `/automations/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /automations/{id}/enable
    { name: 'enables an automation; enabling again changes nothing', method: 'POST', setup: made, path: (c) => `/automations/${c.a.id}/enable`, status: 200, expect: { status: 'enabled', version: 1 },
      check: async (_r, c, h) => expect((await h.call('POST', `/automations/${c.a.id}/enable`)).body.status).toBe('enabled') },
    { name: 'refuses to enable when its event was deleted while it was off', method: 'POST', setup: async (h) => {
      const c = await made(h)
      expect((await h.call('DELETE', '/events/user.signed_up')).status).toBe(200)
      return c
    }, path: (c) => `/automations/${c.a.id}/enable`, status: 404, code: 'not_found', check: async (_r, c, h) => expect((await h.call('GET', `/automations/${c.a.id}`)).body.status).toBe('disabled') },
    { name: 'refuses to enable when its template no longer names a sender', method: 'POST', setup: async (h) => {
      const c = await made(h)
      await h.call('PATCH', `/templates/${c.tpl.id}`, { body: { from: null } })
      await h.call('POST', `/templates/${c.tpl.id}/publish`)
      return c
    }, path: (c) => `/automations/${c.a.id}/enable`, status: 422, code: 'invalid_parameter' },
    { name: 'answers 404 when enabling a missing automation', method: 'POST', path: `/automations/${missing}/enable`, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'POST', path: `/automations/${missing}/enable`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/automations/${missing}/enable`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/automations/${missing}/enable`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /automations/{id}/disable
    { name: 'disables an automation and ends its runs in progress', method: 'POST', setup: withRun, path: (c) => `/automations/${c.a.id}/disable`, status: 200, expect: { status: 'disabled' },
      check: async (_r, c, h) => {
        const [run] = await runsOf(h.call, c.a.id)
        expect(run).toMatchObject({ status: 'cancelled', completed_at: '2026-03-02T10:00:00.000Z', wake_at: null })
      } },
    { name: 'answers 404 when disabling a missing automation', method: 'POST', path: `/automations/${missing}/disable`, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'POST', path: `/automations/${missing}/disable`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/automations/${missing}/disable`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/automations/${missing}/disable`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /automations/{id}/duplicate
    { name: 'copies the current version as a new, disabled automation at version 1', method: 'POST', setup: async (h) => {
      const c = await made(h, { status: 'enabled' })
      await h.call('PATCH', `/automations/${c.a.id}`, { body: { name: 'Welcome v2' } })
      return c
    }, path: (c) => `/automations/${c.a.id}/duplicate`, status: 201, expect: { name: 'Welcome v2 (copy)', status: 'disabled', version: 1 },
      check: async (r, c, h) => {
        expect(r.body.id).not.toBe(c.a.id)
        expect(r.body.steps).toEqual(welcome(c).steps)
        expect((await h.call('GET', `/automations/${r.body.id}/versions`)).body.data).toHaveLength(1)
        // The copy uses the template too.
        expectError(await h.call('DELETE', `/templates/${c.tpl.id}`), 'template_in_use', 409)
      } },
    { name: 'answers 404 when duplicating a missing automation', method: 'POST', path: `/automations/${missing}/duplicate`, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'POST', path: `/automations/${missing}/duplicate`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/automations/${missing}/duplicate`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/automations/${missing}/duplicate`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /automations/{id}/runs
    { name: 'lists runs, newest first', method: 'GET', setup: withRun, path: (c) => `/automations/${c.a.id}/runs`, status: 200,
      check: (r, c) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data).toEqual([{
          object: 'automation_run', id: c.run.id, automation_id: c.a.id, version_id: c.a.version_id, version: 1, contact_id: c.ada.id, status: 'running',
          trigger: { event: 'user.signed_up', payload: { plan: 'pro' } }, current_step: 'pause', wake_at: '2026-03-03T10:00:00.000Z',
          started_at: '2026-03-02T10:00:00.000Z', completed_at: null, created_at: '2026-03-02T10:00:00.000Z',
        }])
      } },
    { name: 'filters runs by status, comma-separated', method: 'GET', setup: withRun, path: (c) => `/automations/${c.a.id}/runs`, query: { status: 'completed,failed' }, status: 200, expect: { data: [] } },
    { name: 'refuses a status that is no run status', method: 'GET', setup: withRun, path: (c) => `/automations/${c.a.id}/runs`, query: { status: 'running,paused' }, status: 400, code: 'validation_error' },
    { name: 'refuses an after that is no run id', method: 'GET', setup: withRun, path: (c) => `/automations/${c.a.id}/runs`, query: { after: 'nope' }, status: 400, code: 'invalid_cursor' },
    { name: 'answers 404 for the runs of a missing automation', method: 'GET', path: `/automations/${missing}/runs`, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/automations/${missing}/runs`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/automations/${missing}/runs`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/automations/${missing}/runs`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /automations/{id}/runs/{run_id}
    { name: 'gets one run with its steps so far', method: 'GET', setup: withRun, path: (c) => `/automations/${c.a.id}/runs/${c.run.id}`, status: 200,
      expect: { object: 'automation_run', status: 'running', current_step: 'pause' },
      check: (r) =>
        expect(r.body.steps).toEqual([
          { key: 'start', type: 'trigger', status: 'completed', attempts: 1, started_at: '2026-03-02T10:00:00.000Z', completed_at: '2026-03-02T10:00:00.000Z', output: { event: 'user.signed_up', payload: { plan: 'pro' }, occurrence_id: expect.any(String) }, error: null, created_at: '2026-03-02T10:00:00.000Z' },
          { key: 'pause', type: 'delay', status: 'waiting', attempts: 1, started_at: '2026-03-02T10:00:00.000Z', completed_at: null, output: { until: '2026-03-03T10:00:00.000Z' }, error: null, created_at: '2026-03-02T10:00:00.000Z' },
        ]) },
    { name: 'answers 404 for a run that does not exist', method: 'GET', setup: made, path: (c) => `/automations/${c.a.id}/runs/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for a run of another automation', method: 'GET', setup: async (h) => {
      const c = await withRun(h)
      return { ...c, other: await automation(h.call, welcome(c, { name: 'Other' })) }
    }, path: (c) => `/automations/${c.other.id}/runs/${c.run.id}`, status: 404, code: 'not_found' },
    { name: 'refuses a run id that is no UUID', method: 'GET', path: `/automations/${missing}/runs/nope`, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/automations/${missing}/runs/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/automations/${missing}/runs/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/automations/${missing}/runs/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /automations/{id}/versions
    { name: 'lists versions newest first', method: 'GET', setup: async (h) => {
      const c = await made(h)
      await h.call('PATCH', `/automations/${c.a.id}`, { body: { steps: [trigger(), send(c.tpl.id)] } })
      return c
    }, path: (c) => `/automations/${c.a.id}/versions`, query: { limit: 1 }, status: 200,
      check: (r, c) => {
        expect(r.body.has_more).toBe(true)
        expect(r.body.data).toEqual([{ object: 'automation_version', id: expect.any(String), automation_id: c.a.id, version: 2, name: 'Welcome series', steps: [trigger(), send(c.tpl.id)], connections: [{ from: 'start', to: 'mail', type: 'default' }], created_at: '2026-03-02T10:00:00.000Z' }])
      } },
    { name: 'refuses a tampered cursor', method: 'GET', setup: made, path: (c) => `/automations/${c.a.id}/versions`, query: { cursor: 'x.y' }, status: 400, code: 'invalid_cursor' },
    { name: 'answers 404 for the versions of a missing automation', method: 'GET', path: `/automations/${missing}/versions`, status: 404, code: 'not_found' },
    { name: 'refuses a limit over 500', method: 'GET', path: `/automations/${missing}/versions`, query: { limit: 501 }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/automations/${missing}/versions`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/automations/${missing}/versions`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/automations/${missing}/versions`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // What automations use cannot go away under them.
    { name: 'refuses to delete an event an enabled automation triggers on', method: 'DELETE', path: '/events/user.signed_up', setup: (h) => made(h, { status: 'enabled' }), status: 409, code: 'event_in_use',
      check: (r, c) => expect(r.body).toMatchObject({ automation_ids: [c.a.id], message: expect.stringContaining(`automation ${c.a.id}`) }) },
    { name: 'refuses to delete an event an enabled automation waits for', method: 'DELETE', path: '/events/payment.completed', setup: async (h) => {
      await base(h)
      await defineEvent(h.call, 'payment.completed')
      return automation(h.call, { name: 'Waits', status: 'enabled', steps: [trigger(), { key: 'paid', type: 'wait_for_event', config: { event_name: 'payment.completed' } }] })
    }, status: 409, code: 'event_in_use' },
    { name: 'deletes an event only a disabled automation names', method: 'DELETE', path: '/events/user.signed_up', setup: made, status: 200 },
    { name: 'refuses to rename an event an enabled automation triggers on', method: 'PATCH', path: '/events/user.signed_up', setup: (h) => made(h, { status: 'enabled' }), body: { name: 'user.registered' }, status: 409, code: 'event_in_use' },
    { name: 'changes the schema of an event an enabled automation triggers on', method: 'PATCH', path: '/events/user.signed_up', setup: (h) => made(h, { status: 'enabled' }), body: { schema: { plan: 'string', seats: 'number' } }, status: 200 },
    { name: 'refuses to delete a segment an automation adds contacts to', method: 'DELETE', setup: segmentInUse, path: (c) => `/segments/${c.seg.id}`, status: 409, code: 'segment_in_use',
      check: (r, c) => expect(r.body.message).toContain(`automation ${c.a.id}`) },
    { name: 'refuses to delete, as an audience, a segment an automation adds contacts to', method: 'DELETE', setup: segmentInUse, path: (c) => `/audiences/${c.seg.id}`, status: 409, code: 'segment_in_use' },
    { name: 'refuses to delete a template an automation sends', method: 'DELETE', setup: made, path: (c) => `/templates/${c.tpl.id}`, status: 409, code: 'template_in_use',
      check: (r, c) => expect(r.body.message).toContain(`automation ${c.a.id}`) },
    { name: 'refuses to delete a template a run in progress still needs, after its automation stopped naming it', method: 'DELETE', setup: async (h) => {
      const c = await withRun(h)
      await h.call('PATCH', `/automations/${c.a.id}`, { body: { steps: [trigger(), delay()] } })
      return c
    }, path: (c) => `/templates/${c.tpl.id}`, status: 409, code: 'template_in_use' },
    { name: 'deletes a template once no automation or run needs it', method: 'DELETE', setup: async (h) => {
      const c = await made(h)
      await h.call('DELETE', `/automations/${c.a.id}`)
      return c
    }, path: (c) => `/templates/${c.tpl.id}`, status: 200 },
  ])
})

describe('Automations: the platform’s refusals on every operation', () => {
  const ops = (id: string) => [
    ['POST', '/automations'],
    ['GET', '/automations'],
    ['GET', `/automations/${id}`],
    ['PATCH', `/automations/${id}`],
    ['DELETE', `/automations/${id}`],
    ['POST', `/automations/${id}/enable`],
    ['POST', `/automations/${id}/disable`],
    ['POST', `/automations/${id}/duplicate`],
    ['GET', `/automations/${id}/runs`],
    ['GET', `/automations/${id}/runs/${missing}`],
    ['GET', `/automations/${id}/versions`],
  ] as const

  test('a paused key, a spent rate window and a spent key ceiling are refused', async () => {
    const h = await harness({ MAILROOM_RATE_LIMIT: '3' })
    try {
      for (const [m, p] of ops(missing)) {
        const paused = await h.key({ name: 'paused' })
        await pauseKey(h.root, paused.id, 'runaway')
        expectError(await h.call(m, p, { key: paused.token, body: m === 'GET' ? undefined : {} }), 'kill_switch_active', 403)
        const slow = await h.key({ name: 'slow', rate_ceiling_per_minute: 1 })
        await h.call('GET', '/automations', { key: slow.token })
        expectError(await h.call(m, p, { key: slow.token, body: m === 'GET' ? undefined : {} }), 'rate_ceiling_exceeded', 429)
        const busy = await h.key({ name: 'busy' })
        for (let i = 0; i < 3; i++) await h.call('GET', '/automations', { key: busy.token })
        expectError(await h.call(m, p, { key: busy.token, body: m === 'GET' ? undefined : {} }), 'rate_limit_exceeded', 429)
      }
    } finally {
      await h.close()
    }
  })

  test('changes refuse a body that is not JSON, one over their limit, and a reused Idempotency-Key with another body', async () => {
    const h = await harness()
    try {
      const b = await base(h)
      for (const [m, p] of ops(missing).filter(([m]) => m !== 'GET')) {
        const a = await automation(h.call, welcome(b))
        const path = p.replace(missing, a.id)
        expectError(await h.call(m, path, { raw: 'name=x', headers: { 'content-type': 'text/plain' } }), 'unsupported_media_type', 415)
        const limitMb = p === '/automations' || m === 'PATCH' ? 50 : 1
        expectError(await h.call(m, path, { raw: JSON.stringify({ name: 'x'.repeat(limitMb * 1024 * 1024 + 10) }), headers: { 'content-type': 'application/json' } }), 'payload_too_large', 413)
        // The same key again with another body: refused, and the first call's change is all there is.
        const [first, other] = p === '/automations' ? [welcome(b), welcome(b, { name: 'Other' })] : m === 'PATCH' ? [{ name: 'Kept' }, { name: 'Other' }] : [{}, { name: 'Other' }]
        const headers = { 'Idempotency-Key': `reuse ${m} ${p}` }
        expect((await h.call(m, path, { headers, body: first })).status).toBeLessThan(300)
        expectError(await h.call(m, path, { headers, body: other }), 'idempotency_payload_mismatch', 409)
      }
      const names = (await h.root.db.q.select({ name: automations.name }).from(automations)).map((r) => r.name)
      expect(names).not.toContain('Other')
      expect(names).toContain('Kept')
    } finally {
      await h.close()
    }
  })
})

describe('Automations: rules', () => {
  test('pages runs across pages with next_cursor; a cursor from another automation’s list is refused', async () => {
    const h = await harness()
    try {
      const b = await base(h)
      const a = await automation(h.call, welcome(b, { status: 'enabled' }))
      const other = await automation(h.call, welcome(b, { name: 'Other', status: 'enabled' }))
      for (let i = 0; i < 5; i++) {
        await sendEvent(h.call, b.event, 'ada@customer.io')
        h.clock.advance(1000)
      }
      await h.automations.runOnce()
      const seen: string[] = []
      let cursor: string | undefined
      do {
        const r = await h.call('GET', `/automations/${a.id}/runs`, { query: { limit: 2, cursor } })
        seen.push(...r.body.data.map((x: { id: string }) => x.id))
        cursor = r.body.next_cursor ?? undefined
        if (cursor) expectError(await h.call('GET', `/automations/${other.id}/runs`, { query: { cursor } }), 'invalid_cursor', 400)
      } while (cursor)
      expect(seen).toHaveLength(5)
      expect([...seen].sort().reverse()).toEqual(seen)
    } finally {
      await h.close()
    }
  })

  test('another account can neither see nor change an automation, nor start its runs', async () => {
    const h = await harness()
    try {
      const { o, a } = await othersAutomation(h)
      expect((await h.call('GET', '/automations')).body.data).toEqual([])
      for (const [m, p] of [['PATCH', `/automations/${a.id}`], ['POST', `/automations/${a.id}/enable`], ['POST', `/automations/${a.id}/duplicate`], ['GET', `/automations/${a.id}/versions`]] as const) {
        expectError(await h.call(m, p, m === 'PATCH' ? { body: { name: 'Mine' } } : {}), 'not_found', 404)
      }
      await h.call('POST', `/automations/${a.id}/enable`, { key: o.token })
      // My contact with an event of the same name starts nothing of theirs.
      await defineEvent(h.call, 'theirs')
      await contact(h.call, 'me@customer.io')
      await sendEvent(h.call, 'theirs', 'me@customer.io')
      await h.automations.runOnce()
      expect((await h.call('GET', `/automations/${a.id}/runs`, { key: o.token })).body.data).toEqual([])
    } finally {
      await h.close()
    }
  })

  test('Resend’s SDK creates, reads, lists, updates, duplicates and deletes automations, and reads their runs', async () => {
    const h = await harness({ MAILROOM_RATE_LIMIT: '100000' })
    const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => h.app.handle(req) })
    try {
      const b = await base(h)
      const resend = new Resend(h.token, { baseUrl: `http://127.0.0.1:${server.port}` } as never)
      const created = await resend.automations.create({
        name: 'SDK welcome',
        status: 'enabled',
        steps: [
          { key: 'start', type: 'trigger', config: { eventName: 'user.signed_up' } },
          { key: 'pause', type: 'delay', config: { duration: '1 hour' } },
          { key: 'mail', type: 'send_email', config: { template: { id: b.tpl.id, variables: { name: { var: 'contact.first_name' } } } } },
        ],
        connections: [{ from: 'start', to: 'pause', type: 'default' }, { from: 'pause', to: 'mail', type: 'default' }],
      } as never)
      expect(created.error).toBeNull()
      const id = created.data!.id
      expect((await resend.automations.get(id)).data).toMatchObject({ object: 'automation', id, name: 'SDK welcome', status: 'enabled' })
      expect((await resend.automations.list()).data?.data.map((x: { id: string }) => x.id)).toEqual([id])
      await resend.events.send({ event: 'user.signed_up', email: 'ada@customer.io', payload: { plan: 'pro' } } as never)
      await h.automations.runOnce()
      const runs = await resend.automations.runs.list({ automationId: id, status: 'running' } as never)
      expect(runs.data?.data).toHaveLength(1)
      const run = await resend.automations.runs.get({ automationId: id, runId: runs.data!.data[0].id } as never)
      expect(run.data).toMatchObject({ object: 'automation_run', status: 'running' })
      expect((await resend.automations.update(id, { name: 'SDK welcome 2' } as never)).data).toMatchObject({ id, name: 'SDK welcome 2', version: 2 })
      const copy = await resend.automations.duplicate(id)
      expect(copy.data).toMatchObject({ object: 'automation', name: 'SDK welcome 2 (copy)' })
      expect((await resend.automations.remove(copy.data!.id)).data).toEqual({ object: 'automation', id: copy.data!.id, deleted: true })
      const bad = await resend.automations.create({ name: 'Bad', steps: [{ key: 'start', type: 'trigger', config: { eventName: 'nope' } }], connections: [] } as never)
      expect(bad.error).toMatchObject({ name: 'not_found', statusCode: 404 })
    } finally {
      server.stop(true)
      await h.close()
    }
  })
})
