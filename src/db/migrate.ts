import { createHash } from 'node:crypto'
import type { Database } from './index'
import { journal, migrationSql } from './migrations.gen'

const TABLE = '__drizzle_migrations'

/**
 * Applies the embedded migrations the way drizzle's migrator does (same table,
 * same hashes), so drizzle-kit and this binary agree on what has run.
 */
export async function migrate(db: Database) {
  await db.execute(`CREATE TABLE IF NOT EXISTS ${TABLE} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`)
  const last = await db.execute(`SELECT created_at FROM ${TABLE} ORDER BY created_at DESC LIMIT 1`)
  const lastMillis = last.length ? Number(Object.values(last[0])[0]) : -1
  const stmts: { sql: string; args: (string | number)[] }[] = []
  for (const entry of journal.entries) {
    if (entry.when <= lastMillis) continue
    const text = migrationSql[entry.tag]
    for (const sql of text.split('--> statement-breakpoint')) if (sql.trim()) stmts.push({ sql, args: [] })
    stmts.push({
      sql: `INSERT INTO ${TABLE} ("hash", "created_at") VALUES (?, ?)`,
      args: [createHash('sha256').update(text).digest('hex'), entry.when],
    })
  }
  if (stmts.length) await db.batch(stmts)
}
