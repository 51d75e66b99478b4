/** A background loop's idle wait that its stop() can cut short. */
export class Nap {
  private wake: (() => void) | null = null

  /** Resolves after `ms`, or at once when `interrupt()` comes first. */
  take(ms: number): Promise<void> {
    return new Promise<void>((r) => {
      const t = setTimeout(r, Math.max(0, ms))
      this.wake = () => {
        clearTimeout(t)
        r()
      }
    })
  }

  interrupt() {
    this.wake?.()
  }
}

/** Resolves once the I/O callbacks already due have run: a long task lets requests in between its steps. */
export const afterIo = () => new Promise<void>((r) => setImmediate(r))
