// GET /metrics and GET /emails/metrics against counts made by hand from the
// dataset in support/metrics-fixtures.ts: several days, a DST change in New York,
// zones half and three quarters of an hour off UTC, every granularity, and the
// switch of the legacy form to GET /metrics.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { apiKeys, emails, metricCounts, metricSeries } from '../src/db/tables'
import { pauseKey } from '../src/api-keys/service'
import { expectError, harness, type Harness } from './support/harness'
import { message, sent, verifiedDomain } from './support/emails'
import { BROADCAST, dataset, record, type Dataset } from './support/metrics-fixtures'
import { scenarios } from './support/scenarios'

/** The seed's totals object, in its field order. */
const T = (sent = 0, delivered = 0, bounced = 0, complaints = 0, opens = 0, clicks = 0) => ({ sent, delivered, bounced, complaints, opens, clicks })

let h: Harness
let d: Dataset
beforeAll(async () => {
  h = await harness()
  d = await dataset(h)
})
afterAll(() => h.close())

/** A 200 reply's body from `path` with this query. */
const answer = (path: string) => async (query: Record<string, string>) => {
  const r = await h.call('GET', path, { query })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body
}
const metrics = answer('/metrics')
const legacy = answer('/emails/metrics')

describe('GET /metrics', () => {
  test('totals over the window, the window of the same length before it, and a UTC daily series; simulator sends count', async () => {
    expect(await metrics({ since: '2026-03-05', until: '2026-03-09' })).toEqual({
      object: 'metrics',
      since: '2026-03-05T00:00:00.000Z',
      until: '2026-03-10T00:00:00.000Z',
      event: null,
      totals: T(5, 4, 1, 1, 2, 1),
      previous: T(1, 1),
      series: [
        { date: '2026-03-05', ...T(1, 1) },
        { date: '2026-03-06', ...T(1, 1, 0, 0, 2) },
        { date: '2026-03-07', ...T(1, 1, 0, 0, 0, 1) },
        { date: '2026-03-08', ...T(2, 1, 1) },
        { date: '2026-03-09', ...T(0, 0, 0, 1) },
      ],
      by_domain: [],
      by_api_key: [],
    })
  })

  test('start_date and end_date are accepted for since and until', async () => {
    expect(await metrics({ start_date: '2026-03-05', end_date: '2026-03-09' })).toEqual(await metrics({ since: '2026-03-05', until: '2026-03-09' }))
  })

  test('group_by domain and api_key: one element per sending domain and per key, most sent first', async () => {
    const r = await metrics({ since: '2026-03-05', until: '2026-03-09', group_by: 'domain,api_key' })
    expect(r.by_domain).toEqual([
      { domain: 'acme.dev', ...T(2, 2, 0, 1, 2, 1) },
      { domain: 'beta.dev', ...T(2, 1, 1) },
      { domain: 'unverified.dev', ...T(1, 1) },
    ])
    expect(r.by_api_key).toEqual([
      { api_key_id: d.owner, name: 'Bootstrap key', ...T(3, 3, 0, 1, 2, 1) },
      { api_key_id: d.agent.id, name: 'agent two', ...T(2, 1, 1) },
    ])
  })

  test('event adds its figure as count everywhere and orders the breakdowns by it', async () => {
    const r = await metrics({ since: '2026-03-05', until: '2026-03-09', group_by: 'api_key', event: 'bounced' })
    expect(r.event).toBe('bounced')
    expect(r.series.map((s: { count: number }) => s.count)).toEqual([0, 0, 0, 1, 0])
    expect(r.by_api_key.map((k: { api_key_id: string; count: number }) => [k.api_key_id, k.count])).toEqual([[d.agent.id, 1], [d.owner, 0]])
    expect(r.totals).toEqual(T(5, 4, 1, 1, 2, 1))
  })

  test('domain and api_key_id narrow every figure; api_key_id=none is mail no key sent', async () => {
    const beta = await metrics({ since: '2026-03-05', until: '2026-03-09', domain: 'BETA.dev' })
    expect([beta.totals, beta.previous]).toEqual([T(2, 1, 1), T()])
    expect(beta.series.map((s: { sent: number }) => s.sent)).toEqual([0, 0, 0, 2, 0])
    expect((await metrics({ since: '2026-03-05', until: '2026-03-09', api_key_id: d.agent.id.toUpperCase() })).totals).toEqual(T(2, 1, 1))
    expect((await metrics({ since: '2026-03-01', until: '2026-03-09', api_key_id: d.owner })).totals).toEqual(T(4, 4, 0, 1, 2, 1))
    expect((await metrics({ since: '2026-03-01', until: '2026-03-09', api_key_id: 'none' })).totals).toEqual(T())
  })

  test('by default the week before now; a future until is now; edges are counted in whole quarter-hours', async () => {
    const week = await metrics({})
    expect([week.since, week.until, week.series.length]).toEqual(['2026-03-05T12:00:00.000Z', '2026-03-12T12:00:00.000Z', 8])
    expect(week.totals).toEqual(T(5, 4, 1, 1, 2, 1))
    expect((await metrics({ until: '2026-03-09' })).since).toBe('2026-03-03T00:00:00.000Z')
    const future = await metrics({ since: '2026-03-12', until: '2026-04-01T00:00:00Z' })
    expect([future.until, future.series.map((s: { date: string }) => s.date)]).toEqual(['2026-03-12T12:00:00.000Z', ['2026-03-12']])
    // E6 was sent at 18:20 and delivered at 18:40: a since of 18:25 counts from 18:15.
    const edge = await metrics({ since: '2026-03-06T18:25:00Z', until: '2026-03-06T18:30:00Z' })
    expect([edge.since, edge.until, edge.totals]).toEqual(['2026-03-06T18:15:00.000Z', '2026-03-06T18:30:00.000Z', T(1)])
    expect((await metrics({ since: '2026-03-06T18:30:00Z', until: '2026-03-06T18:45:00Z' })).totals).toEqual(T(0, 1))
    expect((await metrics({ since: '2026-03-06T19:20:00+01:00', until: '2026-03-06T19:30:00+01:00' })).totals).toEqual(T(1))
  })
})

