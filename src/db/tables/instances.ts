import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * One row per running process (see src/instance.ts): its heartbeat tells the others
 * whether the leases and idempotency claims it holds are still being worked on.
 * `place` names the pid namespace on one boot of one machine, where a pid check is
 * authoritative; null where it cannot be known (then only the heartbeat counts).
 */
export const instances = sqliteTable('instances', {
  id: text('id').primaryKey(),
  place: text('place'),
  pid: integer('pid').notNull(),
  startedAt: text('started_at').notNull(),
  heartbeatAt: text('heartbeat_at').notNull(),
})
