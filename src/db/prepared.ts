import { Column, getTableName, is, Param, Placeholder, sql, SQL } from 'drizzle-orm'
import type { SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core'
import type { Executor } from './index'

/** A statement of the local engine (libsql's, through the statement cache of backend.ts). */
interface NativeStatement {
  run(...args: unknown[]): unknown
  all(...args: unknown[]): unknown[]
  get(...args: unknown[]): unknown
  raw(): { all(...args: unknown[]): unknown[][]; get(...args: unknown[]): unknown[] | undefined }
}

/** What a built drizzle statement of the local engine holds (drizzle-orm 0.45's better-sqlite3 PreparedQuery). */
interface LocalQuery {
  stmt: NativeStatement
  query: { params: unknown[] }
  fields?: { path: string[]; field: unknown }[]
  joinsNotNullableMap?: Record<string, boolean>
  customResultMapper?: unknown
  run(values?: Record<string, unknown>): unknown
  all(values?: Record<string, unknown>): unknown
  get(values?: Record<string, unknown>): unknown
  values(values?: Record<string, unknown>): unknown
}

/** One bound parameter: a named placeholder (encoded by its column) or a value fixed when the SQL was built. */
type Step = { name: string; encode?: (v: unknown) => unknown } | { value: unknown }

const stepOf = (p: unknown): Step => {
  if (is(p, Placeholder)) return { name: p.name }
  if (is(p, Param) && is(p.value, Placeholder)) {
    const enc = p.encoder as { mapToDriverValue(v: unknown): unknown }
    return { name: p.value.name, encode: (v) => enc.mapToDriverValue(v) }
  }
  return { value: p }
}

/** The positional arguments of `steps` from placeholder values, as drizzle's `fillPlaceholders` makes them. */
function filler(steps: Step[]) {
  return (values: Record<string, unknown> = {}) => {
    const out = new Array(steps.length)
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i]
      if ('value' in s) out[i] = s.value
      else {
        if (!(s.name in values)) throw new Error(`No value for placeholder "${s.name}" was provided`)
        out[i] = s.encode ? s.encode(values[s.name]) : values[s.name]
      }
    }
    return out
  }
}

type Decoder = { mapFromDriverValue(v: unknown): unknown }

function decoderOf(field: unknown): Decoder | null {
  if (is(field, Column)) return field
  if (is(field, SQL)) return (field as unknown as { decoder: Decoder }).decoder
  return (field as { sql?: { decoder?: Decoder } }).sql?.decoder ?? null
}

/**
 * A row mapper with the decoders found once, for a selection of top-level fields
 * and joined tables' objects (one level, as drizzle makes them: a left-joined
 * table's object is null when its first column is). Anything else keeps
 * drizzle's own mapper.
 */
function rowMapper(q: LocalQuery): ((row: unknown[]) => unknown) | null {
  const fields = q.fields!
  const decoders = fields.map((f) => decoderOf(f.field))
  if (fields.some((f) => f.path.length > 2) || decoders.some((d) => !d)) return null
  const decode = decoders.map((d) => (v: unknown) => d!.mapFromDriverValue(v))
  /** Each joined object: its name, and the row index of its first column when the join may leave it empty. */
  const nullable = new Map<string, number>()
  for (const [i, f] of fields.entries()) {
    if (f.path.length !== 2 || !q.joinsNotNullableMap || nullable.has(f.path[0])) continue
    if (!is(f.field, Column)) return null
    const table = getTableName(f.field.table)
    if (fields.some((g) => g.path[0] === f.path[0] && !(is(g.field, Column) && getTableName(g.field.table) === table))) return null
    if (!q.joinsNotNullableMap[table]) nullable.set(f.path[0], i)
  }
  return (row) => {
    const out: Record<string, unknown> = {}
    for (let i = 0; i < fields.length; i++) {
      const path = fields[i].path
      const v = row[i] === null ? null : decode[i](row[i])
      if (path.length === 1) out[path[0]] = v
      else ((out[path[0]] ??= {}) as Record<string, unknown>)[path[1]] = v
    }
    for (const [name, first] of nullable) if (row[first] === null) out[name] = null
    return out
  }
}

/**
 * drizzle fills placeholders and maps rows with an `is()` check per parameter,
 * column and row, which costs a hot statement more than SQLite running it. A
 * local statement gets the same work with everything decided once.
 */
