import * as chrono from 'chrono-node'
import { DAY } from '../lib/clock'

/** How far ahead a send may be scheduled. */
export const MAX_SCHEDULE_AHEAD = 30 * DAY

export type ScheduleResult = { ok: true; at: number } | { ok: false; message: string }

const ISO_LIKE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/i

/** `GMT+01:00` style offset of an IANA zone at an instant, in minutes. */
function zoneOffset(zone: string, at: number): number {
  const part = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' }).formatToParts(new Date(at)).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT'
  const m = part.match(/GMT([+-])(\d{2}):?(\d{2})?/)
  if (!m) return 0
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3] ?? 0))
}

function isZone(name: string) {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name })
    return true
  } catch {
    return false
  }
}

/** chrono over the whole text, or null when it reads only part of it (`tomorrow-ish`) or nothing. */
function parseWhole(text: string, now: number, timezone: number | string): number | null {
  const results = chrono.parse(text, { instant: new Date(now), timezone }, { forwardDate: true })
  if (results.length !== 1) return null
  const r = results[0]
  if (r.index !== 0 || r.text.trim().toLowerCase() !== text.trim().toLowerCase()) return null
  return r.start.date().getTime()
}

/**
 * Reads `scheduled_at`: ISO 8601 (a date-time without an offset, or a bare date,
 * is UTC), or natural language through chrono-node (`in 1 hour`, `tomorrow at
 * 9am`, `Friday at 3pm ET`, or ending in an IANA zone such as
 * `tomorrow at 9am Europe/Paris`). Without a zone, natural language is read in
 * UTC. The time must be in the future and at most 30 days ahead.
 */
export function parseSchedule(input: string, now: number): ScheduleResult {
  const text = input.trim()
  let at: number | null = null
  if (ISO_LIKE.test(text)) {
    const hasZone = /(Z|[+-]\d{2}:?\d{2})$/i.test(text) && text.length > 10
    const normal = text.replace(' ', 'T')
    at = Date.parse(hasZone ? normal : normal.length === 10 ? `${normal}T00:00:00Z` : `${normal}Z`)
    if (Number.isNaN(at)) at = null
  } else {
    const zoneMatch = text.match(/^(.*\S)\s+([A-Za-z_]+\/[A-Za-z_]+(?:\/[A-Za-z_]+)?)$/)
    if (zoneMatch && isZone(zoneMatch[2])) {
      const [, rest, zone] = zoneMatch
      at = parseWhole(rest, now, zoneOffset(zone, now))
      // Across a daylight-saving change the offset at the target time differs from now's.
      if (at !== null) {
        const offsetThen = zoneOffset(zone, at)
        if (offsetThen !== zoneOffset(zone, now)) at = parseWhole(rest, now, offsetThen)
      }
    } else {
      at = parseWhole(text, now, 'UTC')
    }
  }
  if (at === null) {
    return { ok: false, message: `\`scheduled_at\` "${input}" is not a time: use ISO 8601 (2026-03-05T09:00:00Z) or words such as "in 1 hour", "tomorrow at 9am" or "Friday at 3pm ET".` }
  }
  if (at <= now) return { ok: false, message: `\`scheduled_at\` "${input}" is ${new Date(at).toISOString()}, which is not in the future.` }
  if (at > now + MAX_SCHEDULE_AHEAD) {
    return { ok: false, message: `\`scheduled_at\` "${input}" is ${new Date(at).toISOString()}, more than 30 days ahead; schedule at most 30 days out.` }
  }
  return { ok: true, at }
}
