import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Db, Executor } from '../db'
import { listOf, prepared } from '../db/prepared'
import { dedicatedIpDomains, dedicatedIps, dedicatedIpUsage } from '../db/tables'
import type { Config } from '../config'
import { DAY, iso } from '../lib/clock'

export type DedicatedIpRow = typeof dedicatedIps.$inferSelect

/**
 * Daily caps by day of warm-up (day 1 first), the common practice for a new
 * address: mailbox providers judge a fresh IP by how its volume grows. After the
 * last day the address is warm and has no cap.
 */
export const WARMUP_SCHEDULE = [50, 100, 500, 1_000, 5_000, 10_000, 20_000, 40_000, 70_000, 100_000] as const

export const utcDay = (t: number) => iso(t).slice(0, 10)
const dayStart = (t: number) => Math.floor(t / DAY) * DAY
/** The start of the next UTC day: when a held message may go. */
export const nextUtcDay = (t: number) => dayStart(t) + DAY

export interface Warmup {
  /** 1-based day of the schedule; null when the address is warm. */
  day: number | null
  /** Today's cap; null for no cap. */
  limit: number | null
  /** When the schedule ends (the first day without a cap). */
  completesAt: number | null
}

export function warmupOf(row: Pick<DedicatedIpRow, 'warmupStartedAt'>, now: number): Warmup {
  if (!row.warmupStartedAt) return { day: null, limit: null, completesAt: null }
  const start = dayStart(Date.parse(row.warmupStartedAt))
  const index = Math.max(0, Math.floor((dayStart(now) - start) / DAY))
  const completesAt = start + WARMUP_SCHEDULE.length * DAY
  if (index >= WARMUP_SCHEDULE.length) return { day: null, limit: null, completesAt }
  return { day: index + 1, limit: WARMUP_SCHEDULE[index]!, completesAt }
}

/** Where a domain's mail leaves from: its address, and the registered row that caps it (none for a pin to an unregistered address). */
export interface Source {
  ip: string
  row: DedicatedIpRow | null
  pinned: boolean
}

// Read for every send from a verified domain and every delivery batch: prepared once.
const assignedIps = prepared((q) =>
  q
    .select({ domainId: dedicatedIpDomains.domainId, ip: dedicatedIps })
    .from(dedicatedIpDomains)
    .innerJoin(dedicatedIps, eq(dedicatedIps.id, dedicatedIpDomains.ipId))
    .where(inArray(dedicatedIpDomains.domainId, listOf('domainIds')))
    .prepare(),
)

/**
 * The source address of each sending domain that has one: the operator's pin
 * (MAILROOM_DEDICATED_IP_PINS) first, else the account's assignment. Domains
 * without one send from the host's default address.
 */
export async function sourcesFor(q: Executor, config: Pick<Config, 'deliverability'>, domainList: { id: string; name: string }[]): Promise<Map<string, Source>> {
  const out = new Map<string, Source>()
  if (!domainList.length) return out
  const pins = config.deliverability.pins
  const pinned = domainList.filter((d) => pins.has(d.name))
  const pinnedRows = pinned.length ? await q.select().from(dedicatedIps).where(inArray(dedicatedIps.ip, [...new Set(pinned.map((d) => pins.get(d.name)!))])) : []
  for (const d of pinned) {
    const ip = pins.get(d.name)!
    out.set(d.id, { ip, row: pinnedRows.find((r) => r.ip === ip) ?? null, pinned: true })
  }
  const rest = domainList.filter((d) => !pins.has(d.name)).map((d) => d.id)
  if (rest.length) {
    const assigned = await assignedIps(q).all({ domainIds: JSON.stringify(rest) })
    for (const a of assigned) out.set(a.domainId, { ip: a.ip.ip, row: a.ip, pinned: false })
  }
  return out
}

/** Messages sent today from each address. */
export async function sentToday(q: Executor, ipIds: string[], now: number): Promise<Map<string, number>> {
  if (!ipIds.length) return new Map()
  const rows = await q
    .select()
    .from(dedicatedIpUsage)
    .where(and(inArray(dedicatedIpUsage.ipId, ipIds), eq(dedicatedIpUsage.day, utcDay(now))))
  return new Map(rows.map((r) => [r.ipId, r.sent]))
}

/**
 * Takes one message of today's volume of an address, inside its cap: false when
 * the cap is used up. One statement, so workers on one database never overshoot.
 */
export async function takeDailySlot(q: Executor, ipId: string, limit: number | null, now: number): Promise<boolean> {
  const taken = await q
    .insert(dedicatedIpUsage)
    .values({ ipId, day: utcDay(now), sent: 1 })
    .onConflictDoUpdate({
      target: [dedicatedIpUsage.ipId, dedicatedIpUsage.day],
      set: { sent: sql`${dedicatedIpUsage.sent} + 1` },
      ...(limit === null ? {} : { setWhere: sql`${dedicatedIpUsage.sent} < ${limit}` }),
    })
    .returning({ sent: dedicatedIpUsage.sent })
  return taken.length > 0 && (limit === null || taken[0]!.sent <= limit)
}

export type SourceChoice = { kind: 'bind'; ip: string } | { kind: 'shared' } | { kind: 'hold'; until: number; detail: string }

/**
 * Where one message leaves from now: its domain's address while today's warm-up
 * cap has room (the message takes one of today's slots), else the host's
 * default address, or, when the address holds overflow, nowhere until the next
 * UTC day.
 */
export async function chooseSource(db: Db, source: Source, now: number): Promise<SourceChoice> {
  const row = source.row
  if (!row) return { kind: 'bind', ip: source.ip }
  const limit = warmupOf(row, now).limit
  if (await db.write((tx) => takeDailySlot(tx, row.id, limit, now))) return { kind: 'bind', ip: source.ip }
  if (row.overflow === 'hold') return { kind: 'hold', until: nextUtcDay(now), detail: `held: the dedicated IP ${source.ip} has sent its ${limit} warm-up messages for ${utcDay(now)} and holds overflow until the next UTC day` }
  return { kind: 'shared' }
}
