export interface BucketState {
  allowed: boolean
  limit: number
  remaining: number
  /** Seconds until the bucket is full again. */
  resetSeconds: number
}

interface Bucket {
  tokens: number
  limit: number
  at: number
}

const WINDOW_MS = 60_000

/**
 * Token buckets over a 60-second window: `limit` tokens, refilled evenly across
 * the window. A bucket that has been idle long enough to be full again carries
 * no information, so it is dropped; `maxEntries` bounds memory under a flood of
 * distinct keys (oldest-touched first).
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>()
  private ops = 0

  constructor(private readonly maxEntries = 100_000) {}

  take(key: string, limit: number, now: number, cost = 1): BucketState {
    let b = this.buckets.get(key)
    if (b) {
      this.buckets.delete(key)
      if (b.limit !== limit) b = { tokens: Math.min(b.tokens, limit), limit, at: b.at }
      b.tokens = Math.min(limit, b.tokens + ((now - b.at) * limit) / WINDOW_MS)
      b.at = now
    } else {
      b = { tokens: limit, limit, at: now }
    }
    const allowed = b.tokens >= cost
    if (allowed) b.tokens -= cost
    this.buckets.set(key, b)
    if (++this.ops % 1024 === 0 || this.buckets.size > this.maxEntries) this.sweep(now)
    return {
      allowed,
      limit,
      remaining: Math.floor(b.tokens),
      resetSeconds: Math.ceil(((limit - b.tokens) * WINDOW_MS) / limit / 1000),
    }
  }

  /** The state of a bucket without spending from it. */
  peek(key: string, limit: number, now: number): BucketState {
    return this.take(key, limit, now, 0)
  }

  get size() {
    return this.buckets.size
  }

  sweep(now: number) {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) * b.limit) / WINDOW_MS >= b.limit) this.buckets.delete(key)
    }
    // Map iteration is oldest-touched first, because `take` re-inserts on use.
    for (const key of this.buckets.keys()) {
      if (this.buckets.size <= this.maxEntries) break
      this.buckets.delete(key)
    }
  }
}
