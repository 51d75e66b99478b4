import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { dedicatedIpDomains } from '../src/db/tables'
import { canonicalIp, isHostAddress, reverseName } from '../src/dedicated-ips/address'
import { WARMUP_SCHEDULE } from '../src/dedicated-ips/warmup'
import { DAY } from '../src/lib/clock'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { verifiedDomain } from './support/emails'
import { expectError, harness, type Harness } from './support/harness'
import { asCookie, person } from './support/people'
import { scenarios, type Scenario } from './support/scenarios'

let dns: TestDnsServer
beforeAll(async () => {
  dns = await startDnsServer()
})
afterAll(() => dns.close())

const OWNER = { role: 'owner' as const }
const PINS = 'pinned.test=127.0.0.3'

/** Registers an address as the owner (a person with two-factor done). */
async function register(h: Harness, body: Record<string, unknown> = { ip: '127.0.0.2' }) {
  const p = await person(h, OWNER)
  const r = await h.call('POST', '/dedicated-ips', { ...asCookie(p.cookie), body })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; ip: string }
}

const table: Scenario[] = [
  {
    name: 'a person registers an address of this host: warm-up day 1, PTR recorded',
    method: 'POST',
    path: '/dedicated-ips',
    as: OWNER,
    setup: async () => dns.set(reverseName('127.0.0.2'), 'PTR', ['mail2.mailroom.test']),
    body: { ip: '127.0.0.2' },
    status: 201,
    expect: {
      object: 'dedicated_ip',
      ip: '127.0.0.2',
      family: 4,
      ptr: 'mail2.mailroom.test',
      overflow: 'shared',
      domains: [],
      warmup: { enabled: true, day: 1, daily_limit: 50, sent_today: 0, remaining_today: 50, started_at: '2026-03-02T10:00:00.000Z', completes_at: '2026-03-12T00:00:00.000Z', schedule: [...WARMUP_SCHEDULE] },
    },
  },
  {
    name: 'IPv6 loopback, already warm, holding overflow; no PTR',
    method: 'POST',
    path: '/dedicated-ips',
    as: OWNER,
    body: { ip: '0:0:0:0:0:0:0:1', warmup: false, overflow: 'hold' },
    status: 201,
    expect: { ip: '::1', family: 6, ptr: null, overflow: 'hold', warmup: { enabled: false, day: null, daily_limit: null, remaining_today: null, started_at: null } },
  },
  { name: 'an API key cannot make the decision', method: 'POST', path: '/dedicated-ips', as: 'full', body: { ip: '127.0.0.2' }, status: 403, code: 'human_action_required' },
  { name: 'a developer cannot register', method: 'POST', path: '/dedicated-ips', as: { role: 'developer' }, body: { ip: '127.0.0.2' }, status: 403, code: 'insufficient_role' },
  { name: 'not an address', method: 'POST', path: '/dedicated-ips', as: OWNER, body: { ip: 'mail.example.com' }, status: 422, code: 'invalid_parameter' },
  { name: 'a legacy IPv4 shape is not taken for an address', method: 'POST', path: '/dedicated-ips', as: OWNER, body: { ip: '0x7f.1' }, status: 422, code: 'invalid_parameter' },
  {
    name: 'an address of another host',
    method: 'POST',
    path: '/dedicated-ips',
    as: OWNER,
    body: { ip: '203.0.113.7' },
    status: 422,
    code: 'invalid_parameter',
    check: (r) => expect(r.body.message).toContain('not an address of this host'),
  },
  {
    name: 'an address registered already (in another spelling)',
    method: 'POST',
    path: '/dedicated-ips',
    as: OWNER,
    setup: (h) => register(h, { ip: '::1' }),
    body: { ip: '::0:1' },
    status: 409,
    code: 'dedicated_ip_taken',
  },
  { name: 'a missing ip', method: 'POST', path: '/dedicated-ips', as: OWNER, body: {}, status: 400, code: 'validation_error' },
  {
    name: 'list with warm-up state and domains',
    method: 'GET',
    path: '/dedicated-ips',
    setup: async (h) => {
      const ip = await register(h)
      const d = await verifiedDomain(h, 'shop.test')
      await h.call('PATCH', `/dedicated-ips/${ip.id}`, { body: { domains: ['shop.test'] } })
      return { ip, d }
    },
    status: 200,
    check: (r, { ip, d }) => expect(r.body).toMatchObject({ object: 'list', has_more: false, data: [{ id: ip.id, warmup: { daily_limit: 50 }, domains: [{ id: d.id, name: 'shop.test', assigned_by: 'account' }] }] }),
  },
  { name: 'a stale cursor', method: 'GET', path: '/dedicated-ips', query: { cursor: 'nope' }, status: 400, code: 'invalid_cursor' },
  { name: 'get one', method: 'GET', path: (c) => `/dedicated-ips/${c.id}`, setup: (h) => register(h), status: 200, expect: { ip: '127.0.0.2' } },
  { name: 'an unknown id', method: 'GET', path: '/dedicated-ips/00000000-0000-4000-8000-000000000000', status: 404, code: 'not_found' },
  {
    name: 'assign domains by name and id; warm-up off; overflow held',
    method: 'PATCH',
    path: (c) => `/dedicated-ips/${c.ip.id}`,
    setup: async (h) => ({ ip: await register(h), a: await verifiedDomain(h, 'a.test'), b: await verifiedDomain(h, 'b.test') }),
    body: (c: { b: { id: string } }) => ({ domains: ['A.test.', c.b.id], warmup: false, overflow: 'hold' }),
    status: 200,
    check: (r, c) =>
      expect(r.body).toMatchObject({
        overflow: 'hold',
        warmup: { enabled: false, daily_limit: null, started_at: null },
        domains: [
          { id: c.a.id, name: 'a.test', assigned_by: 'account' },
          { id: c.b.id, name: 'b.test', assigned_by: 'account' },
        ],
      }),
  },
  {
    name: 'a domain assigned here moves off the address it had',
    method: 'PATCH',
    path: (c) => `/dedicated-ips/${c.second.id}`,
    setup: async (h) => {
      const first = await register(h)
      const second = await register(h, { ip: '127.0.0.4' })
      const d = await verifiedDomain(h, 'moving.test')
      await h.call('PATCH', `/dedicated-ips/${first.id}`, { body: { domains: ['moving.test'] } })
      return { first, second, d }
    },
    body: { domains: ['moving.test'] },
    status: 200,
    expect: { domains: [{ name: 'moving.test' }] },
    check: async (_r, c, h) => {
      expect((await h.call('GET', `/dedicated-ips/${c.first.id}`)).body.domains).toEqual([])
      expect(await h.root.db.q.select().from(dedicatedIpDomains).where(eq(dedicatedIpDomains.domainId, c.d.id))).toHaveLength(1)
    },
  },
  {
    name: 'an empty list unassigns every domain',
    method: 'PATCH',
    path: (c) => `/dedicated-ips/${c.id}`,
    setup: async (h) => {
      const ip = await register(h)
      await verifiedDomain(h, 'gone.test')
      await h.call('PATCH', `/dedicated-ips/${ip.id}`, { body: { domains: ['gone.test'] } })
      return ip
    },
    body: { domains: [] },
    status: 200,
    expect: { domains: [] },
  },
  {
    name: 'a domain of no account here',
    method: 'PATCH',
    path: (c) => `/dedicated-ips/${c.id}`,
    setup: (h) => register(h),
    body: { domains: ['nobody.test'] },
    status: 422,
    code: 'invalid_parameter',
    check: (r) => expect(r.body.message).toContain('domains[0]'),
  },
  {
    name: 'the operator’s pin shows on its address and cannot be dropped',
    method: 'PATCH',
    path: (c) => `/dedicated-ips/${c.ip.id}`,
    env: { MAILROOM_DEDICATED_IP_PINS: PINS },
    setup: async (h) => ({ ip: await register(h, { ip: '127.0.0.3' }), d: await verifiedDomain(h, 'pinned.test') }),
    body: { domains: [] },
    status: 403,
    code: 'dedicated_ip_assigned_by_us',
    check: async (_r, c, h) => expect((await h.call('GET', `/dedicated-ips/${c.ip.id}`)).body.domains).toEqual([{ id: c.d.id, name: 'pinned.test', assigned_by: 'operator' }]),
  },
  {
    name: 'a pinned domain cannot be assigned to another address',
    method: 'PATCH',
    path: (c) => `/dedicated-ips/${c.id}`,
    env: { MAILROOM_DEDICATED_IP_PINS: PINS },
    setup: async (h) => {
      await verifiedDomain(h, 'pinned.test')
      return register(h)
    },
    body: { domains: ['pinned.test'] },
    status: 403,
    code: 'dedicated_ip_assigned_by_us',
  },
  {
    name: 'keeping the pinned domain beside others is fine',
    method: 'PATCH',
    path: (c) => `/dedicated-ips/${c.id}`,
    env: { MAILROOM_DEDICATED_IP_PINS: PINS },
    setup: async (h) => {
      await verifiedDomain(h, 'pinned.test')
      await verifiedDomain(h, 'free.test')
      return register(h, { ip: '127.0.0.3' })
    },
    body: { domains: ['pinned.test', 'free.test'] },
    status: 200,
    expect: { domains: [{ name: 'free.test', assigned_by: 'account' }, { name: 'pinned.test', assigned_by: 'operator' }] },
  },
  { name: 'patch an unknown id', method: 'PATCH', path: '/dedicated-ips/00000000-0000-4000-8000-000000000000', body: { overflow: 'hold' }, status: 404, code: 'not_found' },
  { name: 'an unknown overflow rule', method: 'PATCH', path: '/dedicated-ips/00000000-0000-4000-8000-000000000000', body: { overflow: 'drop' }, status: 400, code: 'validation_error' },
]

