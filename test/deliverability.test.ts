// Deliverability: the rates report from the event record, live DNS checks of a
// domain, and blocklists, answered by a real DNS server on 127.0.0.1 that also
// serves the blocklist zones.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { reverseName, reversedLabels } from '../src/dedicated-ips/address'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { message, sent, verifiedDomain } from './support/emails'
import { expectError, harness, type Harness } from './support/harness'
import { record } from './support/metrics-fixtures'
import { asCookie, person } from './support/people'
import { scenarios, type Scenario } from './support/scenarios'

let dns: TestDnsServer
beforeAll(async () => {
  dns = await startDnsServer()
})
afterAll(() => dns.close())

const HOST = 'mx.mailroom.test'
const ZONES = { MAILROOM_DNSBL_ZONES: 'zen.bl.test,cop.bl.test', MAILROOM_DBL_ZONES: 'dbl.bl.test', MAILROOM_OUTBOUND_IPS: '127.0.0.1' }
const env = () => ({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_HOSTNAME: HOST, ...ZONES })

/** A domain added through the API with every record it asks for published (and DMARC as given). */
async function published(h: Harness, name: string, dmarc: string | null = 'v=DMARC1; p=reject') {
  const created = await h.call('POST', '/domains', { body: { name } })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  for (const r of created.body.records as { record: string; name: string; type: 'TXT' | 'MX'; value: string; priority?: number }[]) {
    if (r.record === 'DMARC') continue
    dns.set(r.name, r.type, [r.type === 'MX' ? { exchange: r.value, priority: r.priority ?? 10 } : r.value])
  }
  if (dmarc) dns.set(`_dmarc.${name}`, 'TXT', [dmarc])
  return created.body as { id: string; records: { record: string; name: string; type: string; value: string }[] }
}

/** The outbound address has a PTR that resolves back to it. */
function goodPtr() {
  dns.set(reverseName('127.0.0.1'), 'PTR', [HOST])
  dns.set(HOST, 'A', ['127.0.0.1'])
}

const checkOf = (r: { body: { checks: { check: string }[] } }, name: string) => r.body.checks.find((c) => c.check === name) as Record<string, any>

