import { createClient, type Client, type InStatement } from '@libsql/client'
import { sql } from 'drizzle-orm'
import { BetterSQLiteSession } from 'drizzle-orm/better-sqlite3/session'
import { createTableRelationsHelpers, extractTablesRelationalConfig } from 'drizzle-orm/relations'
import { BaseSQLiteDatabase, SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import { drizzle as overRemote, type LibSQLDatabase } from 'drizzle-orm/libsql'
import Libsql from 'libsql'
import { open as openFile } from 'node:fs/promises'
import { workerEntry } from '../lib/thread-pool'
import * as tables from './tables'

/** The query surface services use: the same drizzle API over either engine. */
export type DB = LibSQLDatabase<typeof tables>
export type Tx = DB

export type Row = Record<string, unknown>
export interface RawStatement {
  sql: string
  args?: (string | number | null)[]
}

/** One open transaction: queries through `tx`, savepoints through `exec`. */
export interface OpenTx {
  tx: Tx
  exec(sql: string): Promise<void>
  finish(commit: boolean): Promise<void>
}

/** Where records live: a local file (libSQL's engine in process) or a libSQL server. */
export interface Backend {
  readonly remote: boolean
  /** Reads of committed data. */
  readonly reader: DB
  /** Opens a write transaction, waiting for another connection's lock until `deadline` (performance.now() time) at most. */
  begin(deadline?: number): Promise<OpenTx>
  execute(stmt: RawStatement): Promise<Row[]>
  /** Runs the statements as one transaction. */
  batch(stmts: RawStatement[]): Promise<void>
  close(): void
}

/** How long a write waits for another connection's lock before answering `service_unavailable`. */
export const BUSY_TIMEOUT_MS = 5000
/**
 * How long one statement of the writer may block the event loop on a lock: the
 * rest of the wait is asynchronous (`lockedWrite`), so reads keep being served.
 */
const WRITER_BLOCK_MS = 20

/** SQLITE_BUSY, as the local driver raises it or as @libsql/client wraps a server's answer (in `cause`). */
const isBusy = (e: unknown): boolean => {
  const err = e as { code?: string; cause?: unknown } | null
  return /^SQLITE_BUSY/.test(err?.code ?? '') || (err?.cause !== undefined && isBusy(err.cause))
}

/**
 * Runs something that takes the write lock, retrying while another connection
 * holds it until `deadline`; the waits between attempts (doubling from
 * `firstPauseMs` to `maxPauseMs`) yield, so the event loop goes on meanwhile.
 */
async function lockedWrite<T>(attempt: () => T | Promise<T>, deadline = performance.now() + BUSY_TIMEOUT_MS, firstPauseMs = 1, maxPauseMs = 50): Promise<T> {
  for (let pause = firstPauseMs; ; pause = Math.min(pause * 2, maxPauseMs)) {
    try {
      return await attempt()
    } catch (e) {
      if (!isBusy(e) || performance.now() >= deadline) throw e
    }
    await Bun.sleep(pause)
  }
}

/**
 * drizzle's better-sqlite3 driver over libSQL's synchronous connection (the same
 * API). Built from its parts: the driver module itself imports better-sqlite3,
 * which this project does not ship.
 */
function overLocal(client: Libsql.Database): DB {
  const dialect = new SQLiteSyncDialect()
  const rel = extractTablesRelationalConfig(tables, createTableRelationsHelpers)
  const schema = { fullSchema: tables, schema: rel.tables, tableNamesMap: rel.tableNamesMap }
  const session = new BetterSQLiteSession(client as never, dialect, schema as never, {})
  return new BaseSQLiteDatabase('sync', dialect, session as never, schema as never) as unknown as DB
}

/**
 * Prepared statements reused by SQL text: drizzle prepares on every call, and
 * preparing costs as much as running a simple query. `raw` is a mode a statement
 * keeps, so every call sets the mode it needs (only when it changes: each native
 * call costs).
 */
function withStatementCache(db: Libsql.Database, isOpen: () => boolean, max = 1000): Libsql.Database {
  /** A statement, whether it returns rows, and the `raw` mode it was last set to. */
  interface Cached {
    s: Libsql.Statement<unknown[]>
    reader: boolean
    raw?: boolean
  }
  const cache = new Map<string, Cached>()
  // A statement (cached here, or held by a prepared query) would still answer after close(); a closed database must not.
  const open = () => {
    if (!isOpen()) throw Object.assign(new Error('The database is closed'), { code: 'CLIENT_CLOSED' })
  }
  const prepare = (text: string) => {
    open()
    let c = cache.get(text)
    if (!c) {
      const s = db.prepare(text) as Libsql.Statement<unknown[]>
      c = { s, reader: s.reader }
      cache.set(text, c)
      if (cache.size > max) cache.delete(cache.keys().next().value!)
    }
    const { s } = c
    const rows = (raw: boolean) => {
      open()
      if (c.reader && c.raw !== raw) s.raw((c.raw = raw))
      return s
    }
    return {
      run: (...p: unknown[]) => (open(), s.run(...p)),
      all: (...p: unknown[]) => rows(false).all(...p),
      get: (...p: unknown[]) => rows(false).get(...p),
      raw: () => ({ all: (...p: unknown[]) => rows(true).all(...p), get: (...p: unknown[]) => rows(true).get(...p) }),
    }
  }
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'prepare') return prepare
      const v = Reflect.get(target, prop)
      return typeof v === 'function' ? v.bind(target) : v
    },
  })
}