/** The metrics the legacy tests read, in the legacy form's order. */
const SOME = 'sent,delivered,opened,unique_opened,clicked,bounced,complained,unsubscribed,received'
const row = (period: string, o: Partial<Record<string, number>> = {}) => ({
  period, received: 0, sent: 0, delivered: 0, bounced: 0, opened: 0, unique_opened: 0, clicked: 0, complained: 0, unsubscribed: 0, ...o,
})

describe('GET /emails/metrics (the legacy-compatible form)', () => {
  test('totals of every metric with the rates, simulator sends left out', async () => {
    expect(await legacy({ start_date: '2026-03-05', end_date: '2026-03-09' })).toEqual({
      object: 'metrics',
      start_date: '2026-03-05T00:00:00.000Z',
      end_date: '2026-03-10T00:00:00.000Z',
      timezone: 'UTC',
      granularity: 'daily',
      metrics: [
        'received', 'sent', 'delivered', 'delivery_delayed', 'failed', 'suppressed', 'bounced', 'bounced_transient', 'bounced_permanent', 'bounced_undetermined',
        'opened', 'unique_opened', 'clicked', 'unique_clicked', 'complained', 'unsubscribed',
        'delivery_rate', 'open_rate', 'click_rate', 'bounce_rate', 'complaint_rate', 'unsubscribe_rate',
      ],
      dimensions: [],
      totals: {
        received: 1, sent: 4, delivered: 3, delivery_delayed: 0, failed: 0, suppressed: 0, bounced: 1, bounced_transient: 1, bounced_permanent: 0, bounced_undetermined: 0,
        opened: 2, unique_opened: 1, clicked: 1, unique_clicked: 1, complained: 1, unsubscribed: 1,
        delivery_rate: 0.75, open_rate: 0.3333, click_rate: 0.3333, bounce_rate: 0.25, complaint_rate: 0.3333, unsubscribe_rate: 0.3333,
      },
    })
  })

  test('daily in UTC', async () => {
    const r = await legacy({ start_date: '2026-03-05', end_date: '2026-03-09', dimensions: 'period', metrics: SOME })
    expect(r.data).toEqual([
      row('2026-03-05T00:00:00.000Z', { sent: 1, delivered: 1 }),
      row('2026-03-06T00:00:00.000Z', { sent: 1, delivered: 1, opened: 2, unique_opened: 1, received: 1 }),
      row('2026-03-07T00:00:00.000Z', { clicked: 1 }),
      row('2026-03-08T00:00:00.000Z', { sent: 2, delivered: 1, bounced: 1 }),
      row('2026-03-09T00:00:00.000Z', { complained: 1, unsubscribed: 1 }),
    ])
  })

  test('daily in New York across the change to summer time: dates are local days, and 8 March has 23 hours', async () => {
    const r = await legacy({ start_date: '2026-03-05', end_date: '2026-03-09', timezone: 'America/New_York', dimensions: 'period', metrics: SOME })
    expect([r.start_date, r.end_date, r.timezone]).toEqual(['2026-03-05T05:00:00.000Z', '2026-03-10T04:00:00.000Z', 'America/New_York'])
    expect(r.data).toEqual([
      row('2026-03-05T00:00:00.000-05:00', { sent: 1, delivered: 1, opened: 1, unique_opened: 1 }),
      row('2026-03-06T00:00:00.000-05:00', { sent: 1, delivered: 1, opened: 1, received: 1 }),
      row('2026-03-07T00:00:00.000-05:00', { clicked: 1 }),
      // Until 04:00Z on the 9th: the complaint at 03:00Z (23:00 EDT) is the 8th's, the unsubscribe at 04:30Z the 9th's.
      row('2026-03-08T00:00:00.000-05:00', { sent: 2, delivered: 1, bounced: 1, complained: 1 }),
      row('2026-03-09T00:00:00.000-04:00', { unsubscribed: 1 }),
    ])
    expect(r.totals).toMatchObject({ sent: 4, delivered: 3, unsubscribed: 1 })
  })

  test('zones half and three quarters of an hour off UTC are bucketed exactly', async () => {
    const hourly = await legacy({ start_date: '2026-03-06T23:00:00+05:30', end_date: '2026-03-07T01:00:00+05:30', timezone: 'Asia/Kolkata', granularity: 'hourly', dimensions: 'period', metrics: 'sent,delivered' })
    expect([hourly.start_date, hourly.end_date]).toEqual(['2026-03-06T17:30:00.000Z', '2026-03-06T19:30:00.000Z'])
    expect(hourly.data).toEqual([
      { period: '2026-03-06T23:00:00.000+05:30', sent: 1, delivered: 0 },
      { period: '2026-03-07T00:00:00.000+05:30', sent: 0, delivered: 1 },
    ])
    const india = await legacy({ start_date: '2026-03-06', end_date: '2026-03-07', timezone: 'Asia/Kolkata', dimensions: 'period', metrics: 'sent,delivered' })
    expect(india.data).toEqual([
      { period: '2026-03-06T00:00:00.000+05:30', sent: 2, delivered: 1 },
      { period: '2026-03-07T00:00:00.000+05:30', sent: 0, delivered: 1 },
    ])
    // E6, sent at 18:20Z, is 23:50 on the 6th in India but 00:05 on the 7th in Nepal.
    const nepal = await legacy({ start_date: '2026-03-06', end_date: '2026-03-07', timezone: 'Asia/Kathmandu', dimensions: 'period', metrics: 'sent,delivered' })
    expect(nepal.data).toEqual([
      { period: '2026-03-06T00:00:00.000+05:45', sent: 1, delivered: 1 },
      { period: '2026-03-07T00:00:00.000+05:45', sent: 1, delivered: 1 },
    ])
  })

  test('a day whose midnight is skipped (Havana moves 00:00 to 01:00) starts when its first hour does', async () => {
    const r = await legacy({ start_date: '2026-03-07', end_date: '2026-03-08', timezone: 'America/Havana', dimensions: 'period', metrics: 'sent,complained' })
    expect([r.start_date, r.end_date]).toEqual(['2026-03-07T05:00:00.000Z', '2026-03-09T04:00:00.000Z'])
    expect(r.data).toEqual([
      { period: '2026-03-07T00:00:00.000-05:00', sent: 0, complained: 0 },
      { period: '2026-03-08T01:00:00.000-04:00', sent: 2, complained: 1 },
    ])
  })

  test('weekly periods start on Monday and the first is named by its Monday; empty periods are listed', async () => {
    const r = await legacy({ start_date: '2026-03-01', end_date: '2026-03-14', timezone: 'America/New_York', granularity: 'weekly', dimensions: 'period', metrics: 'sent,unsubscribed' })
    expect(r.data).toEqual([
      { period: '2026-02-23T00:00:00.000-05:00', sent: 0, unsubscribed: 0 },
      { period: '2026-03-02T00:00:00.000-05:00', sent: 5, unsubscribed: 0 },
      { period: '2026-03-09T00:00:00.000-04:00', sent: 0, unsubscribed: 1 },
    ])
  })

  test('monthly; a future end is clamped to now', async () => {
    const r = await legacy({ start_date: '2026-01-01', end_date: '2026-03-31', granularity: 'monthly', dimensions: 'period', metrics: 'sent' })
    expect(r.end_date).toBe('2026-03-12T12:00:00.000Z')
    expect(r.data).toEqual([
      { period: '2026-01-01T00:00:00.000Z', sent: 0 },
      { period: '2026-02-01T00:00:00.000Z', sent: 0 },
      { period: '2026-03-01T00:00:00.000Z', sent: 5 },
    ])
  })

  test('by default the six days before now; an end date alone starts six days before its own day', async () => {
    const r = await legacy({ metrics: 'sent' })
    expect([r.start_date, r.end_date, r.totals]).toEqual(['2026-03-06T12:00:00.000Z', '2026-03-12T12:00:00.000Z', { sent: 3 }])
    const byDate = await legacy({ end_date: '2026-03-08', metrics: 'sent' })
    expect([byDate.start_date, byDate.end_date, byDate.totals]).toEqual(['2026-03-02T00:00:00.000Z', '2026-03-09T00:00:00.000Z', { sent: 5 }])
  })

  test('metrics given repeated, comma-separated and twice are reported once, in the form’s order', async () => {
    const r = await h.call('GET', '/emails/metrics?metrics=open_rate,sent&metrics=sent&metrics=delivered&start_date=2026-03-05&end_date=2026-03-09')
    expect([r.body.metrics, r.body.totals]).toEqual([['sent', 'delivered', 'open_rate'], { sent: 4, delivered: 3, open_rate: 0.3333 }])
  })

  test('by domain: id and name; received mail counts for the receiving domain', async () => {
    const r = await legacy({ start_date: '2026-03-05', end_date: '2026-03-09', dimensions: 'domain', metrics: 'sent,delivered,received' })
    expect(r.data).toEqual([
      { domain_id: d.acme.id, domain_name: 'acme.dev', sent: 2, delivered: 2, received: 1 },
      { domain_id: d.beta.id, domain_name: 'beta.dev', sent: 2, delivered: 1, received: 0 },
    ])
    expect((await legacy({ start_date: '2026-03-05', end_date: '2026-03-09', domain_id: d.beta.id, metrics: 'sent,delivered' })).totals).toEqual({ sent: 2, delivered: 1 })
  })

  test('by broadcast (with its name), and narrowed to a broadcast', async () => {
    const r = await legacy({ start_date: '2026-03-05', end_date: '2026-03-09', dimensions: 'broadcast,period', granularity: 'monthly', metrics: 'sent,delivered' })
    expect(r.dimensions).toEqual(['period', 'broadcast'])
    expect(r.data).toEqual([
      { period: '2026-03-01T00:00:00.000Z', broadcast_id: null, broadcast_name: null, sent: 3, delivered: 2 },
      { period: '2026-03-01T00:00:00.000Z', broadcast_id: BROADCAST, broadcast_name: 'March news', sent: 1, delivered: 1 },
    ])
    expect((await legacy({ start_date: '2026-03-05', end_date: '2026-03-09', broadcast_id: BROADCAST, metrics: 'sent,delivered' })).totals).toEqual({ sent: 1, delivered: 1 })
  })

  test('by email, read from the event record of the emails named; simulator emails still left out', async () => {
    const r = await legacy({ start_date: '2026-03-05', end_date: '2026-03-09', dimensions: 'email,period', email_id: `${d.E2},${d.E1},${d.E3}`, metrics: 'sent,opened,unique_opened' })
    expect(r.data).toEqual([
      { period: '2026-03-05T00:00:00.000Z', email_id: d.E1, sent: 1, opened: 0, unique_opened: 0 },
      { period: '2026-03-06T00:00:00.000Z', email_id: d.E1, sent: 0, opened: 2, unique_opened: 1 },
      { period: '2026-03-08T00:00:00.000Z', email_id: d.E2, sent: 1, opened: 0, unique_opened: 0 },
    ])
    const one = await legacy({ start_date: '2026-03-05', end_date: '2026-03-09', email_id: d.E1, metrics: 'sent,delivered,opened,unique_opened,clicked,unique_clicked,complained,open_rate' })
    expect(one.totals).toEqual({ sent: 1, delivered: 1, opened: 2, unique_opened: 1, clicked: 1, unique_clicked: 1, complained: 1, open_rate: 1 })
    expect(one.data).toBeUndefined()
  })

  test('the email path and the rollups agree: the emails’ figures add up to the account’s', async () => {
    const range = { start_date: '2026-03-01', end_date: '2026-03-10' }
    const all = await legacy(range)
    const each = await Promise.all([d.E1, d.E2, d.E5, d.E6, d.E7].map((id) => legacy({ ...range, email_id: id })))
    const counters = Object.keys(all.totals).filter((k) => !k.endsWith('_rate') && k !== 'received')
    expect(Object.fromEntries(counters.map((k) => [k, each.reduce((n, e) => n + e.totals[k], 0)]))).toEqual(Object.fromEntries(counters.map((k) => [k, all.totals[k]])))
    expect(all.totals.sent).toBe(5)
  })

  test('a call carrying a GET /metrics parameter is answered exactly as GET /metrics', async () => {
    for (const q of [{ since: '2026-03-05', until: '2026-03-09' }, { start_date: '2026-03-05', end_date: '2026-03-09', group_by: 'domain' }, { event: 'opened' }, { domain: 'acme.dev' }, { api_key_id: 'none' }] as Record<string, string>[]) {
      expect(await legacy(q)).toEqual(await metrics(q))
    }
  })
})

