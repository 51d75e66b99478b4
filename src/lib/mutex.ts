/** A FIFO async lock: one holder at a time, in arrival order. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve()
  private queued = 0

  /** Callers waiting for the lock, not counting the holder. */
  get waiting() {
    return this.queued
  }

  async acquire(): Promise<() => void> {
    let release!: () => void
    const next = new Promise<void>((r) => (release = r))
    const prev = this.tail
    this.tail = prev.then(() => next)
    this.queued++
    await prev
    this.queued--
    return release
  }
}
