import { and, eq, inArray, lt } from 'drizzle-orm'
import type { Database } from '../db'
import { rowInserter } from '../db/prepared'
import { accounts, requestLogs } from '../db/tables'
import { DAY } from '../lib/clock'
import { uuidV7Floor } from '../lib/ids'
import type { Logger } from '../lib/log'
import { afterIo } from '../lib/nap'

export type LogEntry = typeof requestLogs.$inferInsert

const insertLogs = rowInserter(requestLogs)
/** Rows written between two turns of the event loop (about half a millisecond of inserts). */
const ROWS_PER_STEP = 100

const LOG_RETENTION_DAYS = 30

/**
 * Request log entries held in memory and written at each flush (every second by
 * the scheduler, at once when `flushAt` entries wait, and at shutdown), so no
 * request writes its own log row or waits for one, and the rows go in as
 * multi-row inserts. Like the key usage counts
 * (src/api-keys/usage.ts), a failed flush keeps its rows for the next one. What
 * is still in memory when the process dies is lost: an accepted trade, since the
 * log is a diagnostic record, not state.
 */
export class RequestLog {
  private pending: LogEntry[] = []
  /** Entries still being put together (some look up the key after the reply); a flush waits for them. */
  private assembling = new Set<Promise<void>>()
  /** Flushes one after the other, so a reader waiting on one also waits on those before it. */
  private writing: Promise<void> = Promise.resolve()
  /** Entries dropped because the database took none for `maxPending` requests. */
  dropped = 0

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    private readonly opts = { flushAt: 500, maxPending: 20_000 },
  ) {}

  record(entry: LogEntry) {
    this.pending.push(entry)
    if (this.pending.length > this.opts.maxPending) this.dropped += this.pending.splice(0, this.pending.length - this.opts.maxPending).length
    if (this.pending.length === this.opts.flushAt) this.flush().catch((e) => this.log.error('request log flush failed', { error: (e as Error).message }))
  }

  /** Records what `entry` resolves to (null: nothing to log). */
  add(entry: Promise<LogEntry | null>) {
    const p: Promise<void> = entry
      .then((e) => {
        if (e) this.record(e)
      })
      .catch((e) => this.log.error('request log entry failed', { error: (e as Error).message }))
      .finally(() => this.assembling.delete(p))
    this.assembling.add(p)
  }

  /** Writes everything recorded so far; settles once it and every earlier flush are written (or have failed). */
  async flush() {
    await Promise.all(this.assembling)
    const rows = this.pending
    this.pending = []
    const done = this.writing.then(() => this.write(rows))
    this.writing = done.catch(() => undefined)
    await done
  }

  /**
   * Writes in steps of ROWS_PER_STEP rows with the event loop let go between them (a
   * busy second's rows in one piece held every request 3-19 ms). Each step is a writer
   * of its own, so requests' writes take the lock between steps and share their group
   * commits, rather than waiting for the whole flush. A step that fails keeps its rows.
   */
  private async write(rows: LogEntry[]) {
    let failure: { error: unknown } | undefined
    const steps: Promise<void>[] = []
    for (let i = 0; i < rows.length; i += ROWS_PER_STEP) {
      if (i) await afterIo()
      if (failure) {
        // The database refused a step (closed, disk full): the rest waits for the next flush too.
        this.pending.unshift(...rows.slice(i))
        break
      }
      const step = rows.slice(i, i + ROWS_PER_STEP)
      steps.push(
        this.db.write((tx) => insertLogs(tx, step)).catch((error) => {
          // Kept for the next flush rather than lost; `record` bounds the backlog.
          this.pending.unshift(...step)
          failure ??= { error }
        }),
      )
    }
    await Promise.all(steps)
    if (failure) throw failure.error
  }
}

/**
 * Deletes entries older than the retention, account by account along the key
 * (the id holds the time), a batch per transaction so writers are never held up for long.
 */
export async function purgeRequestLogs(db: Database, now: number, batch = 5_000) {
  const cutoff = uuidV7Floor(now - LOG_RETENTION_DAYS * DAY)
  let deleted = 0
  for (const { id: accountId } of await db.q.select({ id: accounts.id }).from(accounts)) {
    for (;;) {
      const old = and(eq(requestLogs.accountId, accountId), lt(requestLogs.id, cutoff))
      const ids = (await db.q.select({ id: requestLogs.id }).from(requestLogs).where(old).limit(batch)).map((r) => r.id)
      if (ids.length) await db.write((tx) => tx.delete(requestLogs).where(and(eq(requestLogs.accountId, accountId), inArray(requestLogs.id, ids))))
      deleted += ids.length
      if (ids.length < batch) break
    }
  }
  return deleted
}