/**
 * The WAL's fsync on a pool thread, so the event loop serves requests while the
 * disk works. In WAL mode a commit is durable once the WAL file is synced after
 * its commit frame; synchronous=FULL does exactly that inside COMMIT, on the
 * calling thread. NORMAL leaves out only that sync (it keeps the WAL header's on
 * a restart and both files' around a checkpoint), and this adds it back, after
 * COMMIT returns. The next transaction may begin meanwhile: the WAL only grows
 * until a checkpoint (which syncs it first), so its own sync covers this one
 * too, and nothing it writes (a claim that sends a row out) is reported done
 * before that sync.
 */
async function syncWal(walPath: string) {
  const file = await openFile(walPath, 'r')
  try {
    await file.sync()
  } catch (e) {
    // The commit is in the WAL but may not be on disk: its writers hear of it as a storage failure.
    throw Object.assign(new Error(`the write-ahead log could not be synced: ${(e as Error).message}`), { code: 'SQLITE_IOERR_FSYNC', cause: e })
  } finally {
    await file.close()
  }
}

/** What the checkpointing thread (checkpoint-worker.ts) is asked, and answers. */
export type CheckpointRequest = { kind: 'checkpoint'; path: string } | { kind: 'close' }
export type CheckpointReply = { log: number; checkpointed: number } | { error: string } | { closed: true }

/** How often, at most, a checkpoint is asked for while commits keep coming. */
const CHECKPOINT_EVERY_MS = 250

/**
 * Checkpoints on a thread of their own. SQLite's automatic checkpoint runs inside
 * the COMMIT that takes the log past 1,000 pages: it copies them into the database
 * file and syncs both files, on the event loop, for tens of milliseconds on a busy
 * disk (a fifth of a send's time in all, and the worst latencies). Here the
 * writer's automatic checkpoints are off and this thread is asked after commits,
 * one checkpoint at a time; a thread that cannot start or fails hands the work
 * back to SQLite's own (`fallBack`).
 */
class Checkpointer {
  private worker?: Worker
  private busy = false
  private broken = false
  private askedAt = performance.now()

  constructor(
    private readonly path: string,
    private readonly entry: string,
    private readonly fallBack: () => void,
  ) {}

  afterCommit() {
    const now = performance.now()
    if (this.busy || this.broken || now - this.askedAt < CHECKPOINT_EVERY_MS) return
    this.askedAt = now
    this.busy = true
    try {
      this.worker ??= this.start()
      this.worker.postMessage({ kind: 'checkpoint', path: this.path } satisfies CheckpointRequest)
    } catch {
      this.fail()
    }
  }

  private start() {
    const w = new Worker(this.entry)
    w.unref()
    w.onmessage = (e: MessageEvent<CheckpointReply>) => {
      if ('closed' in e.data) return w.terminate()
      this.busy = false
      if ('error' in e.data) this.fail()
    }
    w.onerror = () => this.fail()
    return w
  }

  private fail() {
    if (this.broken) return
    this.broken = true
    this.close()
    this.fallBack()
  }

  /** The thread closes its connection, then is ended. */
  close() {
    this.worker?.postMessage({ kind: 'close' } satisfies CheckpointRequest)
    this.worker = undefined
  }
}

/**
 * A local file through libSQL's synchronous API: one connection writes, one reads
 * (WAL lets the reader see committed data while the writer holds a transaction).
 * Queries take microseconds, so running them on the event loop costs less than the
 * promise machinery an asynchronous client adds to each. A commit is durable
 * before it is reported done: synced by `syncWal` off the event loop, or, where
 * the file cannot be in WAL mode, by SQLite itself at synchronous=FULL.
 */
