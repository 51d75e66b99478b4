import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const TRUST_LEVELS = ['sandbox', 'new', 'established', 'trusted'] as const
export type TrustLevel = (typeof TRUST_LEVELS)[number]
export const TRUST_STATES = ['active', 'paused', 'review', 'suspended'] as const
export type TrustState = (typeof TRUST_STATES)[number]

export interface PausedDomain {
  domain: string
  reason: string
  since: string
}

/**
 * An account's place on the trust ladder and the state over it. An account
 * without a row is `trusted` and `active`: the operator's own (the first
 * account, made at boot) and every account made before the trust system.
 */
export const trustStandings = sqliteTable('trust_standings', {
  accountId: text('account_id').primaryKey(),
  level: text('level', { enum: TRUST_LEVELS }).notNull(),
  state: text('state', { enum: TRUST_STATES }).notNull(),
  /** Why the account is paused, under review or suspended. */
  stateReason: text('state_reason'),
  stateSince: text('state_since'),
  /** Sending domains paused on their own (the account's other domains go on). */
  pausedDomains: text('paused_domains', { mode: 'json' }).$type<PausedDomain[]>().notNull(),
  /** When the account reached its level: promotion counts days and sends from here. */
  levelSince: text('level_since').notNull(),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

/** Every change of standing, oldest first: what it was, what it became, why and by whom. */
export const trustChanges = sqliteTable(
  'trust_changes',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    from: text('from').notNull(),
    to: text('to').notNull(),
    reason: text('reason').notNull(),
    /** `system` (the review job), `operator` (the binary's command) or the person's address. */
    by: text('by').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('trust_changes_account').on(t.accountId, t.createdAt)],
)

/** A person's appeal: granted at once by the automatic review, or kept for the operator. */
export const trustAppeals = sqliteTable(
  'trust_appeals',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    personEmail: text('person_email').notNull(),
    reason: text('reason').notNull(),
    status: text('status', { enum: ['granted', 'pending', 'decided'] }).notNull(),
    /** What the automatic review found, or what the operator decided. */
    outcome: text('outcome').notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('trust_appeals_account').on(t.accountId, t.createdAt)],
)
