import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { agentActions, emails } from '../src/db/tables'
import { HOUR } from '../src/lib/clock'
import { expectError, harness, type Harness } from './support/harness'
import { asCookie, person } from './support/people'
import { scenarios } from './support/scenarios'

const ORIGIN = { origin: 'http://mailroom.test' }
const MISSING = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee'
const mail = (to: string, text = 'Your code is 123') => ({ from: 'Agent <agent@shop.test>', to, subject: 'Code', text })
/** Three simulator recipients: above a threshold of 2, no verified domain needed. */
const BATCH = [mail('delivered+1@simulator.test'), mail('delivered+2@simulator.test'), mail('delivered+3@simulator.test')]
const env = { MAILROOM_APPROVAL_THRESHOLD: '2' }

const emailCount = async (h: Harness) => (await h.root.db.q.select({ id: emails.id }).from(emails)).length

/** A batch from an agent's key, held above the threshold: the pending action's id. */
async function heldBatch(h: Harness) {
  const k = await h.key({ name: 'agent', permission: 'sending_access' })
  const r = await h.call('POST', '/emails/batch', { key: k.token, body: BATCH })
  expectError(r, 'approval_required', 403)
  return { key: k, actionId: r.body.agent_action_id as string }
}

describe('agent actions: scenarios', () => {
  scenarios(
    [
      { name: 'lists held actions with the exact request', method: 'GET', path: '/agent-actions', env, setup: heldBatch, status: 200,
        expect: { object: 'list', has_more: false, data: [{ object: 'agent_action', status: 'pending', kind: 'send_batch', reason: 'batch_threshold', request: { items: BATCH, mode: 'strict' }, result: null, decided_by: null }] } },
      { name: 'filters by status', method: 'GET', path: '/agent-actions', query: { status: 'approved' }, env, setup: heldBatch, status: 200, expect: { data: [] } },
      { name: 'gets one', method: 'GET', path: (c) => `/agent-actions/${c.actionId}`, env, setup: heldBatch, status: 200, expect: { status: 'pending', expires_at: '2026-03-03T10:00:00.000Z' } },
      { name: 'another account’s action is not found', method: 'GET', path: (c) => `/agent-actions/${c.actionId}`, env, as: 'none',
        setup: async (h) => ({ ...(await heldBatch(h)), other: await h.otherAccount() }), headers: (c) => ({ authorization: `Bearer ${c.other.token}` }), status: 404, code: 'not_found' },
      { name: 'an unknown action', method: 'GET', path: `/agent-actions/${MISSING}`, status: 404, code: 'not_found' },
      { name: 'a stale cursor', method: 'GET', path: '/agent-actions', query: { cursor: 'nope' }, status: 400, code: 'invalid_cursor' },
      { name: 'a key cannot approve, not even its own', method: 'POST', path: (c) => `/agent-actions/${c.actionId}/approve`, env, setup: heldBatch, status: 403, code: 'human_action_required' },
      { name: 'a person approves: the batch is sent', method: 'POST', path: (c) => `/agent-actions/${c.actionId}/approve`, env, setup: heldBatch, as: { role: 'admin' }, headers: ORIGIN, status: 200,
        expect: { status: 'approved', decided_by: expect.stringContaining('@people.test') },
        check: async (r, _c, h) => {
          expect(r.body.result.data).toHaveLength(3)
          expect(await emailCount(h)).toBe(3)
        } },
      { name: 'a person rejects: nothing is sent', method: 'POST', path: (c) => `/agent-actions/${c.actionId}/reject`, env, setup: heldBatch, as: {}, headers: ORIGIN, status: 200,
        expect: { status: 'rejected', result: null }, check: async (_r, _c, h) => expect(await emailCount(h)).toBe(0) },
      { name: 'an unknown action cannot be approved', method: 'POST', path: `/agent-actions/${MISSING}/approve`, as: {}, headers: ORIGIN, status: 404, code: 'not_found' },
      { name: 'an action left undecided expires', method: 'POST', path: (c) => `/agent-actions/${c.actionId}/approve`, env, as: {}, headers: ORIGIN,
        setup: async (h) => {
          const held = await heldBatch(h)
          h.clock.advance(25 * HOUR)
          return held
        },
        status: 409, code: 'approval_expired',
        check: async (_r, c, h) => {
          // The refusal marks it expired for good, and nothing ran.
          const [row] = await h.root.db.q.select().from(agentActions).where(eq(agentActions.id, c.actionId))
          expect(row.status).toBe('expired')
          expect(await emailCount(h)).toBe(0)
        } },
      { name: 'a decided action cannot be decided again', method: 'POST', path: (c) => `/agent-actions/${c.actionId}/approve`, env, as: {}, headers: ORIGIN,
        setup: async (h) => {
          const held = await heldBatch(h)
          await h.root.db.write((tx) => tx.update(agentActions).set({ status: 'rejected' }).where(eq(agentActions.id, held.actionId)))
          return held
        },
        status: 409, code: 'agent_action_decided' },
    ],
  )
})

