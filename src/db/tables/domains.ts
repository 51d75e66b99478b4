import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export type RecordStatus = 'not_started' | 'pending' | 'verified' | 'failed' | 'temporary_failure'

/** One DNS record the domain must publish, with what the last check found. */
export interface DomainRecord {
  record: 'SPF' | 'DKIM' | 'DMARC' | 'ReturnPathMX' | 'ReturnPathSPF' | 'Receiving' | 'Tracking'
  name: string
  type: 'TXT' | 'MX' | 'CNAME'
  value: string
  ttl: string
  priority?: number
  status: RecordStatus
  /** Why the last check did not verify it, in words a person can act on. */
  detail?: string
  required: boolean
}

export const domains = sqliteTable(
  'domains',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    /** Lower-case domain name. */
    name: text('name').notNull(),
    region: text('region', { enum: ['us', 'eu'] }).notNull(),
    status: text('status', { enum: ['not_started', 'pending', 'verified', 'partially_verified', 'failed', 'temporary_failure'] }).notNull(),
    /** Label of the return-path (bounce) subdomain, e.g. `send` for send.example.com. */
    customReturnPath: text('custom_return_path').notNull(),
    clickTracking: integer('click_tracking', { mode: 'boolean' }).notNull(),
    openTracking: integer('open_tracking', { mode: 'boolean' }).notNull(),
    trackingSubdomain: text('tracking_subdomain'),
    tls: text('tls', { enum: ['opportunistic', 'enforced'] }).notNull(),
    sendingEnabled: integer('sending_enabled', { mode: 'boolean' }).notNull(),
    receivingEnabled: integer('receiving_enabled', { mode: 'boolean' }).notNull(),
    dkimSelector: text('dkim_selector').notNull(),
    /** PKCS#8 PEM; never returned by the API. */
    dkimPrivateKey: text('dkim_private_key').notNull(),
    /** base64 SubjectPublicKeyInfo, the `p=` of the DKIM record. */
    dkimPublicKey: text('dkim_public_key').notNull(),
    /** A rotation in progress: the new key is published beside the old and signs once it verifies. */
    dkimNextSelector: text('dkim_next_selector'),
    dkimNextPrivateKey: text('dkim_next_private_key'),
    dkimNextPublicKey: text('dkim_next_public_key'),
    records: text('records', { mode: 'json' }).$type<DomainRecord[]>().notNull(),
    verifiedAt: text('verified_at'),
    lastCheckedAt: text('last_checked_at'),
    /** Start of the current verification window (domain_check_window_expired after it). */
    checkWindowStartedAt: text('check_window_started_at'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('domains_account_name').on(t.accountId, t.name), index('domains_name').on(t.name), index('domains_account').on(t.accountId, t.id)],
)
