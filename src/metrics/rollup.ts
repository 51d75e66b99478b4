import { and, asc, eq, inArray, sql, type SQL } from 'drizzle-orm'
import type { Executor, Tx } from '../db'
import { listOf, prepared, rowInserter } from '../db/prepared'
import { domains, emailEvents, emails, inboundEmails, metricRollups, type EmailEventType } from '../db/tables'
import type { NewEvent } from '../emails/events'
import { COUNTED, COUNTERS, countsOf, zeroCounts, type Counts } from './counters'
import { floorTo } from './time'

/** What an event is counted under besides its account and time: the dimensions of its email. */
export interface Dims {
  simulator: boolean
  domain: string
  domainId: string
  apiKeyId: string
  broadcastId: string
}
const NO_DIMS: Dims = { simulator: false, domain: '', domainId: '', apiKeyId: '', broadcastId: '' }

/** Bucket sizes in minutes: quarter-hours (any zone's offset is a whole number of them), hours and days, all UTC. */
const GRAINS = [15, 60, 1440] as const
/** What each level of detail keeps of an event's dimensions (see the table's comment). */
const LEVELS: ((d: Dims) => Dims)[] = [
  (d) => ({ ...NO_DIMS, simulator: d.simulator }),
  (d) => ({ ...d, broadcastId: '' }),
  (d) => ({ ...d, apiKeyId: '' }),
]
/** 26 values a row: far below SQLite's limit on bound values. */
const ROWS_PER_UPSERT = 50

const sentDims = prepared((q) =>
  q
    .select({ id: emails.id, fromEmail: emails.fromEmail, domainId: emails.domainId, apiKeyId: emails.apiKeyId, broadcastId: emails.broadcastId, simulator: emails.simulator })
    .from(emails)
    .where(inArray(emails.id, listOf('ids')))
    .prepare(),
)
const receivedDims = prepared((q) =>
  q
    .select({ id: inboundEmails.id, domainId: inboundEmails.domainId, domain: domains.name })
    .from(inboundEmails)
    .leftJoin(domains, eq(domains.id, inboundEmails.domainId))
    .where(inArray(inboundEmails.id, listOf('ids')))
    .prepare(),
)
/** Which of these emails were opened or clicked before: their next open or click is not unique. */
const engagedBefore = prepared((q) =>
  q
    .selectDistinct({ emailId: emailEvents.emailId, type: emailEvents.type })
    .from(emailEvents)
    .where(and(inArray(emailEvents.emailId, listOf('ids')), inArray(emailEvents.type, ['opened', 'clicked'])))
    .prepare(),
)
const upsertRollups = rowInserter(metricRollups, {
  target: [metricRollups.accountId, metricRollups.level, metricRollups.grain, metricRollups.bucket, metricRollups.simulator, metricRollups.domain, metricRollups.domainId, metricRollups.apiKeyId, metricRollups.broadcastId],
  set: Object.fromEntries(COUNTERS.map((c) => [c, sql`${metricRollups[c]} + excluded.${sql.identifier(c)}`])),
})

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase()

/** The dimensions of sent emails and, for `received` events, of received ones. */
async function dimsOf(q: Executor, sentIds: Set<string>, receivedIds: Set<string>): Promise<Map<string, Dims>> {
  const out = new Map<string, Dims>()
  if (sentIds.size) {
    for (const r of await sentDims(q).all({ ids: JSON.stringify([...sentIds]) })) {
      out.set(r.id, { simulator: r.simulator, domain: domainOf(r.fromEmail), domainId: r.domainId ?? '', apiKeyId: r.apiKeyId ?? '', broadcastId: r.broadcastId ?? '' })
    }
  }
  if (receivedIds.size) {
    for (const r of await receivedDims(q).all({ ids: JSON.stringify([...receivedIds]) })) out.set(r.id, { ...NO_DIMS, domain: r.domain ?? '', domainId: r.domainId })
  }
  return out
}

interface EventLike {
  emailId: string
  type: EmailEventType
  data?: Record<string, unknown>
}

/**
 * Walks events in the order they happened and hands each counted one its email's
 * dimensions and what it adds. `seen` holds `type:emailId` for emails opened or
 * clicked earlier, so only an email's first open and first click are unique.
 */
