import { and, asc, eq, getTableColumns, inArray, sql, type SQL } from 'drizzle-orm'
import type { Executor, Tx } from '../db'
import { listOf, prepared, rowInserter } from '../db/prepared'
import { domains, emailEvents, emails, inboundEmails, metricCounts, metricSeries, type EmailEventType } from '../db/tables'
import type { NewEvent } from '../emails/events'
import { addCounts, COUNTED, COUNTERS, countsOf, zeroCounts, type Counter, type Counts } from './counters'
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

/** Bucket sizes in minutes, by grain: quarter-hours (any zone's offset is a whole number of them), hours and days, all UTC. */
const GRAINS = [15, 60, 1440] as const
/** How metric_counts ids pack series, grain and bucket (see the table's comment). */
const PER_SERIES = 2 ** 31
const PER_GRAIN = 2 ** 29
const countId = (series: number, grain: number, bucket: number) => series * PER_SERIES + grain * PER_GRAIN + bucket

/** What each level of detail keeps of an event's dimensions (see metric_series). */
const LEVELS: ((d: Dims) => Dims)[] = [
  (d) => ({ ...NO_DIMS, simulator: d.simulator }),
  (d) => ({ ...d, broadcastId: '' }),
  (d) => ({ ...d, apiKeyId: '' }),
]

type SeriesKey = Dims & { accountId: string; level: number }
/** The series named in a JSON list of keys: one seek on the unique key each. */
const seriesIn = prepared((q) =>
  q
    .select(getTableColumns(metricSeries))
    .from(sql`json_each(${sql.placeholder('keys')}) j`)
    .innerJoin(
      metricSeries,
      sql`${metricSeries.accountId} = j.value ->> 0 and ${metricSeries.level} = j.value ->> 1 and ${metricSeries.simulator} = j.value ->> 2 and ${metricSeries.domain} = j.value ->> 3
        and ${metricSeries.domainId} = j.value ->> 4 and ${metricSeries.apiKeyId} = j.value ->> 5 and ${metricSeries.broadcastId} = j.value ->> 6`,
    )
    .prepare(),
)
const addSeries = rowInserter(metricSeries, {
  target: [metricSeries.accountId, metricSeries.level, metricSeries.simulator, metricSeries.domain, metricSeries.domainId, metricSeries.apiKeyId, metricSeries.broadcastId],
})
const upsertCounts = rowInserter(metricCounts, { target: [metricCounts.id], set: Object.fromEntries(COUNTERS.map((c) => [c, sql`${metricCounts[c]} + excluded.${sql.identifier(c)}`])) })

const keyText = (k: SeriesKey) => JSON.stringify([k.accountId, k.level, k.simulator ? 1 : 0, k.domain, k.domainId, k.apiKeyId, k.broadcastId])

