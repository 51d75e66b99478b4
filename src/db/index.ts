import { createClient, type Client } from '@libsql/client'
import { drizzle, type LibSQLDatabase } from 'drizzle-orm/libsql'
import { Mutex } from '../lib/mutex'
import * as tables from './tables'

export type DB = LibSQLDatabase<typeof tables>
export type Tx = Parameters<Parameters<DB['transaction']>[0]>[0]
/** Where a query runs: the open transaction when there is one, else the pool. */
export type Executor = DB | Tx

/** What services see: read through `q`, change through `write`. */
export interface Db {
  readonly q: Executor
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>
}

export interface OpenOptions {
  url: string
  authToken?: string
}

export function openClient(opts: OpenOptions): Client {
  // `timeout` is the busy timeout of each pooled connection: a second instance
  // on the same file waits for the write lock instead of failing at once.
  return createClient({ url: opts.url, authToken: opts.authToken, timeout: 5000 } as Parameters<typeof createClient>[0])
}

/**
 * The database of one process. Writes in this process take one lock, so they
 * never meet SQLite's busy error against each other; readers go on in parallel
 * on other pooled connections (WAL).
 */
export class Database implements Db {
  readonly base: DB
  private readonly lock = new Mutex()

  constructor(readonly client: Client) {
    this.base = drizzle(client, { schema: tables })
  }

  get q(): Executor {
    return this.base
  }

  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.lock.run(() => this.base.transaction(fn, { behavior: 'immediate' }))
  }

  /** Holds the write lock until `release` is called; for a request's unit of work. */
  acquireWriteLock() {
    return this.lock.acquire()
  }

  close() {
    this.client.close()
  }
}

/**
 * One request's changes as one transaction: opened by the first write, committed
 * by `finish` before the reply leaves (so a 2xx means committed), rolled back on
 * failure. Reads inside the request see its own uncommitted writes.
 */
export class UnitOfWork implements Db {
  private tx?: Tx
  private opened?: Promise<Tx>
  private settle?: (commit: boolean) => void
  private done?: Promise<unknown>
  private release?: () => void

  constructor(private readonly db: Database) {}

  get q(): Executor {
    return this.tx ?? this.db.base
  }

  async write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return fn(await this.open())
  }

  private open(): Promise<Tx> {
    this.opened ??= (async () => {
      this.release = await this.db.acquireWriteLock()
      let ready!: (tx: Tx) => void
      const txReady = new Promise<Tx>((r) => (ready = r))
      const decision = new Promise<boolean>((r) => (this.settle = r))
      this.done = this.db.base
        .transaction(
          async (tx) => {
            ready(tx)
            if (!(await decision)) tx.rollback()
          },
          { behavior: 'immediate' },
        )
        .catch((e) => {
          this.release?.()
          this.release = undefined
          throw e
        })
      // A failure to BEGIN surfaces through `done` before the transaction body runs.
      const failed = this.done.then(() => new Promise<never>(() => {}))
      failed.catch(() => {})
      this.tx = await Promise.race([txReady, failed])
      return this.tx
    })()
    return this.opened
  }

  /** Commits (running `last` inside the transaction first) or rolls back. */
  async finish(commit: boolean, last?: (tx: Tx) => Promise<void>): Promise<void> {
    if (!this.opened) {
      if (commit && last) await this.db.write(last)
      return
    }
    const tx = await this.opened
    try {
      if (commit && last) await last(tx)
    } catch (e) {
      commit = false
      this.settle!(false)
      await this.done!.catch(() => undefined)
      this.free()
      throw e
    }
    this.settle!(commit)
    try {
      await this.done
    } catch (e) {
      if (commit) throw e
    } finally {
      this.free()
    }
  }

  private free() {
    this.release?.()
    this.release = undefined
    this.opened = undefined
    this.tx = undefined
  }
}

const TRANSIENT = /^(SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|PROTOCOL)|CLIENT_CLOSED|SERVER_ERROR|HRANA_|STREAM_|TRANSACTION_TIMEOUT)/

/**
 * A storage failure that waiting can cure (lock, disk full, server unreachable),
 * as opposed to a bug: callers answer `service_unavailable`, never a 500.
 */
export function isTransientStorageError(e: unknown): boolean {
  const err = e as { code?: string; cause?: unknown; message?: string } | null
  if (!err || typeof err !== 'object') return false
  if (typeof err.code === 'string' && TRANSIENT.test(err.code)) return true
  if (/ECONNREFUSED|ECONNRESET|fetch failed|Unable to connect/i.test(err.message ?? '')) return true
  return err.cause !== undefined && err.cause !== e && isTransientStorageError(err.cause)
}