async function walk<E extends EventLike>(q: Executor, events: E[], seen: Set<string>, each: (e: E, d: Dims, counts: readonly string[]) => void) {
  const sentIds = new Set<string>()
  const receivedIds = new Set<string>()
  for (const e of events) (e.type === 'received' ? receivedIds : sentIds).add(e.emailId)
  const dims = await dimsOf(q, sentIds, receivedIds)
  for (const e of events) {
    const engagement = `${e.type}:${e.emailId}`
    const first = (e.type === 'opened' || e.type === 'clicked') && !seen.has(engagement)
    if (first) seen.add(engagement)
    const counts = countsOf(e.type, e.data, first)
    if (counts.length) each(e, dims.get(e.emailId) ?? NO_DIMS, counts)
  }
}

/**
 * Adds events to the rollups in the caller's transaction: one row per distinct
 * (account, bucket, dimensions) of the batch and grain, written in a few multi-row
 * upserts. Must run before the events themselves are inserted: an email's earlier
 * opens and clicks are read from the event record to tell a first one.
 */
export async function rollUp(tx: Tx, events: NewEvent[]) {
  const counted = events.filter((e) => COUNTED.has(e.type))
  if (!counted.length) return
  const engaged = [...new Set(counted.filter((e) => e.type === 'opened' || e.type === 'clicked').map((e) => e.emailId))]
  const seen = new Set<string>()
  if (engaged.length) for (const r of await engagedBefore(tx).all({ ids: JSON.stringify(engaged) })) seen.add(`${r.type}:${r.emailId}`)
  const rows = new Map<string, typeof metricRollups.$inferInsert & Counts>()
  await walk(tx, counted, seen, (e, dims, counts) => {
    const minute = Date.parse(e.at) / 60_000
    LEVELS.forEach((project, level) => {
      const d = project(dims)
      for (const grain of GRAINS) {
        const bucket = floorTo(minute, grain)
        const key = `${e.accountId}\n${level}\n${grain}\n${bucket}\n${d.simulator}\n${d.domain}\n${d.domainId}\n${d.apiKeyId}\n${d.broadcastId}`
        let row = rows.get(key)
        if (!row) rows.set(key, (row = { accountId: e.accountId, level, grain, bucket, ...d, ...zeroCounts() }))
        for (const c of counts) row[c as keyof Counts]++
      }
    })
  })
  const all = [...rows.values()]
  for (let i = 0; i < all.length; i += ROWS_PER_UPSERT) await upsertRollups(tx, all.slice(i, i + ROWS_PER_UPSERT))
}

/** A part of a window, in ms and quarter-hour aligned, whose counts are summed under `key` (a period's index). */
export interface Slice {
  from: number
  to: number
  key: number
}

/** Which events count: every condition given must hold (lists are any-of; '' is "none"). */
export interface EventFilter {
  simulator?: boolean
  domains?: string[]
  domainIds?: string[]
  apiKeyIds?: string[]
  broadcastIds?: string[]
}

export type GroupColumn = 'domain' | 'domain_id' | 'api_key_id' | 'broadcast_id' | 'email_id'
export type Summed = Counts & { key: number } & Partial<Record<GroupColumn, string>>

const DIM_OF: Record<Exclude<GroupColumn, 'email_id'>, Exclude<keyof Dims, 'simulator'>> = { domain: 'domain', domain_id: 'domainId', api_key_id: 'apiKeyId', broadcast_id: 'broadcastId' }
const FILTERS = [
  ['domains', 'domain'],
  ['domainIds', 'domain_id'],
  ['apiKeyIds', 'api_key_id'],
  ['broadcastIds', 'broadcast_id'],
] as const

/** A slice as bucket ranges `[grain, fromMinute, toMinute, key]`: quarters up to the first hour, hours up to the first day, whole days, and back down. */
function ranges(s: Slice): [number, number, number, number][] {
  const out: [number, number, number, number][] = []
  const add = (grain: number, lo: number, hi: number) => lo < hi && out.push([grain, lo, hi, s.key])
  const a = s.from / 60_000
  const b = s.to / 60_000
  const hourA = Math.ceil(a / 60) * 60
  const hourB = floorTo(b, 60)
  if (hourA > hourB) {
    add(15, a, b)
    return out
  }
  const dayA = Math.ceil(hourA / 1440) * 1440
  const dayB = floorTo(hourB, 1440)
  add(15, a, hourA)
  if (dayA > dayB) add(60, hourA, hourB)
  else {
    add(60, hourA, dayA)
    add(1440, dayA, dayB)
    add(60, dayB, hourB)
  }
  add(15, hourB, b)
  return out
}

