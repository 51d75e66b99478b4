import { createHash } from 'node:crypto'
import { and, eq, isNull } from 'drizzle-orm'
import { auditKeyCreated, checkBudget, insertKey } from '../api-keys/service'
import { recordChange } from '../audit/record'
import type { Tx } from '../db'
import { pageOf } from '../db/paging'
import { accounts, apiKeys, oauthClients, oauthCodes, oauthGrants, oauthTokens } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import type { ErrorCode } from '../errors/catalogue'
import type { Actor } from '../lib/actor'
import { DAY, HOUR, iso } from '../lib/clock'
import { hmac, safeEqual } from '../lib/crypto'
import { listKey, type PageQuery } from '../lib/paging'
import { changeRoleFor, requireRole } from '../team/roles'
import { SCOPES, type AuthorizeQuery, type ConsentForm, type RegisterClient, type RevokeRequest, type TokenRequest } from './schema'
import { ACCESS_PREFIX, CODE_PREFIX, REFRESH_PREFIX, newSecret, secretHash } from './tokens'

const ACCESS_TTL_S = 3600
const REFRESH_TTL_MS = 30 * DAY
const CODE_TTL_MS = HOUR / 6

type ClientRow = typeof oauthClients.$inferSelect
type GrantRow = typeof oauthGrants.$inferSelect
type Permission = (typeof SCOPES)[number]

/**
 * An OAuth error: the catalogue's envelope, plus RFC 6749's `error` and
 * `error_description`, which OAuth client libraries read.
 */
function oauthError(code: ErrorCode, oauthName: string, message: string) {
  return new AppError(code, { message, extra: { error: oauthName, error_description: message } })
}

/** RFC 8414: what a tool client needs to register, authorize and get tokens. */
export function authorizationServerMetadata(baseUrl: string) {
  return {
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}/oauth/authorize`,
    token_endpoint: `${baseUrl}/oauth/token`,
    registration_endpoint: `${baseUrl}/oauth/register`,
    revocation_endpoint: `${baseUrl}/oauth/revoke`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...SCOPES],
    service_documentation: `${baseUrl}/docs`,
  }
}

/** RFC 9728: the API is one protected resource, /mcp included; this server issues its tokens. */
export function protectedResourceMetadata(baseUrl: string) {
  return {
    resource: baseUrl,
    authorization_servers: [baseUrl],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'Mailroom API and MCP endpoint',
    resource_documentation: `${baseUrl}/docs`,
  }
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i
const UNSAFE_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'about:'])

/** RFC 8252: https, http only on a loopback host, or a native app's private-use scheme; never a fragment. */
function checkRedirectUri(uri: string) {
  let u: URL
  try {
    u = new URL(uri)
  } catch {
    throw oauthError('invalid_redirect_uri', 'invalid_redirect_uri', `\`${uri}\` is not an absolute URI.`)
  }
  const ok = u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.test(u.hostname)) || (!/^https?:$/.test(u.protocol) && !UNSAFE_SCHEMES.has(u.protocol))
  if (!ok || u.hash || uri.includes('#')) {
    throw oauthError('invalid_redirect_uri', 'invalid_redirect_uri', `\`${uri}\` is not acceptable: use https, http on a loopback host or a private-use scheme, without a fragment.`)
  }
}

/** Exact match, except that a loopback redirect may come back on any port (RFC 8252 7.3). */
function sameRedirect(registered: string, given: string) {
  if (registered === given) return true
  try {
    const a = new URL(registered)
    const b = new URL(given)
    return a.protocol === 'http:' && LOOPBACK.test(a.hostname) && a.hostname === b.hostname && a.protocol === b.protocol && a.pathname === b.pathname && a.search === b.search
  } catch {
    return false
  }
}

