import { createClient, type Client, type InStatement } from '@libsql/client'
import { sql } from 'drizzle-orm'
import { BetterSQLiteSession } from 'drizzle-orm/better-sqlite3/session'
import { createTableRelationsHelpers, extractTablesRelationalConfig } from 'drizzle-orm/relations'
import { BaseSQLiteDatabase, SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import { drizzle as overRemote, type LibSQLDatabase } from 'drizzle-orm/libsql'
import Libsql from 'libsql'
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
 * A local file through libSQL's synchronous API: one connection writes, one reads
 * (WAL lets the reader see committed data while the writer holds a transaction).
 * Queries take microseconds, so running them on the event loop costs less than the
 * promise machinery an asynchronous client adds to each.
 */
export function localBackend(path: string): Backend {
  const writer = new Libsql(path, { timeout: BUSY_TIMEOUT_MS } as never)
  writer.exec('PRAGMA journal_mode = WAL')
  writer.exec('PRAGMA synchronous = FULL')
  writer.exec(`PRAGMA busy_timeout = ${WRITER_BLOCK_MS}`)
  const reader = new Libsql(path, { timeout: BUSY_TIMEOUT_MS } as never)
  let open = true
  const isOpen = () => open
  const txDb = overLocal(withStatementCache(writer, isOpen))
  const readDb = overLocal(withStatementCache(reader, isOpen))
  const run = (s: RawStatement) => {
    const stmt = writer.prepare(s.sql)
    return (stmt.reader ? stmt.all(...(s.args ?? [])) : (stmt.run(...(s.args ?? [])), [])) as Row[]
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
        },
      }
    },
    async execute(s) {
      return lockedWrite(() => run(s))
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
    },
    close() {
      open = false
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
