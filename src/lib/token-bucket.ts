export interface BucketState {
  allowed: boolean
  limit: number
  remaining: number
  /** Seconds until the bucket is full again. */
  resetSeconds: number
  /**
   * The table was full of buckets still owed tokens, so this key could not be
   * tracked: the caller refuses what it must not let through unmetered (writes,
   * inbound mail) and may let reads pass.
   */
  untracked?: true
}

interface Bucket {
  tokens: number
  limit: number
  at: number
}

const WINDOW_MS = 60_000
/** How often a full table is searched for refilled buckets, so a flood of new keys does not scan it on every request. */
const FULL_SWEEP_EVERY_MS = 1000

/**
 * Token buckets over a 60-second window: `limit` tokens, refilled evenly across
 * the window. A bucket that has been idle long enough to be full again carries
 * no information, so it is dropped. `maxEntries` bounds memory; a bucket still
 * owed tokens is never evicted to make room (that would forgive a spender's debt,
 * and a flood of distinct keys would reset everyone's window), so a new key that
 * finds the table full is answered `untracked` instead.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>()
  private ops = 0
  private sweptAt = Number.NEGATIVE_INFINITY

  constructor(private readonly maxEntries = 100_000) {}

  take(key: string, limit: number, now: number, cost = 1): BucketState {
    let b = this.buckets.get(key)
    if (b) {
      this.buckets.delete(key)
      if (b.limit !== limit) b = { tokens: Math.min(b.tokens, limit), limit, at: b.at }
      b.tokens = Math.min(limit, b.tokens + ((now - b.at) * limit) / WINDOW_MS)
      b.at = now
    } else {
      if (this.buckets.size >= this.maxEntries && now - this.sweptAt >= FULL_SWEEP_EVERY_MS) this.sweep(now)
      if (this.buckets.size >= this.maxEntries) return { allowed: false, limit, remaining: 0, resetSeconds: 5, untracked: true }
      b = { tokens: limit, limit, at: now }
    }
    const allowed = b.tokens >= cost
    if (allowed) b.tokens -= cost
    this.buckets.set(key, b)
    if (++this.ops % 1024 === 0) this.sweep(now)
    return stateOf(b, allowed)
  }

  /** The state of a bucket without spending from it (an unknown key's bucket is full, and stays unstored). */
  peek(key: string, limit: number, now: number): BucketState {
    if (!this.buckets.has(key)) return { allowed: true, limit, remaining: limit, resetSeconds: 0 }
    return this.take(key, limit, now, 0)
  }

  get size() {
    return this.buckets.size
  }

  sweep(now: number) {
    this.sweptAt = now
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) * b.limit) / WINDOW_MS >= b.limit) this.buckets.delete(key)
    }
  }
}

function stateOf(b: Bucket, allowed: boolean): BucketState {
  return {
    allowed,
    limit: b.limit,
    remaining: Math.floor(b.tokens),
    resetSeconds: Math.ceil(((b.limit - b.tokens) * WINDOW_MS) / b.limit / 1000),
  }
}
