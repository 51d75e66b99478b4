import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** One state change: who made it and the resource's public shape before and after, secrets redacted. */
export const auditEntries = sqliteTable(
  'audit_entries',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    actorKind: text('actor_kind', { enum: ['key', 'session', 'system'] }).notNull(),
    actorKeyId: text('actor_key_id'),
    /** The person and console session behind a `session` change. */
    actorPersonId: text('actor_person_id'),
    actorSessionId: text('actor_session_id'),
    resource: text('resource').notNull(),
    resourceId: text('resource_id').notNull(),
    action: text('action').notNull(),
    before: text('before', { mode: 'json' }).$type<Record<string, unknown> | null>(),
    after: text('after', { mode: 'json' }).$type<Record<string, unknown> | null>(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [
    index('audit_entries_account').on(t.accountId, t.id),
    index('audit_entries_resource').on(t.accountId, t.resource, t.resourceId, t.id),
  ],
)
