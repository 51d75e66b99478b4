import { and, eq, inArray } from 'drizzle-orm'
import { apiKeys, broadcasts } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import type { ErrorCode } from '../errors/catalogue'
import type { Actor } from '../lib/actor'
import { DAY, iso } from '../lib/clock'
import { UUID_RE } from '../lib/ids'
import { addCounts, COUNTERS, METRICS, rate, zeroCounts, type Counter, type Counts, type Metric } from './counters'
import { sumEmailEvents, sumRollups, type EventFilter, type GroupColumn, type Slice, type Summed } from './rollup'
import type { EmailMetricsQuery, MetricsQuery } from './schema'
import { addWallDays, ceilTo, floorTo, isoIn, isZone, parseInstant, periodBoundaries, QUARTER, type Granularity, type Instant } from './time'

/** The seed's limit on periods, which also bounds the daily series of GET /metrics. */
const MAX_PERIODS = 10_000
/** GET /metrics without `since`: the week before `until`. */
const DEFAULT_WINDOW = 7 * DAY

const refuse = (code: ErrorCode, field: string, message: string) =>
  new AppError(code, { message: `\`${field}\`: ${message}.`, ...(code === 'validation_error' ? { details: [{ field: `query.${field}`, message }] } : {}) })

function instant(text: string, field: string, zone: string): Instant {
  const at = parseInstant(text, zone)
  if (!at) throw refuse('validation_error', field, 'must be an ISO 8601 date (2026-07-01) or date-time (2026-07-01T09:30:00Z)')
  return at
}

/** A list parameter's values (comma-separated, repeated, or both), each one of `allowed` or, without it, a UUID; at most `max`. */
function list<T extends string>(value: string | string[] | undefined, field: string, allowed?: readonly T[], max = 100): T[] | undefined {
  if (value === undefined) return undefined
  const values = [...new Set((Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean))]
  const wrong = values.find((v) => (allowed ? !allowed.includes(v as T) : !UUID_RE.test(v)))
  if (wrong !== undefined) throw refuse('validation_error', field, `\`${wrong}\` is not ${allowed ? `one of ${allowed.map((a) => `\`${a}\``).join(', ')}` : 'a UUID'}`)
  if (values.length > max) throw refuse('validation_error', field, `at most ${max} values (${values.length} given)`)
  return (allowed ? values : values.map((v) => v.toLowerCase())) as T[]
}

/** One of two names for the same parameter (`since` or `start_date`); both only when they agree. */
function either(q: Record<string, unknown>, a: string, b: string): { field: string; text: string } | undefined {
  const [x, y] = [q[a], q[b]] as (string | undefined)[]
  if (x !== undefined && y !== undefined && x !== y) throw refuse('validation_error', b, `the same as \`${a}\`; give one of them`)
  if (x !== undefined) return { field: a, text: x }
  if (y !== undefined) return { field: b, text: y }
  return undefined
}

/**
 * The window as counted: rollups keep quarter-hours, so a start inside one counts
 * from its beginning and an end inside one to its end; an end at now takes in the
 * whole quarter-hour of now, events of this very instant included. `shown` is the
 * end the reply gives: the counted end, or now when that lies ahead (nothing
 * happened after now).
 */
function counted(start: number, end: number, now: number) {
  const from = floorTo(start, QUARTER)
  const to = end >= now ? floorTo(now, QUARTER) + QUARTER : ceilTo(end, QUARTER)
  return { from, to, shown: Math.min(to, Math.max(now, from)) }
}

// ---- GET /metrics ----------------------------------------------------------

const totalsOf = (c: Counts) => ({ sent: c.sent, delivered: c.delivered, bounced: c.bounced, complaints: c.complained, opens: c.opened, clicks: c.clicked })
const hasAny = (c: Counts) => Object.values(totalsOf(c)).some((n) => n > 0)
const sum = (rows: Counts[]) => rows.reduce((acc, r) => addCounts(acc, r), zeroCounts())
const countsIn = (r: Summed): Counts => Object.fromEntries(COUNTERS.map((c) => [c, Number(r[c] ?? 0)])) as Counts