export async function registerClient(deps: Deps, input: RegisterClient) {
  const method = input.token_endpoint_auth_method ?? 'none'
  if (method !== 'none') {
    throw oauthError('invalid_client_metadata', 'invalid_client_metadata', `token_endpoint_auth_method \`${method}\` is not supported: clients are public (\`none\`) and use PKCE.`)
  }
  const grants = input.grant_types ?? ['authorization_code', 'refresh_token']
  const unsupportedGrant = grants.find((g) => g !== 'authorization_code' && g !== 'refresh_token')
  if (unsupportedGrant) throw oauthError('invalid_client_metadata', 'invalid_client_metadata', `grant type \`${unsupportedGrant}\` is not supported.`)
  const responses = input.response_types ?? ['code']
  if (responses.some((r) => r !== 'code')) throw oauthError('invalid_client_metadata', 'invalid_client_metadata', 'Only the `code` response type is supported.')
  for (const uri of input.redirect_uris) checkRedirectUri(uri)
  const now = deps.clock.now()
  const row: ClientRow = {
    id: deps.ids.uuid(),
    name: input.client_name ?? 'Unnamed tool client',
    redirectUris: input.redirect_uris,
    clientUri: input.client_uri ?? null,
    createdAt: iso(now),
  }
  await deps.db.write((tx) => tx.insert(oauthClients).values(row))
  return {
    client_id: row.id,
    client_id_issued_at: Math.floor(now / 1000),
    client_name: row.name,
    ...(row.clientUri ? { client_uri: row.clientUri } : {}),
    redirect_uris: row.redirectUris,
    token_endpoint_auth_method: 'none' as const,
    grant_types: grants,
    response_types: responses,
    scope: SCOPES.join(' '),
  }
}

/** The permission a scope string asks for: full_access only when named; values this server does not know are ignored. */
const permissionOf = (scope: string | undefined): Permission => (scope?.split(/\s+/).includes('full_access') ? 'full_access' : 'sending_access')

export interface CheckedRequest {
  client: ClientRow
  redirectUri: string
  permission: Permission
}

/**
 * Checks an authorization request before anything is shown or decided. A bad
 * client or redirect URI is answered here and never redirected to (RFC 6749
 * 4.1.2.1), so nobody can use this server to bounce people to another site.
 */
export async function checkAuthorization(deps: Deps, q: AuthorizeQuery): Promise<CheckedRequest> {
  const [client] = await deps.db.q.select().from(oauthClients).where(eq(oauthClients.id, q.client_id))
  if (!client) throw oauthError('invalid_client', 'invalid_client', `No client is registered with client_id \`${q.client_id}\`.`)
  const redirectUri = q.redirect_uri ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined)
  if (!redirectUri) throw oauthError('invalid_redirect_uri', 'invalid_request', 'This client registered several redirect URIs: name one with `redirect_uri`.')
  if (!client.redirectUris.some((r) => sameRedirect(r, redirectUri))) {
    throw oauthError('invalid_redirect_uri', 'invalid_request', `\`${redirectUri}\` is not a redirect URI this client registered.`)
  }
  if (q.response_type !== 'code') throw new AppError('invalid_parameter', { message: `response_type must be \`code\`, not \`${q.response_type}\`.` })
  if (q.code_challenge_method !== 'S256') throw new AppError('invalid_parameter', { message: 'code_challenge_method must be `S256`; `plain` is not accepted.' })
  if (!/^[A-Za-z0-9_-]{43}$/.test(q.code_challenge)) throw new AppError('invalid_parameter', { message: 'code_challenge must be the 43-character BASE64URL of a SHA-256 digest.' })
  const base = deps.config.baseUrl
  if (q.resource !== undefined && q.resource !== base && q.resource !== `${base}/mcp` && q.resource !== `${base}/`) {
    throw new AppError('invalid_parameter', { message: `resource must be this server (${base}) or its MCP endpoint (${base}/mcp).` })
  }
  return { client, redirectUri, permission: permissionOf(q.scope) }
}

const CONSENT_FIELDS = ['response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state', 'scope', 'resource'] as const

/**
 * The consent form's token: bound to the person's console session and to every
 * field of the request, so another site can neither post the form for them nor
 * swap the client, redirect or challenge it shows.
 */
export function consentToken(deps: Deps, sessionId: string, q: AuthorizeQuery) {
  return hmac(deps.secret, ['oauth-consent', sessionId, ...CONSENT_FIELDS.map((f) => q[f] ?? '')].join('\n'))
}

