// Sending domains, checked against a real DNS server (test/support/dns-server.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { createPublicKey } from 'node:crypto'
import { domains } from '../src/db/tables'
import { findVerifiedSendingDomain } from '../src/domains/service'
import { DAY, HOUR } from '../src/lib/clock'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { expectError, harness, silentLog, type Harness } from './support/harness'
import { scenarios as runScenarios, type Scenario } from './support/scenarios'

const HOST = 'mx.mailroom.test'
const SPF = `v=spf1 a:${HOST} ~all`
const missing = '01890000-0000-7000-8000-000000000000'
const DOMAIN_FIELDS = ['object', 'id', 'name', 'status', 'created_at', 'region', 'capabilities', 'open_tracking', 'click_tracking', 'tracking_subdomain', 'tls', 'custom_return_path', 'records']

let dns: TestDnsServer
beforeAll(async () => {
  dns = await startDnsServer()
})
afterAll(async () => {
  await dns.close()
})

const open = (env: Record<string, string> = {}) => harness({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_HOSTNAME: HOST, ...env })

type Rec = { record: string; name: string; type: 'TXT' | 'MX' | 'CNAME'; value: string; ttl?: string; priority?: number; status: string; detail?: string; required: boolean }
type Dom = { id: string; name: string; status: string; records: Rec[]; [k: string]: any }

