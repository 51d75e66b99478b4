import { DAY, HOUR } from '../lib/clock'

/**
 * Time zones and calendar periods for metrics. A "wall" time is a zone's local
 * date and time written as if it were UTC milliseconds (so `new Date(wall)`'s UTC
 * fields are the local fields); instants are real UTC milliseconds.
 */

export const QUARTER = 15 * 60_000
export const floorTo = (t: number, step: number) => Math.floor(t / step) * step
export const ceilTo = (t: number, step: number) => Math.ceil(t / step) * step

export type Granularity = 'hourly' | 'daily' | 'weekly' | 'monthly'

const formats = new Map<string, Intl.DateTimeFormat>()

/**
 * One formatter per zone, kept for the few zones in use (the map is cleared before
 * it grows past them). It writes only the offset (`GMT+05:30`), the cheapest way
 * Intl has to tell it.
 */
function format(zone: string) {
  let f = formats.get(zone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
    if (formats.size >= 64) formats.clear()
    formats.set(zone, f)
  }
  return f
}

/** Whether this runtime knows `zone` as an IANA time zone. */
export function isZone(zone: string): boolean {
  try {
    format(zone)
    return true
  } catch {
    return false
  }
}

const OFFSET = /GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/

/** The zone's offset from UTC at an instant, in ms (local wall time = instant + offset). */
function offsetAt(zone: string, t: number): number {
  if (zone === 'UTC') return 0
  const m = OFFSET.exec(format(zone).format(t))
  if (!m?.[1]) return 0
  const ms = ((+m[2] * 60 + +m[3]) * 60 + +(m[4] ?? 0)) * 1000
  return m[1] === '-' ? -ms : ms
}

/** The zone's wall time at an instant. */
const wallAt = (zone: string, t: number) => t + offsetAt(zone, t)

/**
 * The instant a wall time names. Where clocks fall back and it happens twice, the
 * first; where they spring forward and it never happens, it is read with the
 * offset before the jump (as Temporal's `compatible` does), which puts a skipped
 * midnight at the jump itself: that day starts when its first hour does.
 */
function fromWall(zone: string, wall: number): number {
  const before = offsetAt(zone, wall - DAY)
  const after = offsetAt(zone, wall + DAY)
  const fits = [wall - before, wall - after].filter((t) => offsetAt(zone, t) === wall - t).sort((a, b) => a - b)
  return fits[0] ?? wall - before
}

/** Midnight starting the wall day `days` after the one `wall` falls in. */
const dayStart = (wall: number, days = 0) => {
  const d = new Date(wall)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + days)
}

/** The same wall time `days` later (or earlier), as an instant. */
export const addWallDays = (zone: string, t: number, days: number) => fromWall(zone, wallAt(zone, t) + days * DAY)

/** The start of the zone's calendar period (weeks start on Monday) that contains `t`. */
function periodStart(zone: string, g: Granularity, t: number): number {
  const wall = wallAt(zone, t)
  const d = new Date(wall)
  switch (g) {
    case 'hourly':
      return t - (wall - floorTo(wall, HOUR))
    case 'daily':
      return fromWall(zone, dayStart(wall))
    case 'weekly':
      return fromWall(zone, dayStart(wall, -((d.getUTCDay() + 6) % 7)))
    case 'monthly':
      return fromWall(zone, Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1))
  }
}

/** The start of the period after the one starting at `start`: a day of 23 or 25 hours where clocks change. */
function nextPeriod(zone: string, g: Granularity, start: number): number {
  if (g === 'hourly') return start + HOUR
  const wall = wallAt(zone, start)
  const d = new Date(wall)
  if (g === 'monthly') return fromWall(zone, Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1))
  return fromWall(zone, dayStart(wall, g === 'daily' ? 1 : 7))
}

/**
 * The starts of the periods that cover [from, to), and the end of the last, or
 * null when there would be more than `max` periods.
 */
export function periodBoundaries(zone: string, g: Granularity, from: number, to: number, max: number): number[] | null {
  const out = [periodStart(zone, g, from)]
  while (out[out.length - 1] < to || out.length < 2) {
    if (out.length > max) return null
    out.push(nextPeriod(zone, g, out[out.length - 1]))
  }
  return out
}

const pad = (n: number, w = 2) => String(Math.abs(n)).padStart(w, '0')

/** ISO 8601 in the zone's local time with its offset (`Z` where the offset is zero). */
export function isoIn(zone: string, t: number): string {
  const off = Math.round(offsetAt(zone, t) / 60_000)
  const local = new Date(t + off * 60_000).toISOString().slice(0, 23)
  return off === 0 ? `${local}Z` : `${local}${off < 0 ? '-' : '+'}${pad(Math.trunc(off / 60))}:${pad(off % 60)}`
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i

export interface Instant {
  /** The instant; for a bare date, its first (midnight in the zone). */
  t: number
  /** For a bare date: the instant the day after begins, so an end date covers its whole day. */
  dayEnd?: number
}

/**
 * An ISO 8601 date or date-time. A bare date, and a date-time without an offset,
 * are read in `zone`. Null when the text is neither or names no real date.
 */
export function parseInstant(text: string, zone: string): Instant | null {
  const date = DATE.exec(text)
  if (date) {
    const wall = Date.UTC(+date[1], +date[2] - 1, +date[3])
    if (new Date(wall).getUTCDate() !== +date[3] || new Date(wall).getUTCMonth() !== +date[2] - 1) return null
    return { t: fromWall(zone, wall), dayEnd: fromWall(zone, wall + DAY) }
  }
  const m = DATE_TIME.exec(text)
  if (!m) return null
  const [, y, mo, d, h, mi, s = '0', frac = '', zoneText] = m
  const wall = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s, Math.floor(Number(`0${frac || '.0'}`) * 1000))
  const check = new Date(wall)
  if (check.getUTCDate() !== +d || check.getUTCMonth() !== +mo - 1 || check.getUTCHours() !== +h || check.getUTCMinutes() !== +mi) return null
  if (!zoneText) return { t: fromWall(zone, wall) }
  if (zoneText.toUpperCase() === 'Z') return { t: wall }
  const [, sign, oh, om = '0'] = /^([+-])(\d{2}):?(\d{2})?$/.exec(zoneText)!
  const offset = (+oh * 60 + +om) * 60_000
  return { t: sign === '+' ? wall - offset : wall + offset }
}
