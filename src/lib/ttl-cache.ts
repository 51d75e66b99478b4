/**
 * Values kept for `ttlMs` each, at most `max` of them (the least recently set go
 * first): for rows that rarely change and are read on every send, where another
 * instance's change may be seen late by up to the TTL and this instance forgets
 * its own changes at once with drop().
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>()

  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
  ) {}

  /** The value set for `key`, or undefined when none is, or it has expired. */
  get(key: string, now: number): V | undefined {
    const e = this.entries.get(key)
    return e && e.until > now ? e.value : undefined
  }

  set(key: string, value: V, now: number) {
    this.entries.delete(key)
    this.entries.set(key, { value, until: now + this.ttlMs })
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!)
  }

  drop(key: string) {
    this.entries.delete(key)
  }
}
