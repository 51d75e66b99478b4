import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

const count = (name: string) => integer(name).notNull().default(0)

/**
 * Event counts kept as events are recorded (src/metrics/rollup.ts), so metrics read
 * a few rows per bucket instead of the event record. Every event is counted in its
 * UTC quarter-hour, hour and day (`grain` 15, 60 or 1440 minutes; `bucket` is the
 * bucket's first minute since the epoch), so a window is read as whole days where
 * it can, hours and quarter-hours at its edges; and at three levels of detail, so a
 * query reads the fewest rows that hold what it asks: level 0 keeps only the
 * simulator flag, level 1 adds the domain and the API key, level 2 the domain and
 * the broadcast. A dimension a level does not keep, or an event does not have (no
 * key, no broadcast), is '', so the key stays unique in SQLite. The counters are
 * named as the metrics the API reports.
 */
export const metricRollups = sqliteTable(
  'metric_rollups',
  {
    accountId: text('account_id').notNull(),
    level: integer('level').notNull(),
    grain: integer('grain').notNull(),
    bucket: integer('bucket').notNull(),
    simulator: integer('simulator', { mode: 'boolean' }).notNull(),
    /** The sending domain's name (the from address's domain) or, for received mail, the receiving domain's. */
    domain: text('domain').notNull(),
    domainId: text('domain_id').notNull(),
    apiKeyId: text('api_key_id').notNull(),
    broadcastId: text('broadcast_id').notNull(),
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
  },
  (t) => [primaryKey({ columns: [t.accountId, t.level, t.grain, t.bucket, t.simulator, t.domain, t.domainId, t.apiKeyId, t.broadcastId] })],
)