describe('rollups', () => {
  test('an open or click is unique once per email, within one batch or across batches', async () => {
    const h = await harness()
    try {
      await verifiedDomain(h, 'acme.dev')
      const a = await sent(h, message())
      const b = await sent(h, message({ to: ['x@customer.io', 'y@customer.io'] }))
      await record(h, [a, 'opened', '2026-03-02T11:00:00.000Z'], [a, 'opened', '2026-03-02T11:01:00.000Z'], [b, 'clicked', '2026-03-02T11:02:00.000Z'], [b, 'clicked', '2026-03-02T11:03:00.000Z'])
      await record(h, [b, 'opened', '2026-03-02T11:04:00.000Z'], [a, 'clicked', '2026-03-02T11:05:00.000Z'], [b, 'clicked', '2026-03-02T11:06:00.000Z'])
      h.clock.set('2026-03-02T12:00:00.000Z')
      const r = await h.call('GET', '/emails/metrics', { query: { start_date: '2026-03-02', metrics: 'opened,unique_opened,clicked,unique_clicked' } })
      expect(r.body.totals).toEqual({ opened: 3, unique_opened: 2, clicked: 4, unique_clicked: 2 })
    } finally {
      await h.close()
    }
  })

  test('each event is counted in its quarter-hour, hour and day, in one series per level of detail; queued events are not', async () => {
    const h = await harness()
    try {
      await verifiedDomain(h, 'acme.dev')
      const agent = await h.key({ name: 'agent' })
      const a = await sent(h, message(), agent.token)
      await h.root.db.write((tx) => tx.update(emails).set({ broadcastId: BROADCAST }).where(eq(emails.id, a)))
      expect([await h.root.db.q.select().from(metricSeries), await h.root.db.q.select().from(metricCounts)]).toEqual([[], []])
      await record(h, [a, 'sent', '2026-03-02T10:20:00.000Z'], [a, 'delivered', '2026-03-02T10:25:00.000Z'], [a, 'delivery_delayed', '2026-03-02T10:50:00.000Z'])
      const series = await h.root.db.q.select().from(metricSeries)
      expect(series.map((s) => [s.level, s.simulator, s.domain, s.apiKeyId, s.broadcastId])).toEqual([
        [0, false, '', '', ''],
        [1, false, 'acme.dev', agent.id, ''],
        [2, false, 'acme.dev', '', BROADCAST],
      ])
      // An id is series * 2^31 + grain * 2^29 + the bucket's number in its grain's units.
      const minutes = [15, 60, 1440]
      const rows = (await h.root.db.q.select().from(metricCounts)).map((r) => {
        const grain = Math.floor((r.id % 2 ** 31) / 2 ** 29)
        const start = new Date((r.id % 2 ** 29) * minutes[grain] * 60_000).toISOString()
        return [series.findIndex((s) => s.id === Math.floor(r.id / 2 ** 31)), minutes[grain], start.slice(11, 16), r.sent, r.delivered, r.delivery_delayed]
      })
      expect(rows.sort()).toEqual(
        [0, 1, 2].flatMap((level) => [
          [level, 1440, '00:00', 1, 1, 1],
          [level, 15, '10:15', 1, 1, 0],
          [level, 15, '10:45', 0, 0, 1],
          [level, 60, '10:00', 1, 1, 1],
        ]),
      )
      // More events of the same series and buckets add to the same rows.
      await record(h, [a, 'opened', '2026-03-02T10:55:00.000Z'])
      expect([(await h.root.db.q.select().from(metricSeries)).length, (await h.root.db.q.select().from(metricCounts)).length]).toEqual([3, 12])
    } finally {
      await h.close()
    }
  })
})

