/**
 * When to try again, what a reply means, and when to stop trying for everyone
 * (the circuit breaker). Pure functions and one small class: no IO, no timers.
 */

const MIN = 60_000
const HOUR = 60 * MIN

/**
 * Delay before attempt n+1 after the n-th failed attempt (index n-1). Adds up to
 * about 52 hours; the last step repeats until MIN_LIFETIME_MS has passed.
 */
export const RETRY_SCHEDULE_MS = [1 * MIN, 5 * MIN, 15 * MIN, 30 * MIN, 1 * HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR, 12 * HOUR, 12 * HOUR, 12 * HOUR]

/** A message is given up only once it has been tried this long and the schedule is spent. */
export const MIN_LIFETIME_MS = 48 * HOUR

/** A server's "retry in N" hint is honoured (as the earliest next try) within these bounds. */
export const HINT_MIN_MS = 10_000
export const HINT_MAX_MS = 6 * HOUR

/** Reads "retry in 30 seconds", "try again in 5 min", "retry after 2 hours" from a reply. */
export function parseRetryHint(reply: string | null | undefined): number | null {
  if (!reply) return null
  const m = reply.match(/(?:retry|try(?:\s+again)?|come back|wait)\s+(?:again\s+)?(?:in|after|for)\s+(\d{1,6})\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?)\b/i)
  if (!m) return null
  const n = Number(m[1])
  const unit = m[2].toLowerCase()
  const ms = unit.startsWith('h') ? n * HOUR : unit.startsWith('m') ? n * MIN : n * 1000
  return Math.min(HINT_MAX_MS, Math.max(HINT_MIN_MS, ms))
}

export interface RetryDecision {
  giveUp: boolean
  /** Milliseconds from now to the next attempt (when not giving up). */
  delayMs: number
}

/**
 * After a failed attempt: `attempts` counts it; `firstTriedAt` is when the message
 * became due. Gives up once the schedule is spent and at least 48 hours have passed,
 * so short hints never shorten a message's life.
 */
export function nextRetry(attempts: number, now: number, firstDueAt: number, reply?: string | null): RetryDecision {
  const age = now - firstDueAt
  if (attempts > RETRY_SCHEDULE_MS.length && age >= MIN_LIFETIME_MS) return { giveUp: true, delayMs: 0 }
  const step = RETRY_SCHEDULE_MS[Math.min(attempts - 1, RETRY_SCHEDULE_MS.length - 1)] ?? RETRY_SCHEDULE_MS[0]
  // A hint is a floor: never sooner than the server asked, never sooner than the schedule.
  let delay = Math.max(step, parseRetryHint(reply) ?? 0)
  // The last retry lands on the 48-hour mark rather than far past it.
  if (attempts >= RETRY_SCHEDULE_MS.length && age < MIN_LIFETIME_MS) delay = Math.min(delay, Math.max(HINT_MIN_MS, MIN_LIFETIME_MS - age))
  return { giveUp: false, delayMs: delay }
}

export type BounceType = 'Permanent' | 'Transient' | 'Undetermined'

export interface BounceInfo {
  type: BounceType
  subType: string
  /** Whether the address goes on the suppression list (a hard bounce). */
  suppress: boolean
}

/** `5.1.1` out of "550 5.1.1 <x@y>: user unknown". */
export function enhancedCode(reply: string | null | undefined): string | null {
  const m = reply?.match(/^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/)
  return m ? m[1] : null
}

/**
 * What a 5xx reply means for the address (SES/Resend vocabulary). Only replies about
 * the mailbox or domain itself are hard bounces that suppress the address; policy and
 * content rejections bounce this message but leave the address usable.
 */
export function classifyBounce(code: number | null, enhanced: string | null, reply: string): BounceInfo {
  const e = enhanced ?? ''
  if (/^5\.1\.(1|0|10)$/.test(e)) return { type: 'Permanent', subType: 'NoEmail', suppress: true }
  if (/^5\.1\.\d+$/.test(e)) return { type: 'Permanent', subType: 'General', suppress: true }
  if (e === '5.2.2' || /quota|mailbox (is )?full|over ?quota/i.test(reply)) return { type: 'Transient', subType: 'MailboxFull', suppress: false }
  if (e === '5.3.4' || e === '5.2.3' || /too (large|big)|size limit/i.test(reply)) return { type: 'Transient', subType: 'MessageTooLarge', suppress: false }
  if (/^5\.7\.\d+$/.test(e)) return { type: 'Permanent', subType: 'ContentRejected', suppress: false }
  if (/^5\.2\.\d+$/.test(e)) return { type: 'Permanent', subType: 'General', suppress: true }
  if (!e && (code === 550 || code === 551 || code === 553)) return { type: 'Permanent', subType: 'General', suppress: true }
  return { type: 'Undetermined', subType: 'Undetermined', suppress: false }
}

/**
 * Stops claiming while the way out is down (relay unreachable or refusing our
 * credentials, or connections failing to many different MX hosts with no success
 * in between, which means our own network is down). Rows hit by it go back to the
 * queue without counting an attempt. Backoff doubles from `baseMs` to `maxMs` (a
 * minute, so the queue moves within a minute of the way out coming back); once a
 * pause is over the breaker is half-open (`probing`): one message at a time tries
 * the way out, and any successful connection closes it.
 */
export class CircuitBreaker {
  private failedDestinations = new Set<string>()
  private openUntil = 0
  private backoff: number
  private trips = 0

  constructor(
    /** Distinct destinations failing in a row that open the breaker (1 for a relay). */
    private readonly threshold: number,
    private readonly baseMs = 5_000,
    private readonly maxMs = MIN,
  ) {
    this.backoff = baseMs
  }

  /** Whether claiming is paused at `now`. */
  isOpen(now: number) {
    return now < this.openUntil
  }

  /** Whether the last pause is over but nothing has got through since: the next message is a probe, sent alone. */
  probing(now: number) {
    return this.openUntil > 0 && now >= this.openUntil
  }

  /** When claiming may resume (ms epoch); 0 when closed. */
  get resumeAt() {
    return this.openUntil
  }

  get tripCount() {
    return this.trips
  }

  success() {
    this.failedDestinations.clear()
    this.backoff = this.baseMs
    this.openUntil = 0
  }

  /** Records a connection failure; returns true when this trips (or the breaker is already open). */
  failure(destination: string, now: number): boolean {
    if (this.isOpen(now)) return true
    this.failedDestinations.add(destination)
    if (this.failedDestinations.size < this.threshold) return false
    this.openUntil = now + this.backoff
    this.backoff = Math.min(this.maxMs, this.backoff * 2)
    this.failedDestinations.clear()
    this.trips++
    return true
  }
}
