// This process as one instance among those sharing a database: its id (the prefix
// of every lease owner name it writes and the holder of its idempotency claims), a
// heartbeat row, and the reclaiming of what a dead instance held.
//
// Leases on outbox rows last minutes so that a slow SMTP transaction never loses its
// row. A process killed with -9 would leave its rows (and a request's idempotency
// claim) locked that long; instead, any instance that finds a dead one hands its
// work back at once: rows become due again, in-flight claims are dropped (their
// work never committed, since work and completion commit together).
//
// An instance is dead when its heartbeat is older than STALE_MS, or, seen from the
// same pid namespace on the same boot of the same machine (where a pid check is
// authoritative), when its pid is gone or is our own (our previous life).
import { and, eq, sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { readFileSync, readlinkSync } from 'node:fs'
import { hostname } from 'node:os'
import type { Database, Tx } from './db'
import { automationRuns, broadcasts, deliveries, idempotencyKeys, instances, webhookDeliveries } from './db/tables'
import type { RootDeps } from './deps'
import { iso } from './lib/clock'

/** Silence after which an instance that cannot be checked by pid counts as dead. */
export const STALE_MS = 60_000

/** This process: host, pid and a part no later process shares, so a reused pid never names a dead instance's leases. */
export const INSTANCE_ID = `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`

/** The pid namespace on this boot of this machine, or null where it cannot be read (not Linux). */
function whereWeRun(): string | null {
  try {
    return `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${readlinkSync('/proc/self/ns/pid')}`
  } catch {
    return null
  }
}
export const PLACE = whereWeRun()

export interface Me {
  id: string
  place: string | null
  pid: number
}
const ME: Me = { id: INSTANCE_ID, place: PLACE, pid: process.pid }

function pidAlive(pid: number) {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    // EPERM: it runs, as another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

type InstanceRow = typeof instances.$inferSelect

export function isDead(row: InstanceRow, now: number, me: Me = ME, alive = pidAlive): boolean {
  if (row.id === me.id) return false
  if (Date.parse(row.heartbeatAt) < now - STALE_MS) return true
  if (me.place === null || row.place !== me.place) return false
  return row.pid === me.pid || !alive(row.pid)
}

/** Records that this instance is alive (and re-registers it if another took it for dead). */
export async function heartbeat(db: Database, now: number, me: Me = ME) {
  const at = iso(now)
  await db.write((tx) =>
    tx
      .insert(instances)
      .values({ id: me.id, place: me.place, pid: me.pid, startedAt: at, heartbeatAt: at })
      .onConflictDoUpdate({ target: instances.id, set: { heartbeatAt: at } }),
  )
}

/** Hands back everything a dead instance held, in one transaction with the removal of its row. */
async function handBack(tx: Tx, id: string) {
  const prefix = `${id}:`
  const owned = (owner: SQLiteColumn) => sql`substr(${owner}, 1, ${prefix.length}) = ${prefix}`
  const freed = { leaseOwner: null, leaseUntil: null }
  const counts = {
    deliveries: (await tx.update(deliveries).set(freed).where(owned(deliveries.leaseOwner)).returning({ id: deliveries.id })).length,
    webhooks: (await tx.update(webhookDeliveries).set(freed).where(owned(webhookDeliveries.leaseOwner)).returning({ id: webhookDeliveries.id })).length,
    automations: (await tx.update(automationRuns).set(freed).where(owned(automationRuns.leaseOwner)).returning({ id: automationRuns.id })).length,
    broadcasts: (await tx.update(broadcasts).set(freed).where(owned(broadcasts.leaseOwner)).returning({ id: broadcasts.id })).length,
    idempotency: (
      await tx
        .delete(idempotencyKeys)
        .where(and(eq(idempotencyKeys.instanceId, id), eq(idempotencyKeys.state, 'in_flight')))
        .returning({ key: idempotencyKeys.key })
    ).length,
  }
  await tx.delete(instances).where(eq(instances.id, id))
  return counts
}

/** Finds dead instances and hands their work back; returns the ids reclaimed. */
export async function reclaimDead(root: Pick<RootDeps, 'db' | 'clock' | 'log'>, me: Me = ME, alive = pidAlive): Promise<string[]> {
  const now = root.clock.now()
  const rows = await root.db.q.select().from(instances)
  const dead = rows.filter((r) => isDead(r, now, me, alive)).map((r) => r.id)
  for (const id of dead) {
    const counts = await root.db.write(async (tx) => {
      // Checked again under the write lock: a heartbeat that came meanwhile means it lives.
      const [row] = await tx.select().from(instances).where(eq(instances.id, id))
      return row && isDead(row, root.clock.now(), me, alive) ? handBack(tx, id) : null
    })
    if (counts) root.log.info('reclaimed the work of a stopped instance', { instance: id, ...counts })
  }
  return dead
}

/** At boot, then every 5 s (src/jobs): alive, then a look for the dead. */
export async function keepAlive(root: RootDeps) {
  await heartbeat(root.db, root.clock.now())
  await reclaimDead(root)
}

/** A clean stop: the row goes (its leases were handed back by the workers). */
export async function retire(db: Database, me: Me = ME) {
  await db.write((tx) => tx.delete(instances).where(eq(instances.id, me.id)))
}
