// GET /usage reads the counters the send checks spend from, so what it says
// remains is exactly what the next send may spend.
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { pauseKey } from '../src/api-keys/service'
import { apiKeys } from '../src/db/tables'
import { recordEvents } from '../src/emails/events'
import { message, sent, simulated, verifiedDomain } from './support/emails'
import { expectError, harness, type Harness } from './support/harness'
import { receivedAt } from './support/metrics-fixtures'
import { scenarios } from './support/scenarios'

const usage = async (h: Harness) => {
  const r = await h.call('GET', '/usage')
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body
}

describe('GET /usage', () => {
  test('a new account: nothing used, no limits, the UTC day and month with their resets, its one key', async () => {
    const h = await harness()
    try {
      const r = await usage(h)
      const [owner] = await h.root.db.q.select().from(apiKeys)
      expect(r).toEqual({
        object: 'usage',
        emails: {
          daily: { used: 0, limit: null, remaining: null, sent: 0, received: 0, period_started_at: '2026-03-02T00:00:00.000Z', resets_at: '2026-03-03T00:00:00.000Z' },
          monthly: { used: 0, limit: null, remaining: null, sent: 0, received: 0, period_started_at: '2026-03-01T00:00:00.000Z', resets_at: '2026-04-01T00:00:00.000Z' },
        },
        domains: { used: 0, limit: null },
        rate_limit: { limit: 600, duration: '60s' },
        api_keys: [
          {
            id: owner.id, name: owner.name, permission: 'full_access', budget_per_period: null, period: owner.period, used: 0, remaining: null,
            period_started_at: '2026-03-01T00:00:00.000Z', resets_at: '2026-04-01T00:00:00.000Z', rate_ceiling_per_minute: null, paused: false,
          },
        ],
      })
    } finally {
      await h.close()
    }
  })

  test('quotas and a key budget: what remains is what the next send may spend, and refused sends spend nothing', async () => {
    const h = await harness({ MAILROOM_DAILY_QUOTA: '5', MAILROOM_MONTHLY_QUOTA: '8', MAILROOM_DOMAIN_LIMIT: '3' })
    try {
      await verifiedDomain(h, 'acme.dev')
      const agent = await h.key({ name: 'agent', budget_per_period: 3, period: 'daily', rate_ceiling_per_minute: 100 })
      await sent(h, message({ to: ['a@customer.io', 'b@customer.io'] }), agent.token)
      await sent(h, simulated())
      let r = await usage(h)
      expect(r.emails.daily).toMatchObject({ used: 3, limit: 5, remaining: 2, sent: 3 })
      expect(r.emails.monthly).toMatchObject({ used: 3, limit: 8, remaining: 5 })
      expect(r.domains).toEqual({ used: 1, limit: 3 })
      const mine = () => r.api_keys.find((k: { id: string }) => k.id === agent.id)
      expect(mine()).toEqual({
        id: agent.id, name: 'agent', permission: 'full_access', budget_per_period: 3, period: 'daily', used: 2, remaining: 1,
        period_started_at: '2026-03-02T00:00:00.000Z', resets_at: '2026-03-03T00:00:00.000Z', rate_ceiling_per_minute: 100, paused: false,
      })

      // Two more would pass the key's budget: refused, and nothing is counted.
      expectError(await h.call('POST', '/emails', { key: agent.token, body: message({ to: ['c@customer.io', 'd@customer.io'] }) }), 'agent_budget_exceeded', 402)
      expect((await usage(h)).api_keys.find((k: { id: string }) => k.id === agent.id).used).toBe(2)
      // The one remaining is spendable, and then none is.
      await sent(h, message({ to: 'c@customer.io' }), agent.token)
      r = await usage(h)
      expect(mine()).toMatchObject({ used: 3, remaining: 0 })
      expectError(await h.call('POST', '/emails', { key: agent.token, body: message({ to: 'e@customer.io' }) }), 'agent_budget_exceeded', 402)
      // The account's day: 4 used of 5, so one more recipient passes and a second is refused.
      expect(r.emails.daily).toMatchObject({ used: 4, remaining: 1 })
      await sent(h, message({ to: 'f@customer.io' }))
      expect((await usage(h)).emails.daily).toMatchObject({ used: 5, remaining: 0 })
      expectError(await h.call('POST', '/emails', { body: message({ to: 'g@customer.io' }) }), 'daily_quota_exceeded', 429)

      // A new UTC day: the day and the key's daily budget start over, the month does not.
      h.clock.set('2026-03-03T00:00:00.000Z')
      r = await usage(h)
      expect(r.emails.daily).toMatchObject({ used: 0, remaining: 5, period_started_at: '2026-03-03T00:00:00.000Z', resets_at: '2026-03-04T00:00:00.000Z' })
      expect(r.emails.monthly).toMatchObject({ used: 5, remaining: 3 })
      expect(mine()).toMatchObject({ used: 0, remaining: 3, resets_at: '2026-03-04T00:00:00.000Z' })
    } finally {
      await h.close()
    }
  })

  test('each key’s period decides its reset; revoked keys are left out; a paused key says so', async () => {
    const h = await harness()
    try {
      const hourly = await h.key({ name: 'hourly', budget_per_period: 10, period: 'hourly' })
      const weekly = await h.key({ name: 'weekly', budget_per_period: 10, period: 'weekly' })
      const gone = await h.key({ name: 'gone' })
      await h.call('DELETE', `/api-keys/${gone.id}`)
      await pauseKey(h.root, weekly.id, 'bounce spike')
      h.clock.set('2026-03-04T15:30:00.000Z')
      const keys = (await usage(h)).api_keys
      expect(keys.map((k: { name: string }) => k.name)).toEqual(['Bootstrap key', 'hourly', 'weekly'])
      expect(keys.find((k: { id: string }) => k.id === hourly.id)).toMatchObject({ period_started_at: '2026-03-04T15:00:00.000Z', resets_at: '2026-03-04T16:00:00.000Z', paused: false })
      expect(keys.find((k: { id: string }) => k.id === weekly.id)).toMatchObject({ period_started_at: '2026-03-02T00:00:00.000Z', resets_at: '2026-03-09T00:00:00.000Z', paused: true })
    } finally {
      await h.close()
    }
  })

  test('received mail is shown beside the quota and spends none of it', async () => {
    const h = await harness({ MAILROOM_DAILY_QUOTA: '5' })
    try {
      const acme = await verifiedDomain(h, 'acme.dev')
      const id = await receivedAt(h, acme.id, '2026-03-02T09:00:00.000Z')
      await h.root.db.write((tx) => recordEvents(tx, h.root.ids, [{ accountId: h.accountId, emailId: id, type: 'received', at: '2026-03-02T09:00:00.000Z' }]))
      const r = await usage(h)
      expect(r.emails.daily).toMatchObject({ used: 0, remaining: 5, received: 1 })
      expect(r.emails.monthly).toMatchObject({ used: 0, received: 1 })
    } finally {
      await h.close()
    }
  })
})

