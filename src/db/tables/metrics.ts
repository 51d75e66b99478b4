import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/**
 * One series of event counts (src/metrics/rollup.ts): an account's events with one
 * combination of dimensions, kept at one of three levels of detail so a query reads
 * the fewest rows that hold what it asks. Level 0 keeps only the simulator flag,
 * level 1 adds the domain and the API key, level 2 the domain and the broadcast. A
 * dimension a level does not keep, or an event does not have (no key, no
 * broadcast), is '', so the key stays unique in SQLite.
 */
export const metricSeries = sqliteTable(
  'metric_series',
  {
    id: integer('id').primaryKey(),
    accountId: text('account_id').notNull(),
    level: integer('level').notNull(),
    simulator: integer('simulator', { mode: 'boolean' }).notNull(),
    /** The sending domain's name (the from address's domain) or, for received mail, the receiving domain's. */
    domain: text('domain').notNull(),
    domainId: text('domain_id').notNull(),
    apiKeyId: text('api_key_id').notNull(),
    broadcastId: text('broadcast_id').notNull(),
  },
  (t) => [uniqueIndex('metric_series_key').on(t.accountId, t.level, t.simulator, t.domain, t.domainId, t.apiKeyId, t.broadcastId)],
)

const count = (name: string) => integer(name).notNull().default(0)

/**
 * A series' counts in one UTC bucket, updated in the transaction that records the
 * events. Every event is counted in its quarter-hour, hour and day (grains 0, 1, 2),
 * so a window is read as whole days where it can, hours and quarter-hours at its
 * edges. The id packs series, grain and bucket (`series * 2^31 + grain * 2^29 +
 * bucket`, the bucket numbered from the epoch in its grain's units), so one series'
 * buckets of a grain are adjacent rows and a window is one range read per series.
 * The counters are named as the metrics the API reports.
 */
export const metricCounts = sqliteTable('metric_counts', {
  id: integer('id').primaryKey(),
  received: count('received'),
  sent: count('sent'),
  delivered: count('delivered'),
  delivery_delayed: count('delivery_delayed'),
  failed: count('failed'),
  suppressed: count('suppressed'),
  bounced: count('bounced'),
  bounced_transient: count('bounced_transient'),
  bounced_permanent: count('bounced_permanent'),
  bounced_undetermined: count('bounced_undetermined'),
  opened: count('opened'),
  unique_opened: count('unique_opened'),
  clicked: count('clicked'),
  unique_clicked: count('unique_clicked'),
  complained: count('complained'),
  unsubscribed: count('unsubscribed'),
})