async function create(h: Harness, body: Record<string, unknown> = {}, key?: string): Promise<Dom> {
  const r = await h.call('POST', '/domains', { key, body: { name: 'example.com', ...body } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body
}

/** Publishes the domain's records in the DNS server (all, or those `only` keeps). */
function publish(d: Pick<Dom, 'records'>, only: (r: Rec) => boolean = () => true) {
  const groups = new Map<string, { name: string; type: Rec['type']; values: (string | { exchange: string; priority: number })[] }>()
  for (const r of d.records.filter(only)) {
    const k = `${r.name}|${r.type}`
    if (!groups.has(k)) groups.set(k, { name: r.name, type: r.type, values: [] })
    groups.get(k)!.values.push(r.type === 'MX' ? { exchange: r.value, priority: r.priority ?? 10 } : r.value)
  }
  for (const g of groups.values()) dns.set(g.name, g.type, g.values)
}

const rec = (d: Pick<Dom, 'records'>, record: string, type?: string) => d.records.find((r) => r.record === record && (!type || r.type === type))!
const verify = (h: Harness, id: string, body?: unknown, key?: string) => h.call('POST', `/domains/${id}/verify`, { key, body, headers: { 'content-type': 'application/json' } })
const row = async (h: Harness, id: string) => (await h.root.db.q.select().from(domains).where(eq(domains.id, id)))[0]!

/** A domain whose records are published and verified. */
async function verifiedDomain(h: Harness, body: Record<string, unknown> = {}, key?: string): Promise<Dom> {
  const d = await create(h, body, key)
  publish(d)
  const v = await verify(h, d.id, undefined, key)
  expect(v.status, JSON.stringify(v.body)).toBe(200)
  expect(v.body.status).toBe('verified')
  return v.body
}

/** An SPF record whose includes chain through `n` more names, each adding `extra` lookups. */
function spfChain(prefix: string, n: number, extra = '') {
  for (let i = 1; i <= n; i++) dns.set(`${prefix}${i}.chain.test`, 'TXT', [i < n ? `v=spf1 include:${prefix}${i + 1}.chain.test${extra} -all` : `v=spf1 a:${HOST} -all`])
  return `v=spf1 include:${prefix}1.chain.test ~all`
}

/** Scenario tables with the DNS server reset and handed to each app. */
const scenarios = (table: Scenario[]) => runScenarios(table, { env: () => ({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_HOSTNAME: HOST }), reset: () => dns.reset() })

describe('POST /domains', () => {
  scenarios([
    { name: 'adds a domain and answers the records to publish, in Resend’s shape', method: 'POST', path: '/domains', body: { name: 'example.com' }, status: 201,
      expect: { object: 'domain', name: 'example.com', status: 'pending', created_at: '2026-03-02T10:00:00.000Z', region: 'us', capabilities: { sending: 'enabled', receiving: 'disabled' },
        open_tracking: false, click_tracking: false, tracking_subdomain: null, tls: 'opportunistic', custom_return_path: 'send', verified_at: null, check_window_ends_at: '2026-03-05T10:00:00.000Z' },
      check: async (r, _c, h) => {
        for (const f of DOMAIN_FIELDS) expect(r.body).toHaveProperty(f)
        const d = r.body as Dom
        expect(d.records.map((x) => [x.record, x.type, x.name])).toEqual([
          ['DKIM', 'TXT', expect.stringMatching(/^mr[0-9a-f]{8}\._domainkey\.example\.com$/)],
          ['SPF', 'MX', 'send.example.com'],
          ['SPF', 'TXT', 'send.example.com'],
          ['DMARC', 'TXT', '_dmarc.example.com'],
        ])
        expect(rec(d, 'SPF', 'MX')).toEqual({ record: 'SPF', name: 'send.example.com', type: 'MX', value: HOST, ttl: 'Auto', priority: 10, status: 'not_started', required: true })
        expect(rec(d, 'SPF', 'TXT')).toMatchObject({ value: SPF, ttl: 'Auto', status: 'not_started', required: true })
        expect(rec(d, 'DMARC')).toMatchObject({ value: 'v=DMARC1; p=none;', required: false })
        const dkim = rec(d, 'DKIM')
        expect(dkim).toMatchObject({ ttl: 'Auto', status: 'not_started', required: true })
        expect(dkim.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]+=*$/)
        const key = createPublicKey({ key: Buffer.from(dkim.value.split('p=')[1]!, 'base64'), format: 'der', type: 'spki' })
        expect(key.asymmetricKeyType).toBe('rsa')
        expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048)
        // The private key stays in the database.
        expect(JSON.stringify(r.body)).not.toContain('PRIVATE')
        const stored = await row(h, d.id)
        expect(stored.dkimPrivateKey).toStartWith('-----BEGIN PRIVATE KEY-----')
        expect(stored.dkimSelector).toBe(dkim.name.split('.')[0]!)
        expect(stored.checkWindowStartedAt).toBe('2026-03-02T10:00:00.000Z')
      } },
    { name: 'adds the receiving MX, the tracking CNAME and a custom return path; SPF names MAILROOM_SPF_MECHANISM', method: 'POST', path: '/domains',
      env: { MAILROOM_SPF_MECHANISM: 'ip4:203.0.113.5' },
      body: { name: 'example.com', custom_return_path: 'Bounces', tracking_subdomain: 'links', click_tracking: true, open_tracking: true, tls: 'enforced', region: 'eu', capabilities: { receiving: 'enabled' } }, status: 201,
      expect: { custom_return_path: 'bounces', tracking_subdomain: 'links', click_tracking: true, open_tracking: true, tls: 'enforced', region: 'eu', capabilities: { sending: 'enabled', receiving: 'enabled' } },
      check: (r) => {
        const d = r.body as Dom
        expect(rec(d, 'SPF', 'MX')).toMatchObject({ name: 'bounces.example.com', value: HOST })
        expect(rec(d, 'SPF', 'TXT')).toMatchObject({ name: 'bounces.example.com', value: 'v=spf1 ip4:203.0.113.5 ~all' })
        expect(rec(d, 'Receiving')).toMatchObject({ name: 'example.com', type: 'MX', value: HOST, priority: 10, required: false })
        expect(rec(d, 'Tracking')).toMatchObject({ name: 'links.example.com', type: 'CNAME', value: HOST, required: false })
      } },
    { name: 'stores the name lower-case without its trailing dot', method: 'POST', path: '/domains', body: { name: 'Mail.Example.COM.' }, status: 201, expect: { name: 'mail.example.com' } },
    { name: 'stores an internationalised name as punycode', method: 'POST', path: '/domains', body: { name: 'bücher.example' }, status: 201, expect: { name: 'xn--bcher-kva.example' } },
    { name: 'can turn sending off', method: 'POST', path: '/domains', body: { name: 'example.com', capabilities: { sending: 'disabled', receiving: 'enabled' } }, status: 201, expect: { capabilities: { sending: 'disabled', receiving: 'enabled' } } },
    ...['us-east-1', 'sa-east-1', 'ap-northeast-1', 'us'].map((region) => ({ name: `reads region ${region} as us`, method: 'POST', path: '/domains', body: { name: 'example.com', region }, status: 201, expect: { region: 'us' } })),
    ...['eu-west-1', 'eu'].map((region) => ({ name: `reads region ${region} as eu`, method: 'POST', path: '/domains', body: { name: 'example.com', region }, status: 201, expect: { region: 'eu' } })),
    { name: 'refuses an unknown region', method: 'POST', path: '/domains', body: { name: 'example.com', region: 'ap-south-1' }, status: 422, code: 'invalid_region',
      check: (r) => expect(r.body.message).toContain('ap-south-1') },
    { name: 'refuses a region that is no region at all', method: 'POST', path: '/domains', body: { name: 'example.com', region: 'mars' }, status: 422, code: 'invalid_region' },
    ...['gmail.com', 'GoogleMail.com', 'outlook.com', 'hotmail.co.uk', 'yahoo.co.jp', 'icloud.com', 'proton.me', 'gmx.de', 'mail.gmx.net', 'yandex.ru', 'mail.ru', 'qq.com', '163.com', 'sub.aol.com'].map((name) => ({
      name: `refuses the mailbox provider domain ${name}`, method: 'POST', path: '/domains', body: { name }, status: 422, code: 'mailbox_provider_domain' as const,
    })),
    { name: 'accepts a domain that only looks like a provider', method: 'POST', path: '/domains', body: { name: 'gmail.com.example.org' }, status: 201 },
    ...['localhost', 'exa mple.com', '-bad.example.com', 'example', 'a..example.com', `${'x'.repeat(64)}.example.com`, 'example.123'].map((name) => ({
      name: `refuses the invalid name "${name.slice(0, 20)}"`, method: 'POST', path: '/domains', body: { name }, status: 400, code: 'validation_error' as const,
    })),
    { name: 'refuses a missing name', method: 'POST', path: '/domains', body: {}, status: 400, code: 'validation_error' },
    { name: 'refuses a return path that is not one label', method: 'POST', path: '/domains', body: { name: 'example.com', custom_return_path: 'a.b' }, status: 400, code: 'validation_error' },
    { name: 'refuses a tracking subdomain equal to the return path', method: 'POST', path: '/domains', body: { name: 'example.com', tracking_subdomain: 'send' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown field', method: 'POST', path: '/domains', body: { name: 'example.com', dkim_private_key: 'x' }, status: 400, code: 'validation_error' },
    { name: 'refuses a name already on the account, whatever its case', method: 'POST', path: '/domains', setup: (h) => create(h), body: { name: 'EXAMPLE.com' }, status: 409, code: 'domain_already_exists',
      check: (r, d) => expect(r.body.domain_id).toBe(d.id) },
    { name: 'refuses a name verified on another account', method: 'POST', path: '/domains', setup: async (h) => {
      const o = await h.otherAccount()
      await verifiedDomain(h, {}, o.token)
    }, body: { name: 'example.com' }, status: 409, code: 'domain_verified_elsewhere' },
    { name: 'accepts a name another account holds unverified', method: 'POST', path: '/domains', setup: async (h) => {
      const o = await h.otherAccount()
      await create(h, {}, o.token)
    }, body: { name: 'example.com' }, status: 201 },
    { name: 'refuses a return-path subdomain that is another domain (any account)', method: 'POST', path: '/domains', setup: async (h) => {
      const o = await h.otherAccount()
      await create(h, { name: 'send.example.com' }, o.token)
    }, body: { name: 'example.com' }, status: 409, code: 'return_path_subdomain_in_use',
      check: (r) => expect(r.body.message).toContain('send.example.com') },
    { name: 'accepts the same domain with another return path', method: 'POST', path: '/domains', setup: (h) => create(h, { name: 'send.example.com' }), body: { name: 'example.com', custom_return_path: 'bounce' }, status: 201 },
    { name: 'refuses a domain that is another domain’s return-path subdomain', method: 'POST', path: '/domains', setup: (h) => create(h, { name: 'example.com', custom_return_path: 'mail' }), body: { name: 'mail.example.com' }, status: 409, code: 'return_path_subdomain_in_use' },
    { name: 'refuses a domain over MAILROOM_DOMAIN_LIMIT', method: 'POST', path: '/domains', env: { MAILROOM_DOMAIN_LIMIT: '2' }, setup: async (h) => {
      await create(h, { name: 'one.example' })
      await create(h, { name: 'two.example' })
    }, body: { name: 'three.example' }, status: 422, code: 'domain_limit_reached' },
    { name: 'counts the limit per account', method: 'POST', path: '/domains', env: { MAILROOM_DOMAIN_LIMIT: '1' }, setup: async (h) => {
      const o = await h.otherAccount()
      await create(h, { name: 'theirs.example' }, o.token)
    }, body: { name: 'mine.example' }, status: 201 },
    { name: 'refuses a sending-only key', method: 'POST', path: '/domains', as: 'sending', body: { name: 'example.com' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/domains', as: 'none', body: { name: 'example.com' }, status: 401, code: 'missing_api_key' },
  ])
})

describe('GET /domains and GET /domains/{id}', () => {
  scenarios([
    { name: 'lists domains newest first, without their records (Resend’s list)', method: 'GET', path: '/domains', setup: async (h) => {
      const a = await create(h, { name: 'a.example' })
      h.clock.advance(1000)
      const b = await create(h, { name: 'b.example' })
      return { a, b }
    }, status: 200,
      check: (r, t) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((x: Dom) => x.id)).toEqual([t.b.id, t.a.id])
        expect(r.body.data[0]).toMatchObject({ object: 'domain', name: 'b.example', status: 'pending', region: 'us', capabilities: { sending: 'enabled', receiving: 'disabled' } })
        expect(r.body.data[0]).not.toHaveProperty('records')
      } },
    { name: 'pages with limit and after', method: 'GET', path: '/domains', query: { limit: 1 }, setup: async (h) => {
      await create(h, { name: 'a.example' })
      h.clock.advance(1000)
      await create(h, { name: 'b.example' })
    }, status: 200,
      check: async (r, _t, h) => {
        expect(r.body.has_more).toBe(true)
        expect(r.body.data.map((x: Dom) => x.name)).toEqual(['b.example'])
        const next = await h.call('GET', '/domains', { query: { limit: 1, after: r.body.data[0].id } })
        expect(next.body.data.map((x: Dom) => x.name)).toEqual(['a.example'])
        expect(next.body.has_more).toBe(false)
        const viaCursor = await h.call('GET', '/domains', { query: { limit: 1, cursor: r.body.next_cursor } })
        expect(viaCursor.body.data.map((x: Dom) => x.name)).toEqual(['a.example'])
      } },
    { name: 'lists only the account’s own domains', method: 'GET', path: '/domains', setup: async (h) => {
      const o = await h.otherAccount()
      await create(h, { name: 'theirs.example' }, o.token)
    }, status: 200, expect: { data: [] } },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/domains', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'gets one domain with its records', method: 'GET', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, status: 200,
      expect: { object: 'domain', name: 'example.com', status: 'pending' }, check: (r) => expect(r.body.records).toHaveLength(4) },
    { name: 'gets one domain by its upper-case id', method: 'GET', setup: (h) => create(h), path: (d) => `/domains/${d.id.toUpperCase()}`, status: 200, expect: { name: 'example.com' } },
    { name: 'answers 404 for a domain that does not exist', method: 'GET', path: `/domains/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s domain', method: 'GET', setup: async (h) => create(h, {}, (await h.otherAccount()).token), path: (d) => `/domains/${d.id}`, status: 404, code: 'not_found' },
    { name: 'refuses a path id that is no UUID', method: 'GET', path: '/domains/example.com', status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/domains', as: 'sending', status: 403, code: 'restricted_api_key' },
  ])
})

describe('PATCH /domains/{id}', () => {
  /** A domain with the tracking subdomain `links`, its CNAME published and verified. */
  const tracked = async (h: Harness) => verifiedDomain(h, { tracking_subdomain: 'links' })
  scenarios([
    { name: 'turns tracking on once the tracking CNAME verified (answers the domain, a superset of Resend’s {object, id})', method: 'PATCH', setup: tracked, path: (d) => `/domains/${d.id}`,
      body: { click_tracking: true, open_tracking: true }, status: 200,
      expect: { object: 'domain', click_tracking: true, open_tracking: true, tracking_subdomain: 'links' },
      check: async (r, d, h) => {
        expect(r.body.id).toBe(d.id)
        expect(rec(r.body, 'Tracking').status).toBe('verified')
        expect(await row(h, d.id)).toMatchObject({ clickTracking: true, openTracking: true })
      } },
    { name: 'refuses tracking without a tracking subdomain', method: 'PATCH', setup: (h) => verifiedDomain(h), path: (d) => `/domains/${d.id}`, body: { click_tracking: true }, status: 422, code: 'tracking_subdomain_unverified',
      check: (r) => expect(r.body.message).toContain('tracking_subdomain') },
    { name: 'refuses tracking while the tracking CNAME is not verified', method: 'PATCH', setup: (h) => create(h, { tracking_subdomain: 'links' }), path: (d) => `/domains/${d.id}`, body: { open_tracking: true }, status: 422, code: 'tracking_subdomain_unverified',
      check: (r, d) => expect(r.body.message).toContain(`links.example.com is not verified: publish a CNAME from it to ${HOST}, run POST /domains/${d.id}/verify`) },
    { name: 'refuses tracking on a new tracking subdomain in the same request', method: 'PATCH', setup: tracked, path: (d) => `/domains/${d.id}`, body: { tracking_subdomain: 'clicks', click_tracking: true }, status: 422, code: 'tracking_subdomain_unverified' },
    { name: 'accepts tracking on at creation (Resend), and turning it off later', method: 'PATCH', setup: (h) => create(h, { click_tracking: true }), path: (d) => `/domains/${d.id}`, body: { click_tracking: false }, status: 200, expect: { click_tracking: false } },
    { name: 'sets a tracking subdomain and adds its CNAME', method: 'PATCH', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, body: { tracking_subdomain: 'Links' }, status: 200,
      expect: { tracking_subdomain: 'links' }, check: (r) => expect(rec(r.body, 'Tracking')).toMatchObject({ name: 'links.example.com', type: 'CNAME', value: HOST, status: 'not_started' }) },
    { name: 'changes the tracking subdomain; its CNAME must verify again', method: 'PATCH', setup: tracked, path: (d) => `/domains/${d.id}`, body: { tracking_subdomain: 'clicks' }, status: 200,
      check: (r) => {
        expect(rec(r.body, 'Tracking')).toMatchObject({ name: 'clicks.example.com', status: 'not_started' })
        expect(r.body.records.filter((x: Rec) => x.record === 'Tracking')).toHaveLength(1)
        expect(r.body.status).toBe('verified')
      } },
    { name: 'refuses to remove the tracking subdomain (null)', method: 'PATCH', setup: tracked, path: (d) => `/domains/${d.id}`, body: { tracking_subdomain: null }, status: 422, code: 'tracking_subdomain_cannot_be_removed' },
    { name: 'refuses to remove the tracking subdomain (empty)', method: 'PATCH', setup: tracked, path: (d) => `/domains/${d.id}`, body: { tracking_subdomain: '' }, status: 422, code: 'tracking_subdomain_cannot_be_removed' },
    { name: 'takes null when there is no tracking subdomain', method: 'PATCH', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, body: { tracking_subdomain: null }, status: 200, expect: { tracking_subdomain: null } },
    { name: 'refuses a tracking subdomain that is not one label', method: 'PATCH', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, body: { tracking_subdomain: 'a.b' }, status: 400, code: 'validation_error' },
    { name: 'refuses a new name', method: 'PATCH', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, body: { name: 'other.example' }, status: 422, code: 'domain_field_immutable',
      check: (r) => expect(r.body.message).toContain('`name`') },
    { name: 'refuses a new region', method: 'PATCH', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, body: { region: 'eu' }, status: 422, code: 'domain_field_immutable' },
    { name: 'refuses a new return path', method: 'PATCH', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, body: { custom_return_path: 'bounce' }, status: 422, code: 'domain_field_immutable' },
    { name: 'refuses a new tls mode', method: 'PATCH', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, body: { tls: 'enforced' }, status: 422, code: 'domain_field_immutable' },
    { name: 'refuses new capabilities', method: 'PATCH', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, body: { capabilities: { receiving: 'enabled' } }, status: 422, code: 'domain_field_immutable' },
    { name: 'accepts the unchangeable fields with their current values', method: 'PATCH', setup: (h) => create(h), path: (d) => `/domains/${d.id}`,
      body: { name: 'Example.com', region: 'us-east-1', custom_return_path: 'send', tls: 'opportunistic', capabilities: { sending: 'enabled', receiving: 'disabled' }, open_tracking: false }, status: 200, expect: { name: 'example.com' } },
    { name: 'answers 404 for another account’s domain', method: 'PATCH', setup: async (h) => create(h, {}, (await h.otherAccount()).token), path: (d) => `/domains/${d.id}`, body: { click_tracking: false }, status: 404, code: 'not_found' },
  ])
})

describe('DELETE /domains/{id}', () => {
  scenarios([
    { name: 'removes the domain: {object, id, deleted: true}', method: 'DELETE', setup: (h) => create(h), path: (d) => `/domains/${d.id}`, status: 200,
      check: async (r, d, h) => {
        expect(r.body).toEqual({ object: 'domain', id: d.id, deleted: true })
        expectError(await h.call('GET', `/domains/${d.id}`), 'not_found', 404)
        expect((await create(h)).name).toBe('example.com')
      } },
    { name: 'answers 404 for another account’s domain', method: 'DELETE', setup: async (h) => create(h, {}, (await h.otherAccount()).token), path: (d) => `/domains/${d.id}`, status: 404, code: 'not_found',
      check: async (_r, d, h) => expect(await row(h, d.id)).toBeDefined() },
    { name: 'answers 404 for a domain that does not exist', method: 'DELETE', path: `/domains/${missing}`, status: 404, code: 'not_found' },
  ])
})

describe('POST /domains/{id}/verify', () => {
  scenarios([
    { name: 'verifies a domain whose records are published (Resend’s SDK sends an empty JSON body)', method: 'POST', setup: async (h) => {
      const d = await create(h, { tracking_subdomain: 'links', capabilities: { receiving: 'enabled' } })
      publish(d)
      return d
    }, path: (d) => `/domains/${d.id}/verify`, headers: { 'content-type': 'application/json' }, status: 200,
      expect: { object: 'domain', status: 'verified', verified_at: '2026-03-02T10:00:00.000Z', last_checked_at: '2026-03-02T10:00:00.000Z' },
      check: async (r, d, h) => {
        expect(r.body.id).toBe(d.id)
        expect(r.body.records.map((x: Rec) => `${x.record}/${x.type}:${x.status}`)).toEqual([
          'DKIM/TXT:verified', 'SPF/MX:verified', 'SPF/TXT:verified', 'DMARC/TXT:verified', 'Receiving/MX:verified', 'Tracking/CNAME:verified',
        ])
        // The DKIM value is longer than one TXT string: the server splits it and the check joins it.
        expect(rec(d, 'DKIM').value.length).toBeGreaterThan(255)
        const found = await findVerifiedSendingDomain(h.root, h.accountId, 'Example.COM')
        expect(found?.id).toBe(d.id)
        expect(found?.dkimPrivateKey).toStartWith('-----BEGIN PRIVATE KEY-----')
        expect((await h.call('GET', `/domains/${d.id}`)).body.status).toBe('verified')
      } },
    { name: 'is partially verified when only DKIM is published; the others say what is missing', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d, (r) => r.record === 'DKIM')
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 200, expect: { status: 'partially_verified', verified_at: null },
      check: async (r, d, h) => {
        expect(rec(r.body, 'DKIM').status).toBe('verified')
        expect(rec(r.body, 'SPF', 'MX')).toMatchObject({ status: 'failed', detail: expect.stringContaining('send.example.com') })
        expect(rec(r.body, 'DMARC')).toMatchObject({ status: 'failed', detail: expect.stringContaining('_dmarc.example.com') })
        expect(await findVerifiedSendingDomain(h.root, h.accountId, 'example.com')).toBeNull()
        expect((await row(h, d.id)).status).toBe('partially_verified')
      } },
    { name: 'stays pending when nothing is published', method: 'POST', setup: (h) => create(h), path: (d) => `/domains/${d.id}/verify`, status: 200, expect: { status: 'pending' },
      check: (r) => {
        for (const x of r.body.records) expect(x.status).toBe('failed')
        expect(rec(r.body, 'DKIM').detail).toContain('NXDOMAIN')
      } },
    { name: 'says what it found instead: an MX to another host, an SPF record without this server', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d, (r) => r.record === 'DKIM')
      dns.set('send.example.com', 'MX', [{ exchange: 'feedback.elsewhere.test', priority: 10 }])
      dns.set('send.example.com', 'TXT', ['v=spf1 include:_spf.elsewhere.test ~all', 'google-site-verification=abc'])
      dns.set('_spf.elsewhere.test', 'TXT', ['v=spf1 ip4:198.51.100.0/24 -all'])
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 200, expect: { status: 'partially_verified' },
      check: (r) => {
        expect(rec(r.body, 'SPF', 'MX').detail).toContain('feedback.elsewhere.test')
        expect(rec(r.body, 'SPF', 'TXT').detail).toContain(`does not authorise a:${HOST}`)
      } },
    { name: 'accepts an SPF record that authorises this server through an include', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d, (r) => r.type !== 'TXT' || r.record !== 'SPF')
      dns.set('send.example.com', 'TXT', ['v=spf1 include:_spf.provider.test ~all'])
      dns.set('_spf.provider.test', 'TXT', [`v=spf1 ip4:192.0.2.0/24 a:${HOST} -all`])
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 200, expect: { status: 'verified' } },
    { name: 'accepts exactly 10 DNS lookups in SPF', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d, (r) => r.type !== 'TXT' || r.record !== 'SPF')
      // include (1) + 8 chained includes (8) + the final `a` (1) = 10
      dns.set('send.example.com', 'TXT', [spfChain('ten', 9)])
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 200, expect: { status: 'verified' } },
    { name: 'refuses an SPF record that needs more than 10 lookups (a chain of includes)', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d, (r) => r.type !== 'TXT' || r.record !== 'SPF')
      dns.set('send.example.com', 'TXT', [spfChain('eleven', 10)])
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 422, code: 'spf_lookup_limit',
      check: async (r, d, h) => {
        expect(r.body.message).toContain('send.example.com')
        expect((await row(h, d.id)).lastCheckedAt).toBeNull()
      } },
    { name: 'counts a, mx, exists and redirect too', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d, (r) => r.type !== 'TXT' || r.record !== 'SPF')
      dns.set('send.example.com', 'TXT', [`v=spf1 a:${HOST} a mx mx:x.test exists:y.test ptr include:inc.test redirect=red.test`])
      dns.set('inc.test', 'TXT', ['v=spf1 a mx -all'])
      dns.set('red.test', 'TXT', ['v=spf1 mx -all'])
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 422, code: 'spf_lookup_limit' },
    { name: 'refuses two SPF records at the return path', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d)
      dns.set('send.example.com', 'TXT', [SPF, 'v=spf1 include:_spf.other.test ~all'])
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 422, code: 'spf_conflict', check: (r) => expect(r.body.message).toContain('2 SPF records') },
    { name: 'refuses a DKIM record with another key at the selector', method: 'POST', setup: async (h) => {
      const d = await create(h)
      const other = await create(h, { name: 'other.example' })
      publish(d)
      dns.set(rec(d, 'DKIM').name, 'TXT', [rec(other, 'DKIM').value])
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 422, code: 'dkim_key_mismatch',
      check: (r, d) => expect(r.body.message).toContain(rec(d, 'DKIM').name) },
    { name: 'follows a CNAME at the DKIM selector (a delegated key)', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d, (r) => r.record !== 'DKIM')
      dns.set(rec(d, 'DKIM').name, 'CNAME', ['key1.dkim.provider.test'])
      dns.set('key1.dkim.provider.test', 'TXT', [rec(d, 'DKIM').value])
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 200, expect: { status: 'verified' } },
    { name: 'marks a record temporary_failure when its lookup fails (SERVFAIL)', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d)
      dns.failing(true, rec(d, 'DKIM').name)
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 200, expect: { status: 'partially_verified' },
      check: (r) => expect(rec(r.body, 'DKIM')).toMatchObject({ status: 'temporary_failure', detail: expect.stringContaining('SERVFAIL') }) },
    { name: 'answers dns_unreachable when every DNS server fails', method: 'POST', setup: async (h) => {
      const d = await create(h)
      publish(d)
      dns.failing(true)
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 503, code: 'dns_unreachable',
      check: async (r, d, h) => {
        expect(r.headers.get('retry-after')).toBe('30')
        expect(r.body.message).toContain('SERVFAIL')
        expect((await row(h, d.id)).lastCheckedAt).toBeNull()
      } },
    { name: 'refuses to verify a name another account verified first', method: 'POST', setup: async (h) => {
      const mine = await create(h)
      const o = await h.otherAccount()
      const theirs = await create(h, {}, o.token)
      publish(theirs)
      expect((await verify(h, theirs.id, undefined, o.token)).body.status).toBe('verified')
      return mine
    }, path: (d) => `/domains/${d.id}/verify`, status: 409, code: 'domain_verified_elsewhere' },
    { name: 'answers 404 for another account’s domain', method: 'POST', setup: async (h) => create(h, {}, (await h.otherAccount()).token), path: (d) => `/domains/${d.id}/verify`, status: 404, code: 'not_found' },
    { name: 'refuses an unknown body field', method: 'POST', setup: (h) => create(h), path: (d) => `/domains/${d.id}/verify`, body: { force: true }, status: 400, code: 'validation_error' },
  ])

  test('answers dns_unreachable when the DNS server is gone', async () => {
    const gone = await startDnsServer()
    const address = gone.address
    await gone.close()
    const h = await harness({ MAILROOM_DNS_SERVERS: address, MAILROOM_HOSTNAME: HOST })
    try {
      const d = await create(h)
      const r = await verify(h, d.id)
      expectError(r, 'dns_unreachable', 503)
      expect(r.body.message).toContain(address)
    } finally {
      await h.close()
    }
  })
})

describe('the re-check job', () => {
  let h: Harness
  const run = () => h.scheduler.runNow('recheck-domains') as Promise<{ checked: number; closed: number; failed: number }>
  const get = async (id: string) => (await h.call('GET', `/domains/${id}`)).body as Dom

  beforeAll(async () => {
    h = await open()
  })
  afterAll(async () => {
    await h.close()
  })

  test('is a scheduled job', () => {
    expect(h.scheduler.jobs().map((j) => j.name)).toContain('recheck-domains')
  })

  test('notices a DKIM record that disappears: the domain is no longer verified, and recovers when it is back', async () => {
    dns.reset()
    const d = await verifiedDomain(h, { name: 'gone.example' })
    dns.remove(rec(d, 'DKIM').name)
    h.clock.advance(HOUR)
    await run()
    expect((await get(d.id)).status).toBe('verified') // checked every 6 hours only
    h.clock.advance(5 * HOUR + 1000)
    await run()
    const after = await get(d.id)
    expect(after.status).toBe('partially_verified')
    expect(rec(after, 'DKIM')).toMatchObject({ status: 'failed', detail: expect.stringContaining('NXDOMAIN') })
    expect(await findVerifiedSendingDomain(h.root, h.accountId, 'gone.example')).toBeNull()
    publish(d)
    h.clock.advance(6 * HOUR + 1000)
    await run()
    expect((await get(d.id)).status).toBe('verified')
    expect((await findVerifiedSendingDomain(h.root, h.accountId, 'gone.example'))?.id).toBe(d.id)
    await h.call('DELETE', `/domains/${d.id}`)
  })

  test('verifies a pending domain inside its window without a verify call', async () => {
    dns.reset()
    const d = await create(h, { name: 'later.example' })
    await run()
    expect((await get(d.id)).status).toBe('pending')
    publish(d)
    h.clock.advance(5 * 60_000)
    await run()
    const after = await get(d.id)
    expect(after.status).toBe('verified')
    expect(after.verified_at).toBe(after.last_checked_at)
    await h.call('DELETE', `/domains/${d.id}`)
  })

  test('one bad domain does not stop the rest', async () => {
    dns.reset()
    silentLog.errors.length = 0
    const bad = await create(h, { name: 'bad.example' })
    // A name no DNS query can carry: every lookup of this domain fails.
    await h.root.db.write((tx) => tx.update(domains).set({ name: `${'x'.repeat(70)}.example` }).where(eq(domains.id, bad.id)))
    h.clock.advance(1000)
    const good = await create(h, { name: 'good.example' })
    publish(good)
    const result = await run()
    expect(result.failed).toBe(1)
    expect((await get(good.id)).status).toBe('verified')
    expect(silentLog.errors.some((e) => e.includes('domain re-check failed') && e.includes(bad.id))).toBe(true)
    await h.call('DELETE', `/domains/${bad.id}`)
    await h.call('DELETE', `/domains/${good.id}`)
  })
})

describe('the verification window', () => {
  test('closes after 72 hours: the job marks the domain failed and stops; verify reopens it', async () => {
    dns.reset()
    const h = await open()
    try {
      const d = await create(h)
      h.clock.advance(73 * HOUR)
      await h.scheduler.runNow('recheck-domains')
      let got = (await h.call('GET', `/domains/${d.id}`)).body
      expect(got).toMatchObject({ status: 'failed', check_window_ends_at: '2026-03-05T10:00:00.000Z' })
      const asked = dns.queries.length
      h.clock.advance(HOUR)
      await h.scheduler.runNow('recheck-domains')
      expect(dns.queries.length).toBe(asked) // no more checks
      // Within 7 days of the close, verify checks again and opens a new window.
      publish(d, (r) => r.record === 'DKIM')
      const v = await verify(h, d.id)
      expect(v.status).toBe(200)
      expect(v.body).toMatchObject({ status: 'partially_verified', check_window_ends_at: '2026-03-08T12:00:00.000Z' })
      publish(d)
      h.clock.advance(5 * 60_000)
      await h.scheduler.runNow('recheck-domains')
      got = (await h.call('GET', `/domains/${d.id}`)).body
      expect(got.status).toBe('verified')
    } finally {
      await h.close()
    }
  })

  scenarios([
    { name: 'refuses to reopen a window closed more than 7 days ago without reopen: true', method: 'POST', setup: async (h) => {
      const d = await create(h)
      h.clock.advance(72 * HOUR + 8 * DAY)
      await h.scheduler.runNow('recheck-domains')
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 422, code: 'domain_check_window_expired',
      check: async (r, d, h) => {
        expect(r.body.message).toContain('"reopen": true')
        publish(d)
        const v = await verify(h, d.id, { reopen: true })
        expect(v.status).toBe(200)
        expect(v.body).toMatchObject({ status: 'verified', check_window_ends_at: new Date(h.clock.now() + 72 * HOUR).toISOString() })
      } },
    { name: 'never expires for a domain that verified once', method: 'POST', setup: async (h) => {
      const d = await verifiedDomain(h)
      dns.remove(rec(d, 'DKIM').name)
      h.clock.advance(30 * DAY)
      return d
    }, path: (d) => `/domains/${d.id}/verify`, status: 200, expect: { status: 'partially_verified' } },
  ])
})

describe('POST /domains/{id}/dkim/rotate', () => {
  test('the old key signs until the new record verifies; then the new key is current and the old record goes', async () => {
    dns.reset()
    const h = await open()
    try {
      const d = await verifiedDomain(h)
      const before = await row(h, d.id)
      const r = await h.call('POST', `/domains/${d.id}/dkim/rotate`, { headers: { 'content-type': 'application/json' } })
      expect(r.status).toBe(200)
      const dkims = (r.body as Dom).records.filter((x) => x.record === 'DKIM')
      expect(dkims.map((x) => [x.name.split('.')[0], x.status, x.required])).toEqual([
        [before.dkimSelector, 'verified', true],
        [expect.stringMatching(/^mr[0-9a-f]{8}$/), 'not_started', false],
      ])
      expect(r.body.status).toBe('verified')
      const rotating = await row(h, d.id)
      expect(rotating).toMatchObject({ dkimSelector: before.dkimSelector, dkimPrivateKey: before.dkimPrivateKey, dkimNextSelector: dkims[1]!.name.split('.')[0] })
      expect(rotating.dkimNextPrivateKey).toStartWith('-----BEGIN PRIVATE KEY-----')
      expect(rotating.dkimNextPublicKey).not.toBe(before.dkimPublicKey)
      expect(JSON.stringify(r.body)).not.toContain('PRIVATE')

      // Not yet published: the old key stays current.
      let v = await verify(h, d.id)
      expect(v.body.status).toBe('verified')
      expect(v.body.records.filter((x: Rec) => x.record === 'DKIM').map((x: Rec) => x.status)).toEqual(['verified', 'failed'])
      expect((await row(h, d.id)).dkimSelector).toBe(before.dkimSelector)
      expect((await findVerifiedSendingDomain(h.root, h.accountId, 'example.com'))?.dkimSelector).toBe(before.dkimSelector)

      // Published: the next check promotes it.
      dns.set(dkims[1]!.name, 'TXT', [dkims[1]!.value])
      v = await verify(h, d.id)
      expect(v.status).toBe(200)
      expect(v.body.status).toBe('verified')
      const after = await row(h, d.id)
      expect(after).toMatchObject({
        dkimSelector: rotating.dkimNextSelector,
        dkimPrivateKey: rotating.dkimNextPrivateKey,
        dkimPublicKey: rotating.dkimNextPublicKey,
        dkimNextSelector: null,
        dkimNextPrivateKey: null,
        dkimNextPublicKey: null,
      })
      expect(v.body.records.filter((x: Rec) => x.record === 'DKIM')).toEqual([{ ...dkims[1]!, status: 'verified', required: true }])
      expect((await findVerifiedSendingDomain(h.root, h.accountId, 'example.com'))?.dkimSelector).toBe(rotating.dkimNextSelector!)
      // The old record can now be removed without consequence.
      dns.remove(dkims[0]!.name)
      expect((await verify(h, d.id)).body.status).toBe('verified')
    } finally {
      await h.close()
    }
  })

  test('the re-check job promotes a published new key too, and rotating again replaces a pending key', async () => {
    dns.reset()
    const h = await open()
    try {
      const d = await verifiedDomain(h)
      const first = (await h.call('POST', `/domains/${d.id}/dkim/rotate`)).body as Dom
      const second = (await h.call('POST', `/domains/${d.id}/dkim/rotate`)).body as Dom
      const pending = second.records.filter((x) => x.record === 'DKIM')
      expect(pending).toHaveLength(2)
      expect(pending[1]!.name).not.toBe(first.records.filter((x) => x.record === 'DKIM')[1]!.name)
      dns.set(pending[1]!.name, 'TXT', [pending[1]!.value])
      h.clock.advance(5 * 60_000)
      await h.scheduler.runNow('recheck-domains')
      const got = (await h.call('GET', `/domains/${d.id}`)).body as Dom
      expect(got.records.filter((x) => x.record === 'DKIM').map((x) => x.name)).toEqual([pending[1]!.name])
      expect(got.status).toBe('verified')
    } finally {
      await h.close()
    }
  })

  scenarios([
    { name: 'answers 404 for another account’s domain', method: 'POST', setup: async (h) => create(h, {}, (await h.otherAccount()).token), path: (d) => `/domains/${d.id}/dkim/rotate`, status: 404, code: 'not_found' },
    { name: 'refuses a sending-only key', method: 'POST', setup: (h) => create(h), as: 'sending', path: (d) => `/domains/${d.id}/dkim/rotate`, status: 403, code: 'restricted_api_key' },
  ])
})

describe('findVerifiedSendingDomain', () => {
  test('finds only verified domains with sending enabled, on the given account', async () => {
    dns.reset()
    const h = await open()
    try {
      const o = await h.otherAccount()
      const pending = await create(h, { name: 'pending.example' })
      const noSend = await verifiedDomain(h, { name: 'nosend.example', capabilities: { sending: 'disabled', receiving: 'enabled' } })
      const ok = await verifiedDomain(h, { name: 'ok.example' })
      expect(noSend.status).toBe('verified')
      expect(await findVerifiedSendingDomain(h.root, h.accountId, pending.name)).toBeNull()
      expect(await findVerifiedSendingDomain(h.root, h.accountId, 'nosend.example')).toBeNull()
      expect((await findVerifiedSendingDomain(h.root, h.accountId, 'OK.example.'))?.id).toBe(ok.id)
      expect(await findVerifiedSendingDomain(h.root, o.accountId, 'ok.example')).toBeNull()
    } finally {
      await h.close()
    }
  })
})