export function localBackend(path: string): Backend {
  const writer = new Libsql(path, { timeout: BUSY_TIMEOUT_MS } as never)
  const mode = writer.prepare('PRAGMA journal_mode = WAL').get() as { journal_mode?: string }
  const wal = mode.journal_mode === 'wal'
  writer.exec(`PRAGMA synchronous = ${wal ? 'NORMAL' : 'FULL'}`)
  writer.exec(`PRAGMA busy_timeout = ${WRITER_BLOCK_MS}`)
  const entry = wal ? workerEntry(import.meta.path, new URL('./checkpoint-worker.ts', import.meta.url), 'db/checkpoint-worker.js') : null
  const checkpointer = entry ? new Checkpointer(path, entry, () => open && writer.exec('PRAGMA wal_autocheckpoint = 1000')) : null
  if (checkpointer) writer.exec('PRAGMA wal_autocheckpoint = 0')
  const committed = async () => {
    checkpointer?.afterCommit()
    if (wal) await syncWal(`${path}-wal`)
  }
  const reader = new Libsql(path, { timeout: BUSY_TIMEOUT_MS } as never)
  let open = true
  const isOpen = () => open
  const txDb = overLocal(withStatementCache(writer, isOpen))
  const readDb = overLocal(withStatementCache(reader, isOpen))
  /** A read's rows, or null for a write. */
  const run = (s: RawStatement) => {
    const stmt = writer.prepare(s.sql)
    if (stmt.reader) return stmt.all(...(s.args ?? [])) as Row[]
    stmt.run(...(s.args ?? []))
    return null
  }
  return {
    remote: false,
    reader: readDb,
    async begin(deadline) {
      await lockedWrite(() => writer.exec('BEGIN IMMEDIATE'), deadline)
      return {
        tx: txDb,
        exec: async (text) => void writer.exec(text),
        async finish(commit) {
          try {
            writer.exec(commit ? 'COMMIT' : 'ROLLBACK')
          } catch (e) {
            // A failed COMMIT can leave the transaction open: end it so the connection stays usable.
            if (writer.inTransaction) writer.exec('ROLLBACK')
            throw e
          }
          if (commit) await committed()
        },
      }
    },
    async execute(s) {
      const rows = await lockedWrite(() => run(s))
      if (rows) return rows
      await committed()
      return []
    },
    async batch(stmts) {
      await lockedWrite(() => writer.exec('BEGIN IMMEDIATE'))
      try {
        for (const s of stmts) run(s)
        writer.exec('COMMIT')
      } catch (e) {
        if (writer.inTransaction) writer.exec('ROLLBACK')
        throw e
      }
      await committed()
    },
    close() {
      open = false
      checkpointer?.close()
      writer.close()
      reader.close()
    },
  }
}

/**
 * A libSQL server (libsql://, http(s)://, ws(s)://) through @libsql/client.
 * @libsql/client waits for an answer forever; a server that accepts and then
 * says nothing (hung, or a network that drops packets) must cost a request
 * `timeoutMs`, not a hang, so every HTTP exchange is bounded.
 */
export function remoteBackend(url: string, authToken?: string, timeoutMs = 15_000): Backend {
  const bounded = (request: Request) =>
    fetch(request, { signal: AbortSignal.timeout(timeoutMs) }).catch((e: Error) => {
      throw e.name === 'TimeoutError' ? Object.assign(new Error(`the libSQL server did not answer within ${timeoutMs} ms`), { code: 'STORAGE_TIMEOUT' }) : e
    })
  const client: Client = createClient({ url, authToken, fetch: bounded })
  const db = overRemote(client, { schema: tables })
  return {
    remote: true,
    reader: db,
    async begin(deadline = performance.now() + BUSY_TIMEOUT_MS) {
      let ready!: (tx: Tx) => void
      let settle!: (commit: boolean) => void
      const decision = new Promise<boolean>((r) => (settle = r))
      const attempt = () => {
        const txReady = new Promise<Tx>((r) => (ready = r))
        const done = db.transaction(
          async (tx) => {
            // The client sends BEGIN IMMEDIATE with the first statement: taking the lock here lets a busy server's refusal be retried before anything is written.
            await tx.run(sql`SELECT 1`)
            ready(tx as unknown as Tx)
            if (!(await decision)) tx.rollback()
          },
          { behavior: 'immediate' },
        )
        done.catch(() => undefined)
        // A failure to BEGIN surfaces through `done` before the transaction body goes on.
        const failed = done.then(() => new Promise<never>(() => {}))
        failed.catch(() => {})
        return { done, tx: Promise.race([txReady, failed]) }
      }
      // Another instance's transaction on the server can outlast the server's own lock wait (SQLITE_BUSY): nothing was begun, so try again until the deadline.
      const { done, tx } = await lockedWrite(
        async () => {
          const opened = attempt()
          return { done: opened.done, tx: await opened.tx }
        },
        deadline,
        5,
        100,
      )
      return {
        tx,
        exec: async (text) => void (await tx.run(sql.raw(text))),
        async finish(commit) {
          settle(commit)
          try {
            await done
          } catch (e) {
            if (commit) throw e
          }
        },
      }
    },
    async execute(s) {
      const r = await client.execute({ sql: s.sql, args: s.args ?? [] } as InStatement)
      return r.rows as unknown as Row[]
    },
    async batch(stmts) {
      await client.batch(stmts.map((s) => ({ sql: s.sql, args: s.args ?? [] })) as InStatement[], 'write')
    },
    close() {
      client.close()
    },
  }
}

export function openBackend(url: string, authToken?: string, timeoutMs?: number): Backend {
  if (url.startsWith('file:')) return localBackend(url.slice('file:'.length))
  return remoteBackend(url, authToken, timeoutMs)
}