const domainChecks: Scenario[] = [
  {
    name: 'every record right: all pass, with the SPF lookup count, the DMARC policy and forward-confirmed PTR',
    method: 'GET',
    path: (c) => `/deliverability/domains/${c.id}`,
    setup: async (h) => {
      goodPtr()
      return published(h, 'good.test')
    },
    status: 200,
    expect: {
      object: 'deliverability_check',
      domain: 'good.test',
      status: 'pass',
      checks: [
        { check: 'spf', status: 'pass', name: 'send.good.test', lookups: 1, fix: null },
        { check: 'dkim', status: 'pass', fix: null },
        { check: 'return_path_mx', status: 'pass' },
        { check: 'dmarc', status: 'pass', policy: 'reject' },
        { check: 'ptr', status: 'pass', addresses: [{ ip: '127.0.0.1', ptr: HOST, forward_confirmed: true }] },
      ],
    },
  },
  {
    name: 'nothing published: each failure with its fix',
    method: 'GET',
    path: (c) => `/deliverability/domains/${c.id}`,
    setup: async (h) => (await h.call('POST', '/domains', { body: { name: 'bare.test', capabilities: { receiving: 'enabled' } } })).body,
    status: 200,
    check: (r) => {
      expect(r.body.status).toBe('fail')
      for (const name of ['spf', 'dkim', 'return_path_mx', 'dmarc', 'receiving_mx', 'ptr']) {
        const c = checkOf(r, name)
        expect({ name, status: c.status }).toEqual({ name, status: 'fail' })
        expect(c.fix).toEqual(expect.any(String))
      }
      expect(checkOf(r, 'spf').fix).toContain('Publish a TXT record at send.bare.test: v=spf1 a:mx.mailroom.test ~all')
      expect(checkOf(r, 'dmarc').fix).toContain('_dmarc.bare.test')
      expect(checkOf(r, 'ptr').fix).toContain('set the PTR of 127.0.0.1')
    },
  },
  {
    name: 'another DKIM key, DMARC p=none, a PTR that does not resolve back',
    method: 'GET',
    path: (c) => `/deliverability/domains/${c.id}`,
    setup: async (h) => {
      const d = await published(h, 'mixed.test', 'v=DMARC1; p=none; rua=mailto:d@mixed.test')
      const dkim = d.records.find((r) => r.record === 'DKIM')!
      dns.set(dkim.name, 'TXT', ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAsomethingelse'])
      dns.set(reverseName('127.0.0.1'), 'PTR', ['elsewhere.test'])
      return d
    },
    status: 200,
    check: (r) => {
      expect(r.body.status).toBe('fail')
      expect(checkOf(r, 'dkim')).toMatchObject({ status: 'fail', detail: expect.stringContaining('publishes another key') })
      expect(checkOf(r, 'dmarc')).toMatchObject({ status: 'warning', policy: 'none', fix: expect.stringContaining('p=quarantine') })
      expect(checkOf(r, 'ptr')).toMatchObject({ status: 'fail', addresses: [{ ip: '127.0.0.1', ptr: 'elsewhere.test', forward_confirmed: false }], fix: expect.stringContaining('Publish an A record for elsewhere.test') })
    },
  },
  {
    name: 'a domain sending from a dedicated IP is judged by that address’s PTR',
    method: 'GET',
    path: (c) => `/deliverability/domains/${c.id}`,
    env: { MAILROOM_DEDICATED_IP_PINS: 'pinned.test=127.0.0.3' },
    setup: async (h) => {
      goodPtr()
      return published(h, 'pinned.test')
    },
    status: 200,
    check: (r) => expect(checkOf(r, 'ptr')).toMatchObject({ status: 'fail', name: '127.0.0.3', addresses: [{ ip: '127.0.0.3', ptr: null, forward_confirmed: false }] }),
  },
  {
    name: 'DNS does not answer',
    method: 'GET',
    path: (c) => `/deliverability/domains/${c.id}`,
    setup: async (h) => {
      const d = await published(h, 'down.test')
      dns.failing(true)
      return d
    },
    status: 503,
    code: 'dns_unreachable',
  },
  { name: 'an unknown domain', method: 'GET', path: '/deliverability/domains/00000000-0000-4000-8000-000000000000', status: 404, code: 'not_found' },
]

const blocklists: Scenario[] = [
  {
    name: 'a listed address (with its reason), a clean one, an unknown zone, and a listed domain that is now blocked',
    method: 'GET',
    path: '/deliverability/blocklists',
    setup: async (h) => {
      dns.set(`${reversedLabels('127.0.0.1')}.zen.bl.test`, 'A', ['127.0.0.2'])
      dns.set(`${reversedLabels('127.0.0.1')}.zen.bl.test`, 'TXT', ['Listed by ZEN, see https://check.bl.test/127.0.0.1'])
      dns.failing(true, `${reversedLabels('127.0.0.1')}.cop.bl.test`)
      dns.set('spammy.test.dbl.bl.test', 'A', ['127.0.1.2'])
      await verifiedDomain(h, 'spammy.test')
      await verifiedDomain(h, 'fine.test')
      await verifiedDomain(h, 'pending.test', { status: 'pending' })
    },
    status: 200,
    expect: {
      object: 'blocklist_report',
      zones: { addresses: ['zen.bl.test', 'cop.bl.test'], domains: ['dbl.bl.test'] },
      addresses: [
        {
          ip: '127.0.0.1',
          source: 'default',
          dedicated_ip_id: null,
          status: 'listed',
          listings: [
            { zone: 'zen.bl.test', status: 'listed', code: '127.0.0.2', reason: 'Listed by ZEN, see https://check.bl.test/127.0.0.1' },
            { zone: 'cop.bl.test', status: 'unknown', code: null },
          ],
        },
      ],
      domains: [
        { name: 'fine.test', status: 'clean', blocked: false, listings: [{ zone: 'dbl.bl.test', status: 'clean', code: null, reason: null }] },
        { name: 'spammy.test', status: 'listed', blocked: true, listings: [{ zone: 'dbl.bl.test', status: 'listed', code: '127.0.1.2' }] },
      ],
    },
    check: async (r, _c, h) => {
      expect(r.body.domains).toHaveLength(2)
      expectError(await h.call('POST', '/emails', { body: message({ from: 'a@spammy.test' }) }), 'sending_domain_blocked', 403)
      expect((await h.call('POST', '/emails', { body: message({ from: 'a@fine.test' }) })).status).toBe(200)
      const report = await h.call('GET', '/deliverability/report')
      expect(report.body.domains.find((d: { name: string }) => d.name === 'spammy.test')).toMatchObject({ blocklisted: true })
    },
  },
  {
    name: 'dedicated IPs are checked beside the default address; a zone’s error answer is unknown, not a listing',
    method: 'GET',
    path: '/deliverability/blocklists',
    env: { MAILROOM_DNSBL_ZONES: 'zen.bl.test' },
    setup: async (h) => {
      const p = await person(h)
      const ip = await h.call('POST', '/dedicated-ips', { ...asCookie(p.cookie), body: { ip: '127.0.0.2', warmup: false } })
      dns.set(`${reversedLabels('127.0.0.2')}.zen.bl.test`, 'A', ['127.255.255.254'])
      return ip.body
    },
    status: 200,
    check: (r, ip) =>
      expect(r.body.addresses).toEqual([
        { ip: '127.0.0.2', source: 'dedicated', dedicated_ip_id: ip.id, status: 'unknown', listings: [{ zone: 'zen.bl.test', status: 'unknown', code: '127.255.255.254', reason: expect.stringContaining('error code') }] },
        { ip: '127.0.0.1', source: 'default', dedicated_ip_id: null, status: 'clean', listings: [{ zone: 'zen.bl.test', status: 'clean', code: null, reason: null }] },
      ]),
  },
  {
    name: 'no DNS answer at all',
    method: 'GET',
    path: '/deliverability/blocklists',
    setup: async () => dns.failing(true),
    status: 503,
    code: 'dns_unreachable',
  },
]

const claims: Scenario[] = [
  { name: 'a public suffix', method: 'POST', path: '/domains', body: { name: 'co.uk' }, status: 422, code: 'domain_not_claimable' },
  { name: 'a private public suffix', method: 'POST', path: '/domains', body: { name: 'github.io' }, status: 422, code: 'domain_not_claimable' },
  { name: 'this host’s own name', method: 'POST', path: '/domains', body: { name: 'bounces.mx.mailroom.test' }, status: 422, code: 'domain_not_claimable' },
  { name: 'the parent of the host name is the operator’s to use', method: 'POST', path: '/domains', body: { name: 'mailroom.test' }, status: 201 },
  {
    name: 'a domain on a domain blocklist',
    method: 'POST',
    path: '/domains',
    setup: async () => {
      dns.set('spam.test.dbl.bl.test', 'A', ['127.0.1.2'])
      dns.set('spam.test.dbl.bl.test', 'TXT', ['https://check.bl.test/spam.test'])
    },
    body: { name: 'spam.test' },
    status: 422,
    code: 'domain_blocklisted',
    check: async (r, _c, h) => {
      expect(r.body.message).toContain('dbl.bl.test (https://check.bl.test/spam.test)')
      expect((await h.call('GET', '/domains')).body.data).toEqual([])
    },
  },
  {
    name: 'a blocklist that does not answer lets the domain in',
    method: 'POST',
    path: '/domains',
    setup: async () => dns.failing(true, 'maybe.test.dbl.bl.test'),
    body: { name: 'maybe.test' },
    status: 201,
  },
]

describe('GET /deliverability/domains/{id}', () => scenarios(domainChecks, { env, reset: () => dns.reset() }))
describe('GET /deliverability/blocklists', () => scenarios(blocklists, { env, reset: () => dns.reset() }))
describe('POST /domains: claimable and not blocklisted', () => scenarios(claims, { env, reset: () => dns.reset() }))

describe('the daily blocklist job', () => {
  let h: Harness
  beforeAll(async () => {
    dns.reset()
    h = await harness(env())
  })
  afterAll(() => h.close())

  test('blocks a sending domain found listed, and lifts the block once it is delisted', async () => {
    await verifiedDomain(h, 'acme.dev')
    dns.set('acme.dev.dbl.bl.test', 'A', ['127.0.1.4'])
    expect(await h.scheduler.runNow('check-blocklists')).toEqual({ checked: 2, listed: 1 })
    const refused = await h.call('POST', '/emails', { body: message() })
    expectError(refused, 'sending_domain_blocked', 403)
    expect(refused.body.message).toContain('dbl.bl.test')

    // A zone that stops answering neither lifts nor makes a block.
    dns.failing(true, 'acme.dev.dbl.bl.test')
    await h.scheduler.runNow('check-blocklists')
    expectError(await h.call('POST', '/emails', { body: message() }), 'sending_domain_blocked', 403)

    dns.failing(false, 'acme.dev.dbl.bl.test')
    dns.remove('acme.dev.dbl.bl.test')
    expect(await h.scheduler.runNow('check-blocklists')).toEqual({ checked: 2, listed: 0 })
    await sent(h, message())
  })
})

describe('GET /deliverability/report', () => {
  let h: Harness
  beforeAll(async () => {
    h = await harness({ MAILROOM_KILL_SWITCH_MIN_SENDS: '3' })
  })
  afterAll(() => h.close())

  test('rates over today, 7 and 30 days against the kill switch’s thresholds, a daily trend, and the domains’ authentication', async () => {
    await verifiedDomain(h, 'acme.dev')
    const ids = []
    for (let i = 0; i < 6; i++) ids.push(await sent(h, message({ to: `r${i}@customer.io` })))
    const [a, b, c, d, old1, old2] = ids as [string, string, string, string, string, string]
    await record(
      h,
      [a, 'sent', '2026-03-02T09:00:00.000Z'], [a, 'bounced', '2026-03-02T09:01:00.000Z', { bounce: { type: 'Permanent' } }],
      [b, 'sent', '2026-03-02T09:00:00.000Z'], [b, 'delivered', '2026-03-02T09:01:00.000Z'], [b, 'complained', '2026-03-02T09:30:00.000Z'],
      [c, 'sent', '2026-03-02T09:00:00.000Z'], [c, 'delivered', '2026-03-02T09:01:00.000Z'],
      [d, 'sent', '2026-03-02T09:00:00.000Z'], [d, 'delivered', '2026-03-02T09:01:00.000Z'],
      [old1, 'sent', '2026-02-20T12:00:00.000Z'], [old1, 'delivered', '2026-02-20T12:01:00.000Z'],
      [old2, 'sent', '2026-02-20T12:00:00.000Z'], [old2, 'delivered', '2026-02-20T12:01:00.000Z'],
    )
    const r = await h.call('GET', '/deliverability/report')
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body).toMatchObject({
      object: 'deliverability_report',
      thresholds: { bounce_rate: 0.1, complaint_rate: 0.02, min_sends: 3 },
      windows: [
        { days: 1, since: '2026-03-02T00:00:00.000Z', sent: 4, delivered: 3, bounced: 1, complained: 1, bounce_rate: 0.25, complaint_rate: 0.3333, judged: true, bounce_level: 'critical', complaint_level: 'critical' },
        { days: 7, since: '2026-02-24T00:00:00.000Z', sent: 4, bounce_rate: 0.25 },
        { days: 30, since: '2026-02-01T00:00:00.000Z', sent: 6, delivered: 5, bounced: 1, bounce_rate: 0.1667, complaint_rate: 0.2, bounce_level: 'critical' },
      ],
      trend: { bounce: 'rising', complaint: 'rising' },
      domains: [{ name: 'acme.dev', status: 'verified', blocklisted: false, dedicated_ip: null }],
    })
    expect(r.body.trend.daily).toHaveLength(30)
    expect(r.body.trend.daily.at(-1)).toMatchObject({ date: '2026-03-02', sent: 4, bounced: 1 })
    expect(r.body.trend.daily.find((x: { date: string }) => x.date === '2026-02-20')).toMatchObject({ sent: 2, delivered: 2, bounce_rate: 0 })
  })

  test('a quiet account is not judged', async () => {
    const other = await h.otherAccount()
    const r = await h.call('GET', '/deliverability/report', { key: other.token })
    expect(r.body.windows.map((w: { judged: boolean; bounce_level: string }) => [w.judged, w.bounce_level])).toEqual([[false, 'ok'], [false, 'ok'], [false, 'ok']])
    expect(r.body.trend).toMatchObject({ bounce: 'steady', complaint: 'steady' })
    expect(r.body.domains).toEqual([])
  })
})
