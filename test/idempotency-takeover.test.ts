// A process that dies between its idempotency claim and its commit leaves an
// `in_flight` claim (and, for workers, leased outbox rows). They are handed back as
// soon as an instance finds the holder dead, not after the minutes-long leases; a
// holder that lives keeps them, however many instances share the database.
import { afterEach, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { deliveries, idempotencyKeys, instances } from '../src/db/tables'
import { claim, fingerprint, storedIdempotencyKey } from '../src/http/idempotency'
import { INSTANCE_ID, PLACE, STALE_MS, heartbeat, isDead, reclaimDead, retire, type Me } from '../src/instance'
import { iso } from '../src/lib/clock'
import { simulated } from './support/emails'
import { expectError, harness, type Harness } from './support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const KEY = 'order-7'
const body = simulated({ subject: 'Order 7' })

/** Another process's claim on KEY, as if its request were running (or it died mid-request). */
async function heldBy(other: Me, beatAt = h.clock.now()) {
  await heartbeat(h.root.db, beatAt, other)
  const c = await claim(h.root.db, h.clock.now(), h.accountId, KEY, fingerprint('POST', '/emails', body))
  expect(c.kind).toBe('proceed')
  await h.root.db.write((tx) => tx.update(idempotencyKeys).set({ instanceId: other.id }).where(eq(idempotencyKeys.key, storedIdempotencyKey(h.accountId, KEY))))
}

const retry = () => h.call('POST', '/emails', { body, headers: { 'Idempotency-Key': KEY } })
const same = (pid: number): Me => ({ id: `host:${pid}:dead0000`, place: PLACE ?? 'here', pid })
const me = (): Me => ({ id: INSTANCE_ID, place: PLACE ?? 'here', pid: process.pid })

test('a claim held by this process’s previous life (same place, same pid) is taken over at once; its leased rows are due again', async () => {
  h = await harness()
  const previous = same(process.pid)
  await heldBy(previous)
  expectError(await retry(), 'idempotency_in_flight', 409)

  // A queued row the dead process had leased for its full five minutes.
  const queued = await h.call('POST', '/emails', { body: simulated({ subject: 'queued' }) })
  await h.root.db.write((tx) => tx.update(deliveries).set({ leaseOwner: `${previous.id}:0190-worker`, leaseUntil: iso(h.clock.now() + 5 * 60_000) }).where(eq(deliveries.emailId, queued.body.id)))

  expect(await reclaimDead(h.root, me(), () => true)).toEqual([previous.id])
  const r = await retry()
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  expect(await retry()).toMatchObject({ status: 200, body: { id: r.body.id } })
  expect(await h.root.db.q.select({ owner: deliveries.leaseOwner, until: deliveries.leaseUntil }).from(deliveries).where(eq(deliveries.emailId, queued.body.id))).toEqual([{ owner: null, until: null }])
  expect(await h.root.db.q.select().from(instances).where(eq(instances.id, previous.id))).toEqual([])
  expect(await h.worker.runOnce()).toBe(2)
})

test('a claim held by a process whose pid is gone (same place) is taken over; one whose pid lives is not', async () => {
  h = await harness()
  const other = same(4_000_001)
  await heldBy(other)
  expect(await reclaimDead(h.root, me(), (pid) => pid === other.pid)).toEqual([])
  expectError(await retry(), 'idempotency_in_flight', 409)
  expect(await reclaimDead(h.root, me(), () => false)).toEqual([other.id])
  expect((await retry()).status).toBe(200)
})

test('another machine’s live claim holds while its heartbeat is fresh, and is taken over once it falls silent', async () => {
  h = await harness()
  const elsewhere: Me = { id: 'other-host:1:beef0000', place: 'another-boot/pid:[1]', pid: 1 }
  await heldBy(elsewhere)
  h.clock.advance(STALE_MS - 5_000)
  await heartbeat(h.root.db, h.clock.now(), elsewhere)
  h.clock.advance(STALE_MS - 5_000)
  // Its pid means nothing from here: only the heartbeat counts, and it is recent.
  expect(await reclaimDead(h.root, me(), () => false)).toEqual([])
  expectError(await retry(), 'idempotency_in_flight', 409)

  h.clock.advance(10_001)
  expect(await reclaimDead(h.root, me(), () => true)).toEqual([elsewhere.id])
  expect((await retry()).status).toBe(200)
})

test('an instance never reclaims itself, and a completed key is never dropped with its holder', async () => {
  h = await harness()
  const mine = { id: INSTANCE_ID, place: PLACE, pid: process.pid, startedAt: iso(0), heartbeatAt: iso(0) }
  expect(isDead(mine, h.clock.now())).toBe(false)

  const done = await retry()
  expect(done.status).toBe(200)
  const previous = same(process.pid)
  await heartbeat(h.root.db, h.clock.now(), previous)
  await h.root.db.write((tx) => tx.update(idempotencyKeys).set({ instanceId: previous.id }).where(eq(idempotencyKeys.key, storedIdempotencyKey(h.accountId, KEY))))
  expect(await reclaimDead(h.root, me(), () => false)).toEqual([previous.id])
  expect(await retry()).toMatchObject({ status: 200, body: { id: done.body.id }, headers: expect.anything() })
  expect((await retry()).headers.get('idempotent-replayed')).toBe('true')

  // A clean stop removes this instance's row; the next heartbeat registers it again.
  await heartbeat(h.root.db, h.clock.now())
  await retire(h.root.db)
  expect(await h.root.db.q.select().from(instances).where(eq(instances.id, INSTANCE_ID))).toEqual([])
})