function compiled<T>(built: T): T {
  const q = built as unknown as LocalQuery
  if (typeof q?.stmt?.run !== 'function' || !Array.isArray(q.query?.params)) return built
  const fill = filler(q.query.params.map(stepOf))
  const { stmt } = q
  q.run = (v) => stmt.run(...fill(v))
  // drizzle's own `all` of a nested selection reads through `values`, so it gets the fast filling too.
  q.values = (v) => stmt.raw().all(...fill(v))
  if (!q.fields) {
    if (!q.customResultMapper) {
      q.all = (v) => stmt.all(...fill(v))
      q.get = (v) => stmt.get(...fill(v))
    }
    return built
  }
  const map = q.customResultMapper ? null : rowMapper(q)
  if (map) {
    q.all = (v) => stmt.raw().all(...fill(v)).map(map)
    q.get = (v) => {
      const row = stmt.raw().get(...fill(v))
      return row ? map(row) : undefined
    }
  }
  return built
}

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
    if (p === undefined) built.set(q, (p = compiled(build(q))))
    return p
  }
}

/**
 * The values of one placeholder, a JSON array, as a set for `inArray`: one
 * statement serves lists of any length.
 */
export const listOf = (name: string): SQL => sql`(select value from json_each(${sql.placeholder(name)}))`

/**
 * Most arguments in one insert statement: SQLite's historic limit, which a libSQL
 * server may still hold. A batch's rows go in as few statements as it allows.
 */
const ARGS_PER_INSERT = 999

/**
 * A prepared multi-row insert into `table`, one statement per shape (row count and
 * columns given), so a send's rows go in one statement without drizzle building
 * it each time; more rows than one statement takes go in several. Every row of one
 * call gives the same columns; a column left out
 * takes its SQL default (a drizzle `$defaultFn` would run once, when the statement
 * is built, so tables written through here have none). With `onConflict`, a row
 * whose key exists updates it with `set` (`excluded.<column>` names the row's own
 * value), or without `set` is left out.
 */
export function rowInserter<T extends SQLiteTable>(table: T, onConflict?: { target: SQLiteColumn[]; set?: Record<string, SQL> }) {
  /** A statement of one shape: on the local engine, the row and column of each positional argument. */
  interface Shape {
    run(values: Record<string, unknown>): unknown
    native?: { stmt: NativeStatement; args: { row: number; column: string; encode?: (v: unknown) => unknown }[] }
  }
  // By row and column count, then the column names compared in place: joining them into a key on every call showed in profiles.
  const byShape = prepared(() => new Map<string, { columns: string[]; stmt: Shape }[]>())
  const insert = async (q: Executor, rows: T['$inferInsert'][]): Promise<void> => {
    if (!rows.length) return
    const columns = Object.keys(rows[0])
    const most = Math.max(1, Math.floor(ARGS_PER_INSERT / columns.length))
    if (rows.length > most) {
      for (let i = 0; i < rows.length; i += most) await insert(q, rows.slice(i, i + most))
      return
    }
    const shape = `${rows.length}:${columns.length}`
    const statements = byShape(q)
    let candidates = statements.get(shape)
    if (!candidates) statements.set(shape, (candidates = []))
    let stmt = candidates.find((c) => c.columns.every((name, i) => name === columns[i]))?.stmt
    if (!stmt) {
      const placeholders = rows.map((_, i) => Object.fromEntries(columns.map((c) => [c, sql.placeholder(`${c}_${i}`)])))
      const insert = q.insert(table).values(placeholders as never)
      const resolved = !onConflict ? insert : onConflict.set ? insert.onConflictDoUpdate(onConflict as never) : insert.onConflictDoNothing({ target: onConflict.target })
      stmt = resolved.prepare() as unknown as Shape
      const local = stmt as unknown as LocalQuery
      if (typeof local.stmt?.run === 'function') {
        const steps = local.query.params.map(stepOf)
        // Every argument is a placeholder `<column>_<row>` here: the rows are written straight into the argument list.
        if (steps.every((s) => 'name' in s)) {
          const args = (steps as { name: string; encode?: (v: unknown) => unknown }[]).map((s) => {
            const at = s.name.lastIndexOf('_')
            return { row: Number(s.name.slice(at + 1)), column: s.name.slice(0, at), encode: s.encode }
          })
          stmt.native = { stmt: local.stmt, args }
        }
      }
      candidates.push({ columns, stmt })
    }
    if (stmt.native) {
      const { args } = stmt.native
      const out = new Array(args.length)
      for (let i = 0; i < args.length; i++) {
        const a = args[i]
        const v = (rows[a.row] as Record<string, unknown>)[a.column]
        out[i] = a.encode ? a.encode(v) : v
      }
      stmt.native.stmt.run(...out)
      return
    }
    const values: Record<string, unknown> = {}
    rows.forEach((row, i) => {
      for (const c of columns) values[`${c}_${i}`] = (row as Record<string, unknown>)[c]
    })
    await stmt.run(values)
  }
  return insert
}

/** A placeholder where drizzle's types accept only SQL (the values of an update's `set`). */
export const setTo = (name: string): SQL => sql`${sql.placeholder(name)}`
