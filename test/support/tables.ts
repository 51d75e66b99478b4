// Every table of the database as numbers and as text, to prove a request wrote nothing.
import { sql } from 'drizzle-orm'
import type { Harness } from './harness'

/** The process's own bookkeeping, written by timers whatever the requests do: the instance heartbeat and the job ticks. */
const BOOKKEEPING = new Set(['instances', 'job_ticks'])

/** Every table that holds what requests and workers write. */
export async function tableNames(h: Harness): Promise<string[]> {
  const rows = await h.root.db.q.all<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%' ORDER BY name`)
  return rows.map((r) => r.name).filter((n) => !BOOKKEEPING.has(n))
}

/** Row counts of every table, in one statement. */
export async function tableCounts(h: Harness, tables: string[]): Promise<Record<string, number>> {
  const rows = await h.root.db.q.all<{ t: string; n: number }>(sql.raw(tables.map((t) => `SELECT '${t}' AS t, count(*) AS n FROM "${t}"`).join(' UNION ALL ')))
  return Object.fromEntries(rows.map((r) => [r.t, r.n]))
}

/** Every row of every table, as JSON text per table. */
export async function tableContents(h: Harness, tables: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const t of tables) out[t] = JSON.stringify(await h.root.db.q.all(sql.raw(`SELECT * FROM "${t}" ORDER BY rowid`)))
  return out
}

/** The tables whose numbers or text differ between two snapshots. */
export const changedTables = <T>(before: Record<string, T>, after: Record<string, T>) => Object.keys(after).filter((t) => after[t] !== before[t])
