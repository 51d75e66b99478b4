/** Time comes from here so tests can move it instead of sleeping. */
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock tests set and advance by hand. */
export class ManualClock implements Clock {
  private t: number
  constructor(start: string | number = '2026-01-01T00:00:00.000Z') {
    this.t = typeof start === 'number' ? start : Date.parse(start)
  }
  now() {
    return this.t
  }
  set(iso: string | number) {
    this.t = typeof iso === 'number' ? iso : Date.parse(iso)
  }
  advance(ms: number) {
    this.t += ms
  }
}

export const iso = (ms: number) => new Date(ms).toISOString()
export const MINUTE = 60_000
export const HOUR = 3_600_000
export const DAY = 24 * HOUR