export async function consentView(deps: Deps, actor: Actor, q: AuthorizeQuery) {
  const checked = await checkAuthorization(deps, q)
  const [account] = await deps.db.q.select({ name: accounts.name }).from(accounts).where(eq(accounts.id, actor.accountId))
  return { ...checked, accountName: account?.name ?? actor.accountId, csrf: consentToken(deps, actor.person!.sessionId, q), person: actor.person! }
}

function withParams(uri: string, params: Record<string, string | undefined>) {
  const u = new URL(uri)
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v)
  return u.toString()
}

/**
 * The person's answer on the consent page. Approving makes the grant and its key
 * (a tool client's access is a key of its own, so the same controls bind it) and
 * a single-use code; either answer goes back to the client's redirect URI.
 */
export async function decideConsent(deps: Deps, actor: Actor, form: ConsentForm): Promise<string> {
  const expected = consentToken(deps, actor.person!.sessionId, form)
  if (!safeEqual(form.csrf_token, expected)) {
    throw new AppError('csrf_origin_rejected', { message: 'The consent form was not the one this server showed you in this session; open the authorization link again.' })
  }
  const { client, redirectUri, permission } = await checkAuthorization(deps, form)
  const iss = deps.config.baseUrl
  if (form.decision === 'deny') return withParams(redirectUri, { error: 'access_denied', error_description: 'The person declined.', state: form.state, iss })
  requireRole(actor, changeRoleFor('api-keys'), 'give a tool client access to the account')
  const budgetText = form.budget_per_period?.trim() ?? ''
  if (budgetText !== '' && !/^\d{1,9}$/.test(budgetText)) throw new AppError('invalid_parameter', { message: 'budget_per_period must be a whole number of emails, or empty.' })
  const budget = budgetText === '' ? null : Number(budgetText)
  await checkBudget(deps, actor.accountId, budget)
  const { row: key } = await insertKey(deps, {
    accountId: actor.accountId,
    name: `OAuth: ${client.name}`.slice(0, 100),
    permission,
    budget_per_period: budget ?? undefined,
    period: 'monthly',
  })
  await auditKeyCreated(deps, actor, key)
  const now = deps.clock.now()
  const grant: GrantRow = { id: deps.ids.uuid(), accountId: actor.accountId, clientId: client.id, keyId: key.id, personId: actor.person!.id, permission, createdAt: iso(now), revokedAt: null }
  const code = newSecret(CODE_PREFIX)
  await deps.db.write(async (tx) => {
    await tx.insert(oauthGrants).values(grant)
    await tx.insert(oauthCodes).values({ codeHash: secretHash(code), grantId: grant.id, clientId: client.id, redirectUri, codeChallenge: form.code_challenge, expiresAt: iso(now + CODE_TTL_MS), usedAt: null })
  })
  await recordChange(deps, actor, { resource: 'oauth_grant', resourceId: grant.id, action: 'created', before: null, after: toGrant(grant, client) })
  return withParams(redirectUri, { code, state: form.state, iss })
}

type Tokens = Awaited<ReturnType<typeof issueTokens>>
export type TokenOutcome = { tokens: Tokens } | { refused: AppError }

async function issueTokens(tx: Tx, deps: Deps, grant: GrantRow) {
  const now = deps.clock.now()
  const access = newSecret(ACCESS_PREFIX)
  const refresh = newSecret(REFRESH_PREFIX)
  await tx.insert(oauthTokens).values([
    { tokenHash: secretHash(access), grantId: grant.id, kind: 'access', expiresAt: iso(now + ACCESS_TTL_S * 1000), usedAt: null, createdAt: iso(now) },
    { tokenHash: secretHash(refresh), grantId: grant.id, kind: 'refresh', expiresAt: iso(now + REFRESH_TTL_MS), usedAt: null, createdAt: iso(now) },
  ])
  return { access_token: access, token_type: 'Bearer' as const, expires_in: ACCESS_TTL_S, refresh_token: refresh, scope: grant.permission }
}