describe('agent actions: flows', () => {
  test('a held batch runs exactly once: the same request finds the same action, and a second approval is refused', async () => {
    const h = await harness(env)
    const { key, actionId } = await heldBatch(h)
    expect(await emailCount(h)).toBe(0)
    const again = await h.call('POST', '/emails/batch', { key: key.token, body: BATCH })
    expect(again.body.agent_action_id).toBe(actionId)
    expect((await h.call('GET', '/agent-actions')).body.data).toHaveLength(1)
    // Under the threshold, or sent by a person, nothing is held.
    expect((await h.call('POST', '/emails/batch', { key: key.token, body: BATCH.slice(0, 2) })).status).toBe(200)
    const admin = await person(h, { role: 'admin' })
    const [first, second] = await Promise.all([
      h.call('POST', `/agent-actions/${actionId}/approve`, asCookie(admin.cookie, ORIGIN)),
      h.call('POST', `/agent-actions/${actionId}/approve`, asCookie(admin.cookie, ORIGIN)),
    ])
    expect([first.status, second.status].sort()).toEqual([200, 409])
    expect(await emailCount(h)).toBe(5)
    // The replay spent from the asking key, as the key's own send would.
    const sent = await h.call('GET', '/emails', { query: { limit: 10 } })
    expect(sent.body.data.length).toBe(5)
    const limits = await h.call('GET', `/limits/keys/${key.id}`)
    expect(limits.body.used).toBe(5)
    await h.close()
  })

  test('a refused replay keeps nothing: the action stays pending', async () => {
    const h = await harness(env)
    const { key, actionId } = await heldBatch(h)
    // The key's budget is spent meanwhile.
    await h.call('PATCH', `/limits/keys/${key.id}`, { body: { budget_per_period: 1 } })
    const admin = await person(h)
    const r = await h.call('POST', `/agent-actions/${actionId}/approve`, asCookie(admin.cookie, ORIGIN))
    expectError(r, 'agent_budget_exceeded', 402)
    expect((await h.call('GET', `/agent-actions/${actionId}`)).body.status).toBe('pending')
    expect(await emailCount(h)).toBe(0)
    expect((await h.call('POST', `/agent-actions/${actionId}/reject`, asCookie(admin.cookie, ORIGIN))).body.status).toBe('rejected')
    await h.close()
  })

  test('a key that asks to raise its own budget waits for a person, then has it', async () => {
    const h = await harness()
    const k = await h.key({ name: 'self', budget_per_period: 100 })
    const r = await h.call('PATCH', `/limits/keys/${k.id}`, { key: k.token, body: { budget_per_period: 500 } })
    expectError(r, 'approval_required', 403)
    expect((await h.call('GET', `/limits/keys/${k.id}`)).body.budget_per_period).toBe(100)
    const action = (await h.call('GET', `/agent-actions/${r.body.agent_action_id}`)).body
    expect(action).toMatchObject({ kind: 'raise_key_limits', reason: 'key_limit_raise', api_key_id: k.id, request: { key_id: k.id, input: { budget_per_period: 500 } } })
    // Not even the key itself, nor another key, may approve it.
    expectError(await h.call('POST', `/agent-actions/${action.id}/approve`, { key: k.token }), 'human_action_required', 403)
    const owner = await person(h)
    const approved = await h.call('POST', `/agent-actions/${action.id}/approve`, asCookie(owner.cookie, ORIGIN))
    expect(approved.status, JSON.stringify(approved.body)).toBe(200)
    expect(approved.body.result).toMatchObject({ object: 'key_limits', budget_per_period: 500 })
    expect((await h.call('GET', `/limits/keys/${k.id}`)).body.budget_per_period).toBe(500)
    await h.close()
  })

  test('the scheduler marks undecided actions expired', async () => {
    const h = await harness(env)
    const { actionId } = await heldBatch(h)
    h.clock.advance(24 * HOUR)
    await h.scheduler.runNow('expire-agent-actions')
    const [row] = await h.root.db.q.select().from(agentActions).where(eq(agentActions.id, actionId))
    expect(row.status).toBe('expired')
    expect((await h.call('GET', '/agent-actions', { query: { status: 'expired' } })).body.data).toHaveLength(1)
    await h.close()
  })
})
