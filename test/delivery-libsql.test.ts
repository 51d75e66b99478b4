// Two Mailroom instances on one libSQL server (sqld) share the delivery queue: each
// row is claimed by one of them only, so every message arrives exactly once.
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openRoot } from '../src/boot'
import { loadConfig } from '../src/config'
import { deliveries } from '../src/db/tables'
import { DeliveryWorker } from '../src/delivery/worker'
import { ensureFirstAccount } from '../src/accounts/service'
import type { Started } from '../src/build/process'
import { ManualClock } from '../src/lib/clock'
import { insertDomain, insertEmail } from './support/delivery-fixtures'
import { silentLog } from './support/harness'
import { startSmtpSink } from './support/smtp-sink'
import { SQLD, startSqld } from './support/sqld'

const work = mkdtempSync(join(tmpdir(), 'mailroom-delivery-sqld-'))
let sqld: Started | undefined
afterAll(() => {
  sqld?.kill()
  rmSync(work, { recursive: true, force: true })
})

test.skipIf(!SQLD)('two instances on one libSQL server never deliver a row twice', async () => {
  const server = await startSqld(work)
  sqld = server.p
  const sink = await startSmtpSink({ auth: { user: 'u', pass: 'p' } })
  const config = loadConfig({ MAILROOM_DATA_DIR: work, MAILROOM_DATABASE_URL: server.url, MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: sink.url(), MAILROOM_HOSTNAME: 'mta.mailroom.test' })
  const clock = new ManualClock('2026-03-02T10:00:00.000Z')
  const a = await openRoot(config, { clock, log: silentLog })
  const b = await openRoot(config, { clock, log: silentLog })
  try {
    const account = (await ensureFirstAccount(a))!
    const domain = await insertDomain(a, account.accountId)
    for (let i = 0; i < 60; i++) await insertEmail(a, { accountId: account.accountId, domain, to: [`u${i}@example.net`] })
    const wa = new DeliveryWorker(a, { batchSize: 5, concurrency: 3 })
    const wb = new DeliveryWorker(b, { batchSize: 5, concurrency: 3 })
    const [na, nb] = await Promise.all([wa.runOnce(), wb.runOnce()])
    await Promise.all([wa.stop(), wb.stop()])
    expect(na + nb).toBe(60)
    expect(Math.min(na, nb)).toBeGreaterThan(0)
    expect(sink.messages).toHaveLength(60)
    expect(new Set(sink.messages.map((m) => m.to[0])).size).toBe(60)
    const rows = await a.db.q.select().from(deliveries)
    expect(rows.every((r) => r.state === 'delivered' && r.attempts === 1)).toBe(true)
  } finally {
    a.db.close()
    b.db.close()
    await sink.close()
    sqld.kill()
  }
}, 60_000)
