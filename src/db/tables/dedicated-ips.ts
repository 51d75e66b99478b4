import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** An outbound source address of this host, dedicated to one account. */
export const dedicatedIps = sqliteTable(
  'dedicated_ips',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    /** Canonical text form (ipaddr.js): dotted IPv4, RFC 5952 IPv6. */
    ip: text('ip').notNull(),
    family: integer('family').notNull(),
    /** The reverse DNS name found at registration (or the last check); null when none. */
    ptr: text('ptr'),
    /** When the warm-up schedule started; null for an address registered as already warm. */
    warmupStartedAt: text('warmup_started_at'),
    /** Mail over the day's warm-up cap: `shared` sends it from the host's default address, `hold` waits for the next UTC day. */
    overflow: text('overflow', { enum: ['shared', 'hold'] }).notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('dedicated_ips_ip').on(t.ip), index('dedicated_ips_account').on(t.accountId, t.id)],
)

/** A sending domain's mail leaves from this address (one address per domain). */
export const dedicatedIpDomains = sqliteTable(
  'dedicated_ip_domains',
  {
    domainId: text('domain_id').primaryKey(),
    ipId: text('ip_id').notNull(),
    accountId: text('account_id').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('dedicated_ip_domains_ip').on(t.ipId)],
)

/** Messages sent from an address on one UTC day, against its warm-up cap. */
export const dedicatedIpUsage = sqliteTable(
  'dedicated_ip_usage',
  {
    ipId: text('ip_id').notNull(),
    /** YYYY-MM-DD (UTC). */
    day: text('day').notNull(),
    sent: integer('sent').notNull(),
  },
  (t) => [primaryKey({ columns: [t.ipId, t.day] })],
)

/**
 * What the last blocklist check found for one address or domain on one zone.
 * A sending domain with a `listed` row on a domain zone may not send
 * (`sending_domain_blocked`) until a check finds it clean again.
 */
export const blocklistListings = sqliteTable(
  'blocklist_listings',
  {
    kind: text('kind', { enum: ['ip', 'domain'] }).notNull(),
    /** The address (canonical text) or the lower-case domain name. */
    subject: text('subject').notNull(),
    zone: text('zone').notNull(),
    status: text('status', { enum: ['listed', 'clean', 'unknown'] }).notNull(),
    /** The 127.0.0.x answer and the zone's TXT reason, when listed. */
    code: text('code'),
    reason: text('reason'),
    listedSince: text('listed_since'),
    checkedAt: text('checked_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.subject, t.zone] })],
)
