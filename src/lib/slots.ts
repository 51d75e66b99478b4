/** A counting semaphore: at most `n` holders at once; the others wait in line. */
export class Slots {
  private waiters: (() => void)[] = []
  constructor(private free: number) {}
  async take() {
    if (this.free > 0) {
      this.free--
      return
    }
    await new Promise<void>((r) => this.waiters.push(r))
  }
  give() {
    const next = this.waiters.shift()
    if (next) next()
    else this.free++
  }
}
