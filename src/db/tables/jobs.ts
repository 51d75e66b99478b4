import { sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** The last scheduled run of each deployment-wide job and the instance that took it: one run per tick however many instances share the database. */
export const jobTicks = sqliteTable('job_ticks', {
  name: text('name').primaryKey(),
  /** The scheduled time of the run (the pattern's instant, the same on every instance). */
  tick: text('tick').notNull(),
  owner: text('owner').notNull(),
})
