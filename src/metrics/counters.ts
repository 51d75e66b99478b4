import type { EmailEventType } from '../db/tables'

/** The counted metrics, in the order the legacy form lists them; each is a column of `metric_rollups`. */
export const COUNTERS = [
  'received', 'sent', 'delivered', 'delivery_delayed', 'failed', 'suppressed',
  'bounced', 'bounced_transient', 'bounced_permanent', 'bounced_undetermined',
  'opened', 'unique_opened', 'clicked', 'unique_clicked', 'complained', 'unsubscribed',
] as const
export type Counter = (typeof COUNTERS)[number]
export type Counts = Record<Counter, number>

/** Rates computed from the counts: numerator over denominator, as a fraction (0 when nothing was sent or delivered). */
export const RATES = {
  delivery_rate: ['delivered', 'sent'],
  open_rate: ['unique_opened', 'delivered'],
  click_rate: ['unique_clicked', 'delivered'],
  bounce_rate: ['bounced', 'sent'],
  complaint_rate: ['complained', 'delivered'],
  unsubscribe_rate: ['unsubscribed', 'delivered'],
} as const satisfies Record<string, [Counter, Counter]>
export type Rate = keyof typeof RATES
export type Metric = Counter | Rate
export const METRICS = [...COUNTERS, 'delivery_rate', 'open_rate', 'click_rate', 'bounce_rate', 'complaint_rate', 'unsubscribe_rate'] as const satisfies readonly Metric[]

const ZERO = Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Counts
// A copy of one object: every rollup row starts here, and building it from the list each time showed in profiles.
export const zeroCounts = (): Counts => ({ ...ZERO })

export function addCounts(into: Counts, from: Partial<Counts>) {
  for (const c of COUNTERS) into[c] += from[c] ?? 0
  return into
}

export function rate(counts: Counts, r: Rate): number {
  const [num, den] = RATES[r]
  return counts[den] ? Math.round((counts[num] / counts[den]) * 10_000) / 10_000 : 0
}

/** The event kinds that count toward some metric; the others (queued, scheduled, canceled) are not rolled up. */
export const COUNTED: ReadonlySet<EmailEventType> = new Set<EmailEventType>([
  'received', 'sent', 'delivered', 'delivery_delayed', 'failed', 'suppressed', 'bounced', 'opened', 'clicked', 'complained', 'unsubscribed',
])

const BOUNCE_TYPES: Record<string, Counter> = { permanent: 'bounced_permanent', transient: 'bounced_transient' }

/**
 * What one event adds. A bounce also counts under its type (Resend's `bounce.type`,
 * undetermined when absent); an open or click is also unique when it is the first
 * of its email (`first`), however many recipients or links the email has.
 */
export function countsOf(type: EmailEventType, data: Record<string, unknown> | undefined, first: boolean): Counter[] {
  switch (type) {
    case 'bounced': {
      const kind = String((data?.bounce as { type?: unknown } | undefined)?.type ?? '').toLowerCase()
      return ['bounced', BOUNCE_TYPES[kind] ?? 'bounced_undetermined']
    }
    case 'opened':
      return first ? ['opened', 'unique_opened'] : ['opened']
    case 'clicked':
      return first ? ['clicked', 'unique_clicked'] : ['clicked']
    default:
      return COUNTED.has(type) ? [type as Counter] : []
  }
}
