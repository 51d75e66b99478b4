import { sql, type SQL } from 'drizzle-orm'
import type { SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core'
import type { Executor } from './index'

/**
 * A hot statement built once per executor (a connection, or a server transaction)
 * and run with `sql.placeholder` values: drizzle otherwise builds the SQL text on
 * every call, which costs more than SQLite running the statement. Executors are
 * weak keys, so a finished server transaction takes its statements with it.
 */
export function prepared<T>(build: (q: Executor) => T): (q: Executor) => T {
  const built = new WeakMap<Executor, T>()
  return (q) => {
    let p = built.get(q)
    if (p === undefined) built.set(q, (p = build(q)))
    return p
  }
}

/**
 * The values of one placeholder, a JSON array, as a set for `inArray`: one
 * statement serves lists of any length.
 */
export const listOf = (name: string): SQL => sql`(select value from json_each(${sql.placeholder(name)}))`

/**
 * A prepared multi-row insert into `table`, one statement per shape (row count and
 * columns given), so a send's rows go in one statement without drizzle building
 * it each time. Every row of one call gives the same columns; a column left out
 * takes its SQL default (a drizzle `$defaultFn` would run once, when the statement
 * is built, so tables written through here have none). With `onConflict`, a row
 * whose key exists updates it with `set` (`excluded.<column>` names the row's own
 * value), or without `set` is left out.
 */
export function rowInserter<T extends SQLiteTable>(table: T, onConflict?: { target: SQLiteColumn[]; set?: Record<string, SQL> }) {
  type Statement = { run(values: Record<string, unknown>): unknown }
  const byShape = prepared(() => new Map<string, Statement>())
  return async (q: Executor, rows: T['$inferInsert'][]): Promise<void> => {
    if (!rows.length) return
    const columns = Object.keys(rows[0])
    const shape = `${rows.length}:${columns.join()}`
    const statements = byShape(q)
    let stmt = statements.get(shape)
    if (!stmt) {
      const placeholders = rows.map((_, i) => Object.fromEntries(columns.map((c) => [c, sql.placeholder(`${c}_${i}`)])))
      const insert = q.insert(table).values(placeholders as never)
      const resolved = !onConflict ? insert : onConflict.set ? insert.onConflictDoUpdate(onConflict as never) : insert.onConflictDoNothing({ target: onConflict.target })
      stmt = resolved.prepare() as Statement
      statements.set(shape, stmt)
    }
    const values: Record<string, unknown> = {}
    rows.forEach((row, i) => {
      for (const c of columns) values[`${c}_${i}`] = (row as Record<string, unknown>)[c]
    })
    await stmt.run(values)
  }
}

/** A placeholder where drizzle's types accept only SQL (the values of an update's `set`). */
export const setTo = (name: string): SQL => sql`${sql.placeholder(name)}`
