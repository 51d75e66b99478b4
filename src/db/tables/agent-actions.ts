import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export type AgentActionKind = 'send_email' | 'send_batch' | 'reply' | 'send_broadcast' | 'raise_key_limits'
export type AgentActionStatus = 'pending' | 'approved' | 'rejected' | 'expired'

/**
 * An action an API key asked for that waits for a person: the exact request is
 * kept so approval replays it through the same service, once, in the approval's
 * own transaction.
 */
export const agentActions = sqliteTable(
  'agent_actions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    /** The key that asked; the replay acts as this key. */
    keyId: text('key_id').notNull(),
    kind: text('kind').$type<AgentActionKind>().notNull(),
    /** Why it was held: `batch_threshold`, `broadcast_threshold`, `loop_guard`, `key_limit_raise`. */
    reason: text('reason').notNull(),
    detail: text('detail').notNull(),
    /** The request as the service received it, replayed on approval. */
    request: text('request', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    /** Hash of kind and request: a retried request finds its pending action instead of opening another. */
    requestHash: text('request_hash').notNull(),
    status: text('status').$type<AgentActionStatus>().notNull(),
    /** What the replay answered (the ids it made). */
    result: text('result', { mode: 'json' }).$type<unknown>(),
    decidedBy: text('decided_by'),
    decidedAt: text('decided_at'),
    expiresAt: text('expires_at').notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('agent_actions_account').on(t.accountId, t.id), index('agent_actions_pending').on(t.keyId, t.requestHash, t.status), index('agent_actions_expiry').on(t.status, t.expiresAt)],
)
