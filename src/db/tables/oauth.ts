import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** Tool clients registered through RFC 7591. Public clients only: no secret, PKCE on every authorization. */
export const oauthClients = sqliteTable('oauth_clients', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  redirectUris: text('redirect_uris', { mode: 'json' }).$type<string[]>().notNull(),
  clientUri: text('client_uri'),
  createdAt: text('created_at').notNull(),
})

/**
 * A person's consent: the client's access to one account, carried by an API key
 * row of its own so the key's budget, rate ceiling, loop guard and kill switch
 * apply to every token of the grant.
 */
export const oauthGrants = sqliteTable(
  'oauth_grants',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    clientId: text('client_id').notNull(),
    keyId: text('key_id').notNull(),
    personId: text('person_id').notNull(),
    permission: text('permission', { enum: ['full_access', 'sending_access'] }).notNull(),
    createdAt: text('created_at').notNull(),
    revokedAt: text('revoked_at'),
  },
  (t) => [index('oauth_grants_account').on(t.accountId, t.id), index('oauth_grants_key').on(t.keyId)],
)

/** Authorization codes, stored as hashes; single use, bound to the redirect URI and the PKCE challenge. */
export const oauthCodes = sqliteTable('oauth_codes', {
  codeHash: text('code_hash').primaryKey(),
  grantId: text('grant_id').notNull(),
  clientId: text('client_id').notNull(),
  redirectUri: text('redirect_uri').notNull(),
  codeChallenge: text('code_challenge').notNull(),
  expiresAt: text('expires_at').notNull(),
  usedAt: text('used_at'),
})

/** Access and refresh tokens, stored as hashes. A refresh token is spent by its one use (rotation). */
export const oauthTokens = sqliteTable(
  'oauth_tokens',
  {
    tokenHash: text('token_hash').primaryKey(),
    grantId: text('grant_id').notNull(),
    kind: text('kind', { enum: ['access', 'refresh'] }).notNull(),
    expiresAt: text('expires_at').notNull(),
    usedAt: text('used_at'),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('oauth_tokens_grant').on(t.grantId)],
)

/** Model Context Protocol sessions: opened by `initialize`, bound to the credential that opened them, ended by idleness. */
export const mcpSessions = sqliteTable('mcp_sessions', {
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull(),
  /** The key (or OAuth grant's key) or console session that opened it; another credential cannot use it. */
  principal: text('principal').notNull(),
  clientName: text('client_name'),
  protocolVersion: text('protocol_version').notNull(),
  createdAt: text('created_at').notNull(),
  lastUsedAt: text('last_used_at').notNull(),
})
