import { rateLimitOf } from '../api-keys/service'
import type { RootDeps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { bearerChallenge, oauthTokenRefused, resolveCredential } from '../oauth/tokens'
import { fromOwnOrigin, sessionTokenOf } from '../sessions/cookie'
import { resolveSession } from '../sessions/service'
import { changeRoleFor, requireRole } from '../team/roles'
import type { ErrorCode } from '../errors/catalogue'
import type { BucketState } from '../lib/token-bucket'
import type { RequestState } from './state'

/**
 * public: no credential. send: any valid key or a console session. full: a
 * full_access key or a console session. session: a console session only.
 * person: a decision a person makes in a console session that passed two-factor
 * authentication; a key is refused.
 */
export type AuthLevel = 'public' | 'send' | 'full' | 'session' | 'person'

/**
 * Keeps a window's state for the reply's headers and refuses what it does not
 * cover. A window that could not be tracked (the limiter's table is full) lets
 * reads pass and refuses writes, which must never go unmetered.
 */
function admit(st: RequestState, rate: BucketState, exceeded: ErrorCode) {
  st.rate = rate
  if (rate.untracked) {
    if (st.write) throw new AppError('rate_limiter_unavailable')
  } else if (!rate.allowed) throw new AppError(exceeded)
}

/** Spends one request from the client address's window (public routes and failed credentials). */
export function spendByAddress(root: RootDeps, st: RequestState) {
  admit(st, root.buckets.take(`addr:${st.address}`, root.config.publicRateLimitPerMinute, root.clock.now()), 'rate_limit_exceeded')
}

const REASONS = {
  unknown: 'The API key is invalid or has been revoked.',
  expired: 'The API key has expired.',
  grace_over: 'This token was replaced by a rotation and its grace period is over.',
}

/** The route group a path belongs to, which is what a key's `scopes` name. */
export const groupOf = (path: string) => path.split('/')[1] ?? ''

export const bearerToken = (request: Request) => request.headers.get('authorization')?.match(/^Bearer\s+(\S+)\s*$/i)?.[1]

export async function authenticate(root: RootDeps, request: Request, level: Exclude<AuthLevel, 'public'>, path: string, st: RequestState): Promise<Actor> {
  const token = bearerToken(request)
  if (!token) {
    const cookie = sessionTokenOf(request)
    if (cookie) return authenticateSession(root, request, level, path, st, cookie)
    spendByAddress(root, st)
    throw new AppError('missing_api_key', { headers: bearerChallenge(root.config.baseUrl) })
  }
  const found = await resolveCredential(root, token)
  if (!found.ok) {
    spendByAddress(root, st)
    if (found.reason === 'oauth_token') throw oauthTokenRefused(root.config.baseUrl)
    throw new AppError('invalid_api_key', { message: REASONS[found.reason] })
  }
  const key = found.key
  st.caller = { accountId: key.accountId, keyId: key.id }
  const now = root.clock.now()
  admit(st, root.buckets.take(`key:${key.id}`, rateLimitOf(root, key), now), key.rateCeilingPerMinute !== null ? 'rate_ceiling_exceeded' : 'rate_limit_exceeded')
  root.keyUsage.record(key.id, now)
  if (key.pausedAt) throw new AppError('kill_switch_active', { message: `This API key was paused by the kill switch: ${key.pausedReason ?? 'no reason recorded'}.` })
  if (level === 'session') throw new AppError('session_required')
  if (level === 'person') throw new AppError('human_action_required')
  if (level === 'full' && key.permission !== 'full_access') throw new AppError('restricted_api_key')
  if (key.scopes.length) {
    const group = groupOf(path)
    const readOnly = request.method === 'GET' || request.method === 'HEAD'
    if (!key.scopes.includes(group) && !(readOnly && key.scopes.includes(`${group}:read`))) {
      throw new AppError('restricted_api_key', { message: `This API key's scopes (${key.scopes.join(', ')}) do not allow ${request.method} on \`${group}\`.` })
    }
  }
  return { accountId: key.accountId, kind: 'key', keyId: key.id, permission: key.permission, domainScope: key.domainScope }
}

/** The two-factor step's own routes, open to a session whose second factor is still due. */
const MFA_STEP = new Set(['/auth/mfa/enroll', '/auth/mfa/verify', '/auth/sign-out'])

/**
 * A console session from its cookie (a bearer key wins when both come). It is a
 * full_access caller within the person's role, and the only credential session
 * and person routes take. Refused in this order: a state change from another
 * site, a session ended or expired, a second factor still due (everywhere but
 * its own step) or required by the account and missing, a person-level decision
 * without two-factor, and a change the role does not allow.
 */
async function authenticateSession(root: RootDeps, request: Request, level: Exclude<AuthLevel, 'public'>, path: string, st: RequestState, token: string): Promise<Actor> {
  const mutating = request.method !== 'GET' && request.method !== 'HEAD'
  if (mutating && !fromOwnOrigin(request, root.config.baseUrl)) {
    spendByAddress(root, st)
    const from = request.headers.get('origin') ?? `a ${request.headers.get('sec-fetch-site')} page`
    throw new AppError('csrf_origin_rejected', { message: `This change carries the session cookie but comes from ${from}, not ${new URL(root.config.baseUrl).origin}.` })
  }
  const s = await resolveSession(root, token)
  if (!s) {
    spendByAddress(root, st)
    throw new AppError('session_required', { message: 'The console session has ended or expired; sign in again (POST /auth/sign-in).' })
  }
  // Known from here on: a refusal below is the account's to read in its request log.
  st.caller = { accountId: s.accountId, keyId: null }
  admit(st, root.buckets.take(`person:${s.person.id}`, root.config.rateLimitPerMinute, root.clock.now()), 'rate_limit_exceeded')
  if (!MFA_STEP.has(path)) {
    if (s.mfaEnabled && !s.person.mfaVerified) throw new AppError('mfa_required', { message: 'Finish signing in with a code from your authenticator app (POST /auth/mfa/verify).' })
    if (s.requireMfa && !s.mfaEnabled) {
      throw new AppError('mfa_required', { message: 'This account requires two-factor authentication: enrol with POST /auth/mfa/enroll and confirm with POST /auth/mfa/verify.' })
    }
    if (level === 'person' && !s.person.mfaVerified) {
      throw new AppError('mfa_required', { message: 'A decision reserved to a person needs a session that passed two-factor authentication: enrol with POST /auth/mfa/enroll, then verify.' })
    }
  }
  const actor: Actor = { accountId: s.accountId, kind: 'session', keyId: null, permission: 'full_access', domainScope: null, person: s.person }
  if (mutating) requireRole(actor, changeRoleFor(groupOf(path)), `make changes under /${groupOf(path)}`)
  return actor
}
