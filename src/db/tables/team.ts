import { index, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const

/** A person's place in an account: a member, with one role there. */
export const memberships = sqliteTable(
  'memberships',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    personId: text('person_id').notNull(),
    role: text('role', { enum: ROLES }).notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('memberships_account_person').on(t.accountId, t.personId), index('memberships_person').on(t.personId), index('memberships_account').on(t.accountId, t.id)],
)

/** An invitation by address; `pending` ones past `expires_at` are expired. The token is kept only as a hash. */
export const invites = sqliteTable(
  'invites',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    email: text('email').notNull(),
    role: text('role', { enum: ROLES }).notNull(),
    tokenHash: text('token_hash').notNull(),
    status: text('status', { enum: ['pending', 'accepted', 'cancelled'] }).notNull(),
    invitedBy: text('invited_by'),
    expiresAt: text('expires_at').notNull(),
    acceptedBy: text('accepted_by'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('invites_token_hash').on(t.tokenHash), index('invites_account').on(t.accountId, t.id), index('invites_account_email').on(t.accountId, t.email)],
)
