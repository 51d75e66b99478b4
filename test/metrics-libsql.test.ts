// The rollups and their queries on a libSQL server (sqld) through @libsql/client,
// the other engine Mailroom runs on: the same dataset answers the same figures.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Started } from '../src/build/process'
import { harness, type Harness } from './support/harness'
import { dataset } from './support/metrics-fixtures'
import { SQLD, startSqld } from './support/sqld'

const work = mkdtempSync(join(tmpdir(), 'mailroom-metrics-sqld-'))
let sqld: Started | undefined
let remote: Harness | undefined
let local: Harness | undefined

beforeAll(async () => {
  if (!SQLD) return
  const server = await startSqld(work)
  sqld = server.p
  remote = await harness({ MAILROOM_DATABASE_URL: server.url })
  local = await harness()
  await dataset(remote)
  await dataset(local)
})
afterAll(async () => {
  await remote?.close()
  await local?.close()
  sqld?.kill()
  rmSync(work, { recursive: true, force: true })
})

test.skipIf(!SQLD)('on a libSQL server the metrics and the usage are those of the local file', async () => {
  const same = async (path: string, query: Record<string, string>) => {
    const [r, l] = await Promise.all([remote!.call('GET', path, { query }), local!.call('GET', path, { query })])
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body).toEqual(l.body)
    return r.body
  }
  expect(await same('/metrics', { since: '2026-03-05', until: '2026-03-09', group_by: 'domain' })).toMatchObject({ totals: { sent: 5, delivered: 4, opens: 2 }, by_domain: [{ domain: 'acme.dev' }, { domain: 'beta.dev' }, { domain: 'unverified.dev' }] })
  const ny = await same('/emails/metrics', { start_date: '2026-03-05', end_date: '2026-03-09', timezone: 'America/New_York', dimensions: 'period', metrics: 'sent,unique_opened,unsubscribed' })
  expect(ny.data.map((r: { sent: number }) => r.sent)).toEqual([1, 1, 0, 2, 0])
  await same('/emails/metrics', { start_date: '2026-03-06', end_date: '2026-03-07', timezone: 'Asia/Kathmandu', dimensions: 'period,broadcast', metrics: 'sent,delivered' })
  // Key ids differ between the two databases; the figures must not.
  const usage = await Promise.all([remote!.call('GET', '/usage'), local!.call('GET', '/usage')])
  expect(usage[0].body.emails).toEqual(usage[1].body.emails)
  expect(usage[0].body.emails.monthly).toMatchObject({ used: 6, received: 1 })
})