describe('errors', () => {
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `01900000-0000-7000-8000-${String(i).padStart(12, '0')}`).join(',')
  /** The owner's key, the one scenarios call with. */
  const owner = async (h: Harness) => (await h.root.db.q.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.accountId, h.accountId)))[0].id
  const paused = async (h: Harness) => pauseKey(h.root, await owner(h), 'bounce spike')
  const ceiling = (path: string) => async (h: Harness) => {
    const id = await owner(h)
    await h.root.db.write((tx) => tx.update(apiKeys).set({ rateCeilingPerMinute: 1 }).where(eq(apiKeys.id, id)))
    expect((await h.call('GET', path)).status).toBe(200)
  }
  const spent = (path: string) => async (h: Harness) => void (await h.call('GET', path))
  const broken = async (h: Harness) => {
    await h.root.db.execute('drop table metric_counts')
  }

  scenarios([
    // GET /metrics
    { name: 'refuses a since that is no date', method: 'GET', path: '/metrics', query: { since: 'yesterday' }, status: 400, code: 'validation_error', check: (r) => expect(r.body.details).toEqual([{ field: 'query.since', message: expect.stringContaining('ISO 8601') }]) },
    { name: 'refuses a date that does not exist', method: 'GET', path: '/metrics', query: { until: '2026-02-30' }, status: 400, code: 'validation_error' },
    { name: 'refuses a since after until', method: 'GET', path: '/metrics', query: { since: '2026-03-03', until: '2026-03-01' }, status: 400, code: 'validation_error' },
    { name: 'refuses since and start_date that disagree', method: 'GET', path: '/metrics', query: { since: '2026-03-01', start_date: '2026-02-01' }, status: 400, code: 'validation_error' },
    { name: 'refuses a window over 10,000 days', method: 'GET', path: '/metrics', query: { since: '1990-01-01' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown event', method: 'GET', path: '/metrics', query: { event: 'read' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown group_by value, naming it', method: 'GET', path: '/metrics', query: { group_by: 'domain,tag' }, status: 400, code: 'validation_error', check: (r) => expect(r.body.message).toContain('`tag`') },
    { name: 'refuses an api_key_id that is no UUID', method: 'GET', path: '/metrics', query: { api_key_id: 'mine' }, status: 400, code: 'validation_error' },
    { name: 'refuses an empty domain', method: 'GET', path: '/metrics', query: { domain: '' }, status: 400, code: 'validation_error' },
    { name: 'refuses a parameter it does not know', method: 'GET', path: '/metrics', query: { timezone: 'UTC' }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/metrics', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/metrics', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/metrics', as: 'revoked', status: 403, code: 'invalid_api_key' },
    { name: 'refuses a paused key', method: 'GET', path: '/metrics', setup: paused, status: 403, code: 'kill_switch_active' },
    { name: 'refuses past the key’s own ceiling', method: 'GET', path: '/metrics', setup: ceiling('/metrics'), status: 429, code: 'rate_ceiling_exceeded' },
    { name: 'refuses past the deployment’s rate', method: 'GET', path: '/metrics', env: { MAILROOM_RATE_LIMIT: '1' }, setup: spent('/metrics'), status: 429, code: 'rate_limit_exceeded' },
    { name: 'answers 500 without details when storage fails unexpectedly', method: 'GET', path: '/metrics', setup: broken, status: 500, code: 'internal_server_error', check: (r) => expect(JSON.stringify(r.body)).not.toContain('metric_counts') },

    // GET /emails/metrics
    { name: 'refuses email and broadcast dimensions together', method: 'GET', path: '/emails/metrics', query: { dimensions: 'email,broadcast', email_id: ids(1) }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses email_id with broadcast_id', method: 'GET', path: '/emails/metrics', query: { email_id: ids(1), broadcast_id: ids(1) }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses email_id with the broadcast dimension', method: 'GET', path: '/emails/metrics', query: { email_id: ids(1), dimensions: 'broadcast' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses broadcast_id with the email dimension', method: 'GET', path: '/emails/metrics', query: { broadcast_id: ids(1), dimensions: 'email' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses the email dimension without email_id', method: 'GET', path: '/emails/metrics', query: { dimensions: 'email' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a start after the end', method: 'GET', path: '/emails/metrics', query: { start_date: '2026-03-02T12:00:00Z', end_date: '2026-03-02T11:00:00Z' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a start in the future (the end is now)', method: 'GET', path: '/emails/metrics', query: { start_date: '2026-04-01' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses more than 10,000 periods', method: 'GET', path: '/emails/metrics', query: { start_date: '2025-01-01', granularity: 'hourly', dimensions: 'period' }, status: 422, code: 'invalid_parameter' },
    { name: 'allows 10,000 hourly periods exactly', method: 'GET', path: '/emails/metrics', query: { start_date: '2025-01-09T08:00:00Z', end_date: '2026-03-02T00:00:00Z', granularity: 'hourly', dimensions: 'period', metrics: 'sent' }, status: 200,
      check: (r) => expect(r.body.data).toHaveLength(10_000) },
    { name: 'refuses an unknown time zone', method: 'GET', path: '/emails/metrics', query: { timezone: 'Mars/Olympus' }, status: 400, code: 'validation_error', check: (r) => expect(r.body.details[0].field).toBe('query.timezone') },
    { name: 'refuses an unknown granularity', method: 'GET', path: '/emails/metrics', query: { granularity: 'yearly' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown metric, naming it', method: 'GET', path: '/emails/metrics', query: { metrics: 'sent,reads' }, status: 400, code: 'validation_error', check: (r) => expect(r.body.details).toEqual([{ field: 'query.metrics', message: expect.stringContaining('`reads`') }]) },
    { name: 'refuses an unknown dimension', method: 'GET', path: '/emails/metrics', query: { dimensions: 'tag' }, status: 400, code: 'validation_error' },
    { name: 'refuses a domain_id that is no UUID', method: 'GET', path: '/emails/metrics', query: { domain_id: 'acme.dev' }, status: 400, code: 'validation_error' },
    { name: 'refuses more than 100 email ids', method: 'GET', path: '/emails/metrics', query: { email_id: ids(101) }, status: 400, code: 'validation_error', check: (r) => expect(r.body.message).toContain('at most 100') },
    { name: 'takes 100 email ids', method: 'GET', path: '/emails/metrics', query: { email_id: ids(100) }, status: 200, expect: { totals: { sent: 0 } } },
    { name: 'refuses an end_date that is no date', method: 'GET', path: '/emails/metrics', query: { end_date: '03/09/2026' }, status: 400, code: 'validation_error' },
    { name: 'refuses its own parameters once switched to the GET /metrics form', method: 'GET', path: '/emails/metrics', query: { since: '2026-03-01', timezone: 'UTC', dimensions: 'period' }, status: 400, code: 'validation_error',
      check: (r) => expect(r.body.details.map((x: { field: string }) => x.field)).toEqual(['query.timezone', 'query.dimensions']) },
    { name: 'switched to the GET /metrics form, refuses as GET /metrics does', method: 'GET', path: '/emails/metrics', query: { since: '2026-03-03', until: '2026-03-01' }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/emails/metrics', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/emails/metrics', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/emails/metrics', as: 'revoked', status: 403, code: 'invalid_api_key' },
    { name: 'refuses a paused key', method: 'GET', path: '/emails/metrics', setup: paused, status: 403, code: 'kill_switch_active' },
    { name: 'refuses past the key’s own ceiling', method: 'GET', path: '/emails/metrics', setup: ceiling('/emails/metrics'), status: 429, code: 'rate_ceiling_exceeded' },
    { name: 'refuses past the deployment’s rate', method: 'GET', path: '/emails/metrics', env: { MAILROOM_RATE_LIMIT: '1' }, setup: spent('/emails/metrics'), status: 429, code: 'rate_limit_exceeded' },
    { name: 'answers 500 without details when storage fails unexpectedly', method: 'GET', path: '/emails/metrics', setup: broken, status: 500, code: 'internal_server_error' },
  ])
})