/** The ids of these series, made for those that do not exist yet. */
async function seriesIds(tx: Tx, keys: Map<string, SeriesKey>): Promise<Map<string, number>> {
  const list = () => `[${[...keys.keys()].join(',')}]`
  const found = async () => new Map((await seriesIn(tx).all({ keys: list() })).map((r) => [keyText(r), r.id]))
  let ids = await found()
  if (ids.size < keys.size) {
    await addSeries(tx, [...keys].filter(([k]) => !ids.has(k)).map(([, v]) => v))
    ids = await found()
  }
  return ids
}

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
async function walk<E extends EventLike>(q: Executor, events: E[], seen: Set<string>, each: (e: E, d: Dims, counts: Counter[]) => void) {
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
 * Adds events to the rollups in the caller's transaction: each event to its series
 * at every level and to its bucket at every grain, one upsert row per distinct
 * (series, grain, bucket) of the batch. Must run before the events themselves are
 * inserted: an email's earlier opens and clicks are read from the event record to
 * tell a first one.
 */
export async function rollUp(tx: Tx, events: NewEvent[]) {
  const counted = events.filter((e) => COUNTED.has(e.type))
  if (!counted.length) return
  const engaged = [...new Set(counted.filter((e) => e.type === 'opened' || e.type === 'clicked').map((e) => e.emailId))]
  const seen = new Set<string>()
  if (engaged.length) for (const r of await engagedBefore(tx).all({ ids: JSON.stringify(engaged) })) seen.add(`${r.type}:${r.emailId}`)
  const series = new Map<string, SeriesKey>()
  // An email's events share its series: their keys are made once per email.
  const seriesOf = new Map<string, string[]>()
  const adds: { series: string[]; minute: number; counts: Counter[] }[] = []
  await walk(tx, counted, seen, (e, dims, counts) => {
    let texts = seriesOf.get(e.emailId)
    if (!texts) {
      texts = LEVELS.map((project, level) => {
        const key: SeriesKey = { accountId: e.accountId, level, ...project(dims) }
        const text = keyText(key)
        series.set(text, key)
        return text
      })
      seriesOf.set(e.emailId, texts)
    }
    adds.push({ series: texts, minute: Date.parse(e.at) / 60_000, counts })
  })
  const ids = await seriesIds(tx, series)
  const rows = new Map<number, Counts & { id: number }>()
  for (const a of adds) {
    for (const text of a.series) {
      const s = ids.get(text)!
      for (let grain = 0; grain < GRAINS.length; grain++) {
        const id = countId(s, grain, Math.floor(a.minute / GRAINS[grain]))
        let row = rows.get(id)
        if (!row) rows.set(id, (row = { id, ...zeroCounts() }))
        for (const c of a.counts) row[c]++
      }
    }
  }
  const all = [...rows.values()]
  await upsertCounts(tx, all)
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

/** A slice as bucket ranges `[grain, fromBucket, toBucket, key]`: quarters up to the first hour, hours up to the first day, whole days, and back down. */
function ranges(s: Slice): [number, number, number, number][] {
  const out: [number, number, number, number][] = []
  const add = (grain: number, lo: number, hi: number) => lo < hi && out.push([grain, lo / GRAINS[grain], hi / GRAINS[grain], s.key])
  // Nothing happened before 1970, and bucket numbers below zero would read another grain's rows.
  const a = Math.max(s.from, 0) / 60_000
  const b = Math.max(s.to, 0) / 60_000
  const hourA = Math.ceil(a / 60) * 60
  const hourB = floorTo(b, 60)
  if (hourA > hourB) {
    add(0, a, b)
    return out
  }
  const dayA = Math.ceil(hourA / 1440) * 1440
  const dayB = floorTo(hourB, 1440)
  add(0, a, hourA)
  if (dayA >= dayB) add(1, hourA, hourB)
  else {
    add(1, hourA, dayA)
    add(2, dayA, dayB)
    add(1, dayB, hourB)
  }
  add(0, hourB, b)
  return out
}

/** The least detailed level that keeps every column a query filters or groups on. */
function levelFor(used: Set<string>): number {
  if (used.has('broadcast_id') && used.has('api_key_id')) throw new Error('no rollup level keeps both the broadcast and the API key')
  return used.has('broadcast_id') ? 2 : used.size ? 1 : 0
}

/**
 * The counts of an account's events in each slice, from the rollups, grouped by
 * slice and the columns asked for: for each series of the level that passes the
 * filter, and each bucket range of the slices, one range read of adjacent rows
 * (the CROSS JOINs keep that loop order; the ranges are materialized once).
 * Over a single slice the sums are grouped by series, which follows that order
 * and needs no sorting, and series that share the columns asked for are added up
 * here.
 */
export async function sumRollups(q: Executor, accountId: string, slices: Slice[], f: EventFilter, groupBy: Exclude<GroupColumn, 'email_id'>[] = []): Promise<Summed[]> {
  const rs = slices.flatMap(ranges)
  if (!rs.length) return []
  const level = levelFor(new Set([...groupBy, ...FILTERS.filter(([field]) => f[field]).map(([, column]) => column)]))
  const conds: SQL[] = []
  if (f.simulator !== undefined) conds.push(sql` and simulator = ${f.simulator ? 1 : 0}`)
  for (const [field, column] of FILTERS) {
    const values = f[field]
    if (values) conds.push(sql` and ${sql.identifier(column)} in (select value from json_each(${JSON.stringify(values)}))`)
  }
  const groups = groupBy.map((c) => sql`, s.${sql.identifier(c)} as ${sql.identifier(c)}`)
  const sums = sql.join(COUNTERS.map((c) => sql`sum(c.${sql.identifier(c)}) as ${sql.identifier(c)}`), sql`, `)
  const first = sql`s.id * ${PER_SERIES} + r.g * ${PER_GRAIN}`
  const groupClause = groupBy.length && slices.length === 1 ? sql`s.id` : sql`r.k${sql.join(groupBy.map((c) => sql`, s.${sql.identifier(c)}`))}`
  const rows = await q.all<Summed>(sql`
    with s as (select * from ${metricSeries} where account_id = ${accountId} and level = ${level}${sql.join(conds)}),
      r as materialized (select value ->> 0 as g, value ->> 1 as lo, value ->> 2 as hi, value ->> 3 as k from json_each(${JSON.stringify(rs)}))
    select r.k as key${sql.join(groups)}, ${sums}
    from s cross join r cross join ${metricCounts} c
    where c.id >= ${first} + r.lo and c.id < ${first} + r.hi
    group by ${groupClause}`)
  const merged = new Map<string, Summed>()
  for (const r of rows) {
    const key = JSON.stringify([r.key, ...groupBy.map((c) => r[c])])
    const into = merged.get(key)
    if (into) addCounts(into, r)
    else merged.set(key, r)
  }
  return [...merged.values()]
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
    for (const c of counts) row[c]++
  })
  return [...out.values()]
}