/**
 * GET /metrics: totals over the window, the same for the window of the same length
 * just before it, a UTC daily series, and breakdowns by sending domain and API key
 * when `group_by` asks. Simulator sends count here. With `event`, every series and
 * breakdown element also carries that event's figure as `count`, and the
 * breakdowns are ordered by it.
 */
export async function getMetrics(deps: Deps, actor: Actor, q: MetricsQuery) {
  const now = deps.clock.now()
  const since = either(q, 'since', 'start_date')
  const until = either(q, 'until', 'end_date')
  const untilAt = until && instant(until.text, until.field, 'UTC')
  const end = untilAt ? Math.min(untilAt.dayEnd ?? untilAt.t, now) : now
  const start = since ? instant(since.text, since.field, 'UTC').t : end - DEFAULT_WINDOW
  if (start > end) throw refuse('validation_error', since?.field ?? 'since', `is after the end of the window (${iso(end)})`)
  const w = counted(start, end, now)
  const days = periodBoundaries('UTC', 'daily', w.from, w.to, MAX_PERIODS)
  if (!days) throw refuse('validation_error', since?.field ?? 'since', `the window spans more than ${MAX_PERIODS} days`)

  const filter: EventFilter = {
    ...(q.domain !== undefined ? { domains: [q.domain.trim().toLowerCase()] } : {}),
    ...(q.api_key_id !== undefined ? { apiKeyIds: [q.api_key_id === 'none' ? '' : q.api_key_id.toLowerCase()] } : {}),
  }
  const groups = new Set(list(q.group_by, 'group_by', ['domain', 'api_key'] as const))
  // The window before rides along with the days as one more slice (key -1); both breakdowns come from one read by domain and key.
  const [timeline, pairs] = await Promise.all([
    sumRollups(deps.db.q, actor.accountId, [{ from: w.from - (w.to - w.from), to: w.from, key: -1 }, ...slicesOf(days, w.from, w.to)], filter),
    groups.size ? sumRollups(deps.db.q, actor.accountId, [{ from: w.from, to: w.to, key: 0 }], filter, ['domain', 'api_key_id']) : [],
  ])

  const event = q.event as Counter | undefined
  const element = (c: Counts) => ({ ...totalsOf(c), ...(event ? { count: c[event] } : {}) })
  const byKey = new Map(timeline.map((r) => [r.key, countsIn(r)]))
  const series = days.slice(0, -1).map((start, i) => ({ date: iso(start).slice(0, 10), ...element(byKey.get(i) ?? zeroCounts()) }))
  /** The breakdown by one column: its rows added up per value, those with nothing to show left out, the most first. */
  const breakdown = (column: 'domain' | 'api_key_id') => {
    const by = new Map<string, Counts>()
    for (const r of pairs) {
      const name = r[column] || 'none'
      by.set(name, addCounts(by.get(name) ?? zeroCounts(), countsIn(r)))
    }
    return [...by]
      .filter(([, c]) => hasAny(c))
      .sort(([an, a], [bn, b]) => (event ? b[event] - a[event] : b.sent - a.sent) || an.localeCompare(bn))
  }
  const byApiKey = groups.has('api_key') ? breakdown('api_key_id') : []
  const names = await namesOf(deps, actor, apiKeys, byApiKey.map(([id]) => id).filter((id) => id !== 'none'))

  return {
    object: 'metrics' as const,
    since: iso(w.from),
    until: iso(w.shown),
    event: q.event ?? null,
    totals: totalsOf(sum(series.map((_, i) => byKey.get(i) ?? zeroCounts()))),
    previous: totalsOf(byKey.get(-1) ?? zeroCounts()),
    series,
    by_domain: groups.has('domain') ? breakdown('domain').map(([domain, c]) => ({ domain, ...element(c) })) : [],
    by_api_key: byApiKey.map(([id, c]) => ({ api_key_id: id, name: names.get(id) ?? null, ...element(c) })),
  }
}