describe('dedicated IPs', () => {
  scenarios(table, { env: () => ({ MAILROOM_DNS_SERVERS: dns.address }), reset: () => dns.reset() })
})

describe('warm-up', () => {
  let h: Harness
  beforeAll(async () => {
    h = await harness({ MAILROOM_DNS_SERVERS: dns.address })
  })
  afterAll(() => h.close())

  test('the cap follows the schedule day by day, then the address is warm; turning warm-up on again restarts it', async () => {
    const ip = await register(h)
    const day = async () => (await h.call('GET', `/dedicated-ips/${ip.id}`)).body.warmup
    expect(await day()).toMatchObject({ day: 1, daily_limit: 50 })
    h.clock.advance(14 * 3_600_000) // past midnight UTC: day 2
    expect(await day()).toMatchObject({ day: 2, daily_limit: 100 })
    h.clock.advance(3 * DAY)
    expect(await day()).toMatchObject({ day: 5, daily_limit: 5_000 })
    h.clock.advance(6 * DAY)
    expect(await day()).toMatchObject({ enabled: false, day: null, daily_limit: null, completes_at: '2026-03-12T00:00:00.000Z' })
    const again = await h.call('PATCH', `/dedicated-ips/${ip.id}`, { body: { warmup: true } })
    expect(again.body.warmup).toMatchObject({ enabled: false })
    await h.call('PATCH', `/dedicated-ips/${ip.id}`, { body: { warmup: false } })
    const restarted = await h.call('PATCH', `/dedicated-ips/${ip.id}`, { body: { warmup: true } })
    expect(restarted.body.warmup).toMatchObject({ enabled: true, day: 1, daily_limit: 50 })
  })

  test('another account sees none of it', async () => {
    const other = await h.otherAccount()
    const mine = (await h.call('GET', '/dedicated-ips')).body.data[0]
    const r = await h.call('GET', `/dedicated-ips/${mine.id}`, { key: other.token })
    expectError(r, 'not_found', 404)
    expect((await h.call('GET', '/dedicated-ips', { key: other.token })).body.data).toEqual([])
  })
})

test('addresses: canonical forms, and what counts as this host', () => {
  expect(canonicalIp('::ffff:127.0.0.2')).toBe('127.0.0.2')
  expect(canonicalIp('2001:DB8::0:7')).toBe('2001:db8::7')
  expect(canonicalIp('1')).toBeNull()
  expect(isHostAddress('127.9.9.9')).toBe(process.platform === 'linux')
  expect(isHostAddress('::1')).toBe(true)
  expect(isHostAddress('198.51.100.1')).toBe(false)
  expect(reverseName('192.0.2.7')).toBe('7.2.0.192.in-addr.arpa')
  expect(reverseName('2001:db8::1')).toBe(`1.${'0.'.repeat(23)}8.b.d.0.1.0.0.2.ip6.arpa`)
})
