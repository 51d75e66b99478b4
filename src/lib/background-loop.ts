import { Nap } from './nap'

/**
 * The skeleton every background worker shares (delivery, webhooks, automations,
 * broadcast fan-out): one loop at a time, an idle wait that stop() cuts short,
 * and a halt that lets the pass in progress finish. Each worker adds its own
 * work, and what it hands back once halted.
 */
export abstract class BackgroundLoop {
  private _running = false
  private loop: Promise<void> | null = null
  private readonly nap = new Nap()

  /** Whether the background loop is taking work. */
  get running() {
    return this._running
  }

  /** Runs in the background until stop(). */
  start(): void {
    if (this._running) return
    this._running = true
    this.beforeRun()
    this.loop = this.run()
  }

  /** What a worker sets up each time it starts, before its loop runs. */
  protected beforeRun(): void {}

  protected abstract run(): Promise<void>

  /** Ends the loop: its idle wait is cut short and the pass in progress finishes. */
  protected async halt(): Promise<void> {
    this._running = false
    this.nap.interrupt()
    await this.loop
    this.loop = null
  }

  /** Cuts the idle wait short without stopping (new work came). */
  protected wake() {
    this.nap.interrupt()
  }

  /** An idle wait; none once stopping, so a halt never waits out a poll. */
  protected sleep(ms: number) {
    return this._running ? this.nap.take(ms) : Promise.resolve()
  }
}