/** The names of an account's keys or broadcasts by id; ids without one (gone, or no name) are left out. */
async function namesOf(deps: Deps, actor: Actor, table: typeof apiKeys | typeof broadcasts, ids: string[]) {
  if (!ids.length) return new Map<string, string>()
  const rows: { id: string; name: string | null }[] = await deps.db.q
    .select({ id: table.id, name: table.name })
    .from(table as typeof broadcasts)
    .where(and(eq(table.accountId, actor.accountId), inArray(table.id, [...new Set(ids)])))
  return new Map(rows.flatMap((r) => (r.name === null ? [] : [[r.id, r.name] as const])))
}

/** Periods as slices of the counted window: the first and last clipped to it, boundaries on quarter-hours. */
function slicesOf(boundaries: number[], from: number, to: number): Slice[] {
  return boundaries.slice(0, -1).map((b, i) => ({
    from: Math.max(floorTo(b, QUARTER), from),
    to: Math.min(floorTo(boundaries[i + 1], QUARTER), to),
    key: i,
  }))
}

// ---- GET /emails/metrics (the legacy-compatible form) ----------------------

/** A call with any of these is answered as GET /metrics. */
const METRICS_FORM = ['since', 'until', 'group_by', 'event', 'domain', 'api_key_id'] as const
/** Parameters GET /metrics does not take. */
const LEGACY_ONLY = ['timezone', 'granularity', 'metrics', 'dimensions', 'domain_id', 'email_id', 'broadcast_id'] as const
const DIMENSIONS = ['period', 'domain', 'email', 'broadcast'] as const
type Dimension = (typeof DIMENSIONS)[number]
const GROUPS: Record<Exclude<Dimension, 'period'>, GroupColumn[]> = { domain: ['domain_id', 'domain'], email: ['email_id'], broadcast: ['broadcast_id'] }

const pick = (metrics: readonly Metric[], c: Counts) =>
  Object.fromEntries(metrics.map((m) => [m, (COUNTERS as readonly string[]).includes(m) ? c[m as Counter] : rate(c, m as Exclude<Metric, Counter>)]))

/**
 * GET /emails/metrics in Resend's shape: totals of the chosen metrics over the
 * range and, with `dimensions`, one row per period, domain, email or broadcast.
 * Simulator sends are not counted. Periods are calendar periods of `timezone`.
 */
