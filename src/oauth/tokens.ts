import { and, eq, isNull } from 'drizzle-orm'
import { resolveToken, type AuthResult } from '../api-keys/service'
import { apiKeys, oauthGrants, oauthTokens } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import { randomBase62, sha256 } from '../lib/crypto'

/** Prefixes no API key token can have (a key is `mr_` and base62), so a token names its own kind. */
export const ACCESS_PREFIX = 'mrat_'
export const REFRESH_PREFIX = 'mrrt_'
export const CODE_PREFIX = 'mrac_'

export const newSecret = (prefix: string) => prefix + randomBase62(43)
export const secretHash = (token: string) => sha256(token)

export type CredentialResult = AuthResult | { ok: false; reason: 'oauth_token' }

/**
 * The key behind a bearer token: an API key's own token, or an OAuth access token
 * of a live grant, which authenticates as the grant's key so every control of
 * that key (budget, rate ceiling, loop guard, kill switch, revocation) applies.
 */
export async function resolveCredential(deps: Deps, token: string): Promise<CredentialResult> {
  if (!token.startsWith(ACCESS_PREFIX)) return resolveToken(deps, token)
  const [row] = await deps.db.q
    .select({ key: apiKeys, expiresAt: oauthTokens.expiresAt })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .innerJoin(apiKeys, eq(apiKeys.id, oauthGrants.keyId))
    .where(and(eq(oauthTokens.tokenHash, secretHash(token)), eq(oauthTokens.kind, 'access'), isNull(oauthGrants.revokedAt), isNull(apiKeys.revokedAt)))
  if (!row || Date.parse(row.expiresAt) <= deps.clock.now()) return { ok: false, reason: 'oauth_token' }
  return { ok: true, key: row.key }
}

/** RFC 6750 and RFC 9728: where a client finds how to get a token. */
export function bearerChallenge(baseUrl: string, error?: 'invalid_token') {
  const meta = `${baseUrl}/.well-known/oauth-protected-resource`
  return { 'www-authenticate': `Bearer ${error ? `error="${error}", ` : ''}resource_metadata="${meta}"` }
}

/** 401 with the challenge, so a tool client refreshes its token instead of giving up. */
export const oauthTokenRefused = (baseUrl: string) => new AppError('oauth_token_invalid', { headers: bearerChallenge(baseUrl, 'invalid_token') })