/** Ends a grant for good: its key is revoked and its tokens deleted, in the caller's transaction. */
async function endGrant(tx: Tx, now: string, grant: Pick<GrantRow, 'id' | 'keyId'>) {
  await tx.update(oauthGrants).set({ revokedAt: now }).where(and(eq(oauthGrants.id, grant.id), isNull(oauthGrants.revokedAt)))
  await tx.update(apiKeys).set({ revokedAt: now, updatedAt: now }).where(and(eq(apiKeys.id, grant.keyId), isNull(apiKeys.revokedAt)))
  await tx.delete(oauthTokens).where(eq(oauthTokens.grantId, grant.id))
}

/** A grant whose key still works: revoking the key (DELETE /api-keys/{id}) ends the grant too. */
async function liveGrant(tx: Tx, grantId: string) {
  const [row] = await tx
    .select({ grant: oauthGrants })
    .from(oauthGrants)
    .innerJoin(apiKeys, eq(apiKeys.id, oauthGrants.keyId))
    .where(and(eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt), isNull(apiKeys.revokedAt)))
  return row?.grant
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url')

/**
 * The token endpoint. A code is exchanged once, by the client it was issued to,
 * with the redirect URI and the PKCE verifier of its request; a second use ends
 * the grant (RFC 6749 4.1.2). A refresh token is spent by its use and replaced;
 * presenting a spent one ends the grant too, since only a thief would.
 * A refusal is answered, not thrown, so that ending a grant is kept.
 */
export async function exchangeToken(deps: Deps, input: TokenRequest): Promise<TokenOutcome> {
  if (input.grant_type === 'authorization_code') return exchangeCode(deps, input)
  if (input.grant_type === 'refresh_token') return refresh(deps, input)
  throw oauthError('unsupported_grant_type', 'unsupported_grant_type', `grant_type \`${input.grant_type}\` is not supported; use \`authorization_code\` or \`refresh_token\`.`)
}