describe('GET /usage: errors', () => {
  const owner = async (h: Harness) => (await h.root.db.q.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.accountId, h.accountId)))[0].id
  scenarios([
    { name: 'refuses a sending-only key', method: 'GET', path: '/usage', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/usage', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/usage', as: 'revoked', status: 403, code: 'invalid_api_key' },
    { name: 'refuses a parameter it does not take, by name', method: 'GET', path: '/usage', query: { key: 'x' }, status: 400, code: 'validation_error', check: (r) => expect(r.body.details[0].field).toBe('query.key') },
    { name: 'refuses a paused key', method: 'GET', path: '/usage', setup: async (h) => pauseKey(h.root, await owner(h), 'bounce spike'), status: 403, code: 'kill_switch_active' },
    { name: 'refuses past the key’s own ceiling', method: 'GET', path: '/usage', status: 429, code: 'rate_ceiling_exceeded',
      setup: async (h) => {
        const id = await owner(h)
        await h.root.db.write((tx) => tx.update(apiKeys).set({ rateCeilingPerMinute: 1 }).where(eq(apiKeys.id, id)))
        expect((await h.call('GET', '/usage')).status).toBe(200)
      } },
    { name: 'refuses past the deployment’s rate', method: 'GET', path: '/usage', env: { MAILROOM_RATE_LIMIT: '1' }, setup: async (h) => void (await h.call('GET', '/usage')), status: 429, code: 'rate_limit_exceeded' },
    { name: 'answers 500 without details when storage fails unexpectedly', method: 'GET', path: '/usage', setup: async (h) => void (await h.root.db.execute('drop table account_usage')), status: 500, code: 'internal_server_error',
      check: (r) => expect(JSON.stringify(r.body)).not.toContain('account_usage') },
  ])
})
