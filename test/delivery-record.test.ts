// The recorder settles a batch of outcomes in one statement: each row only while this
// worker holds its lease, with its reply, attempt and events, and nothing for a row
// whose lease went to another worker.
import { afterEach, expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import { deliveries, deliveryAttempts, emailEvents, emails } from '../src/db/tables'
import { Recorder, type Outcome } from '../src/delivery/record'
import type { DeliveryRow } from '../src/delivery/types'
import { iso } from '../src/lib/clock'
import { insertDomain, insertEmail } from './support/delivery-fixtures'
import { harness, silentLog, type Harness } from './support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const OWNER = 'worker-a'

async function leased(n: number, owner = OWNER): Promise<DeliveryRow[]> {
  const domain = await insertDomain(h.root, h.accountId)
  const ids: string[] = []
  for (let i = 0; i < n; i++) ids.push(...(await insertEmail(h.root, { accountId: h.accountId, domain, to: [`r${i}@example.net`] })).deliveryIds)
  await h.root.db.write((tx) => tx.update(deliveries).set({ leaseOwner: owner, leaseUntil: iso(h.root.clock.now() + 60_000) }).where(inArray(deliveries.id, ids)))
  return h.root.db.q.select().from(deliveries).where(inArray(deliveries.id, ids))
}

const delivered = (row: DeliveryRow, at: string): Outcome => ({
  row,
  state: 'delivered',
  countAttempt: true,
  attempt: { startedAt: at, durationMs: 3, host: 'relay[127.0.0.1]:25', smtpCode: 250, enhancedCode: '2.0.0', response: '250 2.0.0 queued as X', outcome: 'delivered' },
  events: [{ type: 'sent', at }, { type: 'delivered', at, data: { host: 'relay' } }],
  at,
})

test('a batch settles in one go; a row whose lease another worker took is left to it', async () => {
  h = await harness()
  const rows = await leased(3)
  const at = iso(h.root.clock.now())
  // Another worker took the third row's lease since it was claimed.
  await h.root.db.write((tx) => tx.update(deliveries).set({ leaseOwner: 'worker-b' }).where(eq(deliveries.id, rows[2].id)))
  const recorder = new Recorder(h.root.db, h.root.ids, silentLog, OWNER)
  await Promise.all(rows.map((r) => recorder.record(delivered(r, at))))
  await recorder.idle()

  expect(recorder.lostLeases).toBe(1)
  const after = new Map((await h.root.db.q.select().from(deliveries).where(inArray(deliveries.id, rows.map((r) => r.id)))).map((r) => [r.id, r]))
  for (const r of rows.slice(0, 2)) {
    expect(after.get(r.id)).toMatchObject({ state: 'delivered', attempts: 1, leaseOwner: null, leaseUntil: null, lastCode: 250, lastResponse: '250 2.0.0 queued as X', updatedAt: at })
  }
  expect(after.get(rows[2].id)).toMatchObject({ state: 'queued', attempts: 0, leaseOwner: 'worker-b', lastCode: null })

  const attempts = await h.root.db.q.select().from(deliveryAttempts).where(inArray(deliveryAttempts.deliveryId, rows.map((r) => r.id)))
  expect(attempts.map((a) => a.deliveryId).sort()).toEqual([rows[0].id, rows[1].id].sort())
  const events = await h.root.db.q.select().from(emailEvents).where(inArray(emailEvents.emailId, rows.map((r) => r.emailId)))
  // The fixture's queued event for each email, then sent and delivered for the settled ones only.
  expect(events.filter((e) => e.emailId === rows[2].emailId).map((e) => e.type)).toEqual(['queued'])
  for (const r of rows.slice(0, 2)) expect(events.filter((e) => e.emailId === r.emailId).map((e) => e.type).sort()).toEqual(['delivered', 'queued', 'sent'])
  const lastEvents = await h.root.db.q.select({ id: emails.id, lastEvent: emails.lastEvent }).from(emails).where(inArray(emails.id, rows.map((r) => r.emailId)))
  expect(Object.fromEntries(lastEvents.map((e) => [e.id, e.lastEvent]))).toEqual({ [rows[0].emailId]: 'delivered', [rows[1].emailId]: 'delivered', [rows[2].emailId]: 'queued' })
})

test('an outcome without an attempt keeps the last reply; a deferral sets the next try', async () => {
  h = await harness()
  const [paused, deferred] = await leased(2)
  await h.root.db.write((tx) => tx.update(deliveries).set({ lastCode: 421, lastResponse: '421 try later' }).where(eq(deliveries.id, paused.id)))
  const at = iso(h.root.clock.now())
  const next = iso(h.root.clock.now() + 300_000)
  const recorder = new Recorder(h.root.db, h.root.ids, silentLog, OWNER)
  await Promise.all([
    // A circuit-breaker pause: back to the queue, no attempt counted, no reply of its own.
    recorder.record({ row: paused, state: paused.state, countAttempt: false, nextAttemptAt: next, events: [], at }),
    recorder.record({
      row: deferred,
      state: 'deferred',
      countAttempt: true,
      nextAttemptAt: next,
      attempt: { startedAt: at, durationMs: 2, host: null, smtpCode: 451, enhancedCode: '4.3.0', response: '451 4.3.0 busy', outcome: 'deferred' },
      events: [{ type: 'sent', at }, { type: 'delivery_delayed', at, data: { response: '451 4.3.0 busy', next_attempt_at: next } }],
      at,
    }),
  ])
  await recorder.idle()
  expect(recorder.lostLeases).toBe(0)
  const [p] = await h.root.db.q.select().from(deliveries).where(eq(deliveries.id, paused.id))
  expect(p).toMatchObject({ state: 'queued', attempts: 0, nextAttemptAt: next, leaseOwner: null, lastCode: 421, lastResponse: '421 try later' })
  const [d] = await h.root.db.q.select().from(deliveries).where(eq(deliveries.id, deferred.id))
  expect(d).toMatchObject({ state: 'deferred', attempts: 1, nextAttemptAt: next, leaseOwner: null, lastCode: 451, lastResponse: '451 4.3.0 busy' })
})