function required(input: TokenRequest, ...fields: (keyof TokenRequest)[]) {
  const absent = fields.filter((f) => !input[f])
  if (absent.length) {
    throw new AppError('validation_error', {
      message: `Missing ${absent.map((f) => `\`${f}\``).join(', ')} for grant_type ${input.grant_type}.`,
      details: absent.map((f) => ({ field: f, message: 'required' })),
      extra: { error: 'invalid_request', error_description: `missing ${absent.join(', ')}` },
    })
  }
}

async function exchangeCode(deps: Deps, input: TokenRequest) {
  required(input, 'code', 'code_verifier', 'client_id')
  const now = deps.clock.now()
  const outcome = await deps.db.write(async (tx) => {
    const [code] = await tx.select().from(oauthCodes).where(eq(oauthCodes.codeHash, secretHash(input.code!)))
    if (!code) return { error: 'The authorization code is unknown.' }
    if (code.usedAt) {
      const [grant] = await tx.select().from(oauthGrants).where(eq(oauthGrants.id, code.grantId))
      if (grant) await endGrant(tx, iso(now), grant)
      return { error: 'The authorization code was already used; the access given with it is revoked.' }
    }
    if (Date.parse(code.expiresAt) <= now) return { error: 'The authorization code has expired.' }
    if (code.clientId !== input.client_id) return { error: 'The authorization code was issued to another client.' }
    if (input.redirect_uri !== undefined && input.redirect_uri !== code.redirectUri) return { error: 'redirect_uri differs from the one of the authorization request.' }
    if (!safeEqual(s256(input.code_verifier!), code.codeChallenge)) return { error: 'The PKCE code_verifier does not match the code_challenge.' }
    await tx.update(oauthCodes).set({ usedAt: iso(now) }).where(eq(oauthCodes.codeHash, code.codeHash))
    const grant = await liveGrant(tx, code.grantId)
    if (!grant) return { error: 'The access given with this code was revoked.' }
    return { tokens: await issueTokens(tx, deps, grant) }
  })
  return 'error' in outcome ? { refused: oauthError('invalid_grant', 'invalid_grant', outcome.error!) } : { tokens: outcome.tokens! }
}

async function refresh(deps: Deps, input: TokenRequest) {
  required(input, 'refresh_token')
  const now = deps.clock.now()
  const outcome = await deps.db.write(async (tx) => {
    const [token] = await tx
      .select()
      .from(oauthTokens)
      .where(and(eq(oauthTokens.tokenHash, secretHash(input.refresh_token!)), eq(oauthTokens.kind, 'refresh')))
    if (!token || Date.parse(token.expiresAt) <= now) return { error: 'The refresh token is unknown, expired or revoked.' }
    const grant = await liveGrant(tx, token.grantId)
    if (!grant) return { error: 'The access given with this refresh token was revoked.' }
    if (input.client_id !== undefined && input.client_id !== grant.clientId) return { error: 'The refresh token was issued to another client.' }
    if (token.usedAt) {
      await endGrant(tx, iso(now), grant)
      return { error: 'The refresh token was already used; the access given with it is revoked.' }
    }
    await tx.update(oauthTokens).set({ usedAt: iso(now) }).where(eq(oauthTokens.tokenHash, token.tokenHash))
    return { tokens: await issueTokens(tx, deps, grant) }
  })
  return 'error' in outcome ? { refused: oauthError('invalid_grant', 'invalid_grant', outcome.error!) } : { tokens: outcome.tokens! }
}

/**
 * RFC 7009. A refresh token ends its whole grant; an access token only itself.
 * An unknown token, or one of another client, is answered the same (200), so
 * the endpoint tells nobody which tokens exist.
 */
export async function revokeToken(deps: Deps, input: RevokeRequest) {
  const hash = secretHash(input.token)
  await deps.db.write(async (tx) => {
    const [row] = await tx.select({ token: oauthTokens, grant: oauthGrants }).from(oauthTokens).innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId)).where(eq(oauthTokens.tokenHash, hash))
    if (!row || (input.client_id !== undefined && input.client_id !== row.grant.clientId)) return
    if (row.token.kind === 'refresh') await endGrant(tx, iso(deps.clock.now()), row.grant)
    else await tx.delete(oauthTokens).where(eq(oauthTokens.tokenHash, hash))
  })
  return {}
}

function toGrant(row: GrantRow, client: Pick<ClientRow, 'id' | 'name'>) {
  return {
    object: 'oauth_grant' as const,
    id: row.id,
    client_id: client.id,
    client_name: client.name,
    scope: row.permission,
    key_id: row.keyId,
    person_id: row.personId,
    created_at: row.createdAt,
  }
}

const liveGrants = (accountId: string) => and(eq(oauthGrants.accountId, accountId), isNull(oauthGrants.revokedAt), isNull(apiKeys.revokedAt))

export async function listGrants(deps: Deps, actor: Actor, q: PageQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('oauth_grants'), query: q, id: oauthGrants.id },
    async (ks) => {
      const rows = await deps.db.q
        .select({ grant: oauthGrants, client: oauthClients })
        .from(oauthGrants)
        .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
        .innerJoin(apiKeys, eq(apiKeys.id, oauthGrants.keyId))
        .where(and(liveGrants(actor.accountId), ks.where))
        .orderBy(ks.orderBy)
        .limit(ks.limit)
      return rows.map((r) => ({ ...r, id: r.grant.id }))
    },
    (r) => toGrant(r.grant, r.client),
  )
}

/** Revokes a client's access at once: its key and every token it holds. */
export async function revokeGrant(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select({ grant: oauthGrants, client: oauthClients })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .innerJoin(apiKeys, eq(apiKeys.id, oauthGrants.keyId))
    .where(and(eq(oauthGrants.id, id.toLowerCase()), liveGrants(actor.accountId)))
  if (!row) throw notFound('OAuth grant')
  await deps.db.write((tx) => endGrant(tx, iso(deps.clock.now()), row.grant))
  await recordChange(deps, actor, { resource: 'oauth_grant', resourceId: row.grant.id, action: 'deleted', before: toGrant(row.grant, row.client), after: null })
  return { object: 'oauth_grant' as const, id: row.grant.id, deleted: true }
}

