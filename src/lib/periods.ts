export type Period = 'hourly' | 'daily' | 'weekly' | 'monthly'

/** UTC start and end of the budget period that contains `now` (weeks start on Monday). */
export function periodBounds(period: Period, now: number): { start: number; end: number } {
  const d = new Date(now)
  const y = d.getUTCFullYear()
  const m = d.getUTCMonth()
  const day = d.getUTCDate()
  switch (period) {
    case 'hourly': {
      const start = Date.UTC(y, m, day, d.getUTCHours())
      return { start, end: start + 3_600_000 }
    }
    case 'daily': {
      const start = Date.UTC(y, m, day)
      return { start, end: start + 86_400_000 }
    }
    case 'weekly': {
      const start = Date.UTC(y, m, day - ((d.getUTCDay() + 6) % 7))
      return { start, end: start + 7 * 86_400_000 }
    }
    case 'monthly':
      return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) }
  }
}
