import { HOUR } from '../lib/clock'

const FIRST_WAIT_MS = 30_000
const LONGEST_WAIT_MS = 15 * 60_000
const FORGET_AFTER_MS = HOUR

interface Failures {
  count: number
  last: number
}

/**
 * Failed sign-in attempts per key (an address, a client, a person's second
 * factor). The first `free` failures cost nothing; after them a check is due:
 * the next attempt must wait 30 seconds after the last failure, doubling with
 * each further failure up to 15 minutes. An hour without failures forgets them.
 * Kept in memory per process, like the rate windows; bounded, the entry touched
 * longest ago dropped first.
 */
export class SignInGuard {
  private readonly entries = new Map<string, Failures>()

  constructor(private readonly maxEntries = 100_000) {}

  /** Seconds the next attempt under `key` must still wait; 0 when it may go ahead. */
  wait(key: string, free: number, now: number): number {
    const f = this.live(key, now)
    if (!f || f.count < free) return 0
    const delay = Math.min(FIRST_WAIT_MS * 2 ** (f.count - free), LONGEST_WAIT_MS)
    return Math.max(0, Math.ceil((f.last + delay - now) / 1000))
  }

  fail(key: string, now: number) {
    const f = this.live(key, now) ?? { count: 0, last: now }
    f.count++
    f.last = now
    this.entries.delete(key)
    this.entries.set(key, f)
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break
      this.entries.delete(oldest)
    }
  }

  clear(key: string) {
    this.entries.delete(key)
  }

  private live(key: string, now: number) {
    const f = this.entries.get(key)
    if (f && now - f.last > FORGET_AFTER_MS) {
      this.entries.delete(key)
      return undefined
    }
    return f
  }
}