/** The least detailed level that keeps every column a query filters or groups on. */
function levelFor(used: Set<string>): number {
  if (used.has('broadcast_id') && used.has('api_key_id')) throw new Error('no rollup level keeps both the broadcast and the API key')
  return used.has('broadcast_id') ? 2 : used.size ? 1 : 0
}

/**
 * The counts of an account's events in each slice, from the rollups, grouped by
 * slice and the columns asked for. The ranges are joined to the rollups in the
 * order given (CROSS JOIN), so each is one seek on the key.
 */
export async function sumRollups(q: Executor, accountId: string, slices: Slice[], f: EventFilter, groupBy: Exclude<GroupColumn, 'email_id'>[] = []): Promise<Summed[]> {
  const rs = slices.flatMap(ranges)
  if (!rs.length) return []
  const level = levelFor(new Set([...groupBy, ...FILTERS.filter(([field]) => f[field]).map(([, column]) => column)]))
  const conds: SQL[] = []
  if (f.simulator !== undefined) conds.push(sql` and m.simulator = ${f.simulator ? 1 : 0}`)
  for (const [field, column] of FILTERS) {
    const values = f[field]
    if (values) conds.push(sql` and m.${sql.identifier(column)} in (select value from json_each(${JSON.stringify(values)}))`)
  }
  const groups = groupBy.map((c) => sql`, m.${sql.identifier(c)} as ${sql.identifier(c)}`)
  const sums = sql.join(COUNTERS.map((c) => sql`sum(m.${sql.identifier(c)}) as ${sql.identifier(c)}`), sql`, `)
  return q.all<Summed>(sql`
    with r as (select json_extract(value, '$[0]') as g, json_extract(value, '$[1]') as lo, json_extract(value, '$[2]') as hi, json_extract(value, '$[3]') as k from json_each(${JSON.stringify(rs)}))
    select r.k as key${sql.join(groups)}, ${sums}
    from r cross join ${metricRollups} m
    where m.account_id = ${accountId} and m.level = ${level} and m.grain = r.g and m.bucket >= r.lo and m.bucket < r.hi${sql.join(conds)}
    group by r.k${sql.join(groupBy.map((c) => sql`, m.${sql.identifier(c)}`))}`)
}

/** The slice holding instant `t`, by bisection: slices come in time order and do not overlap. */
function sliceAt(slices: Slice[], t: number): Slice | undefined {
  let lo = 0
  let hi = slices.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (t < slices[mid].from) hi = mid - 1
    else if (t >= slices[mid].to) lo = mid + 1
    else return slices[mid]
  }
  return undefined
}

const matches = (d: Dims, f: EventFilter) =>
  (f.simulator === undefined || d.simulator === f.simulator) && FILTERS.every(([field, column]) => !f[field] || f[field]!.includes(d[DIM_OF[column]]))

/**
 * The same counts read from the event record of up to a hundred emails, grouped
 * also by `email_id` when asked: an email's events are few, and rollups do not
 * keep emails apart. Uniqueness is decided as the rollups decide it.
 */
export async function sumEmailEvents(q: Executor, accountId: string, emailIds: string[], slices: Slice[], f: EventFilter, groupBy: GroupColumn[]): Promise<Summed[]> {
  const events = await q
    .select({ emailId: emailEvents.emailId, type: emailEvents.type, data: emailEvents.data, at: emailEvents.createdAt })
    .from(emailEvents)
    .where(and(eq(emailEvents.accountId, accountId), inArray(emailEvents.emailId, emailIds)))
    .orderBy(asc(emailEvents.emailId), asc(emailEvents.id))
  const out = new Map<string, Summed>()
  await walk(q, events, new Set(), (e, d, counts) => {
    if (!matches(d, f)) return
    const t = Date.parse(e.at)
    const slice = sliceAt(slices, t)
    if (!slice) return
    const values = Object.fromEntries(groupBy.map((c) => [c, c === 'email_id' ? e.emailId : d[DIM_OF[c]]]))
    const key = JSON.stringify([slice.key, ...Object.values(values)])
    let row = out.get(key)
    if (!row) out.set(key, (row = { key: slice.key, ...values, ...zeroCounts() }))
    for (const c of counts) row[c as keyof Counts]++
  })
  return [...out.values()]
}