export async function getEmailMetrics(deps: Deps, actor: Actor, q: EmailMetricsQuery) {
  if (METRICS_FORM.some((k) => q[k] !== undefined)) {
    const extra = LEGACY_ONLY.filter((k) => q[k] !== undefined)
    if (extra.length) {
      const why = `not a parameter of the GET /metrics form, which \`${METRICS_FORM.find((k) => q[k] !== undefined)}\` asks for`
      throw new AppError('validation_error', { message: `\`${extra.join('`, `')}\`: ${why}.`, details: extra.map((f) => ({ field: `query.${f}`, message: why })) })
    }
    return getMetrics(deps, actor, q)
  }
  const zone = q.timezone ?? 'UTC'
  if (!isZone(zone)) throw refuse('validation_error', 'timezone', 'must be an IANA time zone such as America/New_York')
  const granularity: Granularity = q.granularity ?? 'daily'
  const asked = list(q.metrics, 'metrics', METRICS)
  const metrics: Metric[] = METRICS.filter((m) => !asked || asked.includes(m))
  const dimensions = list(q.dimensions, 'dimensions', DIMENSIONS)
  const dims = DIMENSIONS.filter((d) => dimensions?.includes(d))
  const domainIds = list(q.domain_id, 'domain_id')
  const emailIds = list(q.email_id, 'email_id')
  const broadcastIds = list(q.broadcast_id, 'broadcast_id')
  if (dims.includes('email') && dims.includes('broadcast')) throw refuse('invalid_parameter', 'dimensions', '`email` cannot be combined with `broadcast`')
  if (emailIds && (broadcastIds || dims.includes('broadcast'))) throw refuse('invalid_parameter', 'email_id', 'cannot be combined with `broadcast_id` or the `broadcast` dimension')
  if (broadcastIds && dims.includes('email')) throw refuse('invalid_parameter', 'broadcast_id', 'cannot be combined with the `email` dimension')
  if (dims.includes('email') && !emailIds) throw refuse('invalid_parameter', 'dimensions', 'the `email` dimension needs `email_id` (up to 100 emails)')

  const now = deps.clock.now()
  const endAt = q.end_date === undefined ? undefined : instant(q.end_date, 'end_date', zone)
  const end = Math.min(endAt ? (endAt.dayEnd ?? endAt.t) : now, now)
  // Six days before the end: before the end date's own day when the end is a date.
  const start = q.start_date !== undefined ? instant(q.start_date, 'start_date', zone).t : addWallDays(zone, endAt?.dayEnd ? endAt.t : end, -6)
  if (start > end) throw refuse('invalid_parameter', 'start_date', `is after \`end_date\` (${iso(end)})`)
  const w = counted(start, end, now)

  let slices: Slice[] = [{ from: w.from, to: w.to, key: 0 }]
  let labels: string[] = []
  if (dims.includes('period')) {
    const boundaries = periodBoundaries(zone, granularity, w.from, w.to, MAX_PERIODS)
    if (!boundaries) throw refuse('invalid_parameter', 'granularity', `the range holds more than ${MAX_PERIODS} ${granularity} periods; narrow the range or choose a larger granularity`)
    slices = slicesOf(boundaries, w.from, w.to)
    labels = boundaries.slice(0, -1).map((b) => isoIn(zone, b))
  }
  const filter: EventFilter = { simulator: false, ...(domainIds ? { domainIds } : {}), ...(broadcastIds ? { broadcastIds } : {}) }
  const groupBy = dims.flatMap((d) => (d === 'period' ? [] : GROUPS[d]))
  const rows = emailIds
    ? await sumEmailEvents(deps.db.q, actor.accountId, emailIds, slices, filter, groupBy)
    : await sumRollups(deps.db.q, actor.accountId, slices, filter, groupBy as Exclude<GroupColumn, 'email_id'>[])

  const reply = {
    object: 'metrics' as const,
    start_date: iso(w.from),
    end_date: iso(w.shown),
    timezone: zone,
    granularity,
    metrics,
    dimensions: dims,
    totals: pick(metrics, sum(rows.map(countsIn))),
  }
  if (!dims.length) return reply
  // A series alone lists every period, empty ones too; with other dimensions, only combinations with a figure to show.
  const series = dims.length === 1 && dims[0] === 'period'
  const byKey = new Map(rows.map((r) => [r.key, r]))
  const all = series ? labels.map((_, key) => byKey.get(key) ?? { key, ...zeroCounts() }) : rows.filter((r) => Object.values(pick(metrics, countsIn(r))).some((v) => v > 0))
  const broadcastNames = dims.includes('broadcast') ? await namesOf(deps, actor, broadcasts, all.map((r) => r.broadcast_id!).filter(Boolean)) : new Map<string, string>()
  const data = all
    .map((r) => ({
      ...(dims.includes('period') ? { period: labels[r.key] } : {}),
      ...(dims.includes('domain') ? { domain_id: r.domain_id || null, domain_name: r.domain || null } : {}),
      ...(dims.includes('email') ? { email_id: r.email_id! } : {}),
      ...(dims.includes('broadcast') ? { broadcast_id: r.broadcast_id || null, broadcast_name: broadcastNames.get(r.broadcast_id!) ?? null } : {}),
      ...pick(metrics, countsIn(r as Summed)),
      key: r.key,
    }))
    .sort((a, b) => a.key - b.key || (a.domain_name ?? '').localeCompare(b.domain_name ?? '') || (a.email_id ?? '').localeCompare(b.email_id ?? '') || (a.broadcast_id ?? '').localeCompare(b.broadcast_id ?? ''))
    .map(({ key: _, ...row }) => row)
  return { ...reply, data }
}
