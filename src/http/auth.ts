import { rateLimitOf, resolveToken } from '../api-keys/service'
import type { RootDeps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import type { RequestState } from './state'

/**
 * public: no credential. send: any valid key. full: a full_access key (or, later,
 * a console session). session: a console session only. person: a decision a
 * person makes in the console; a key is refused.
 */
export type AuthLevel = 'public' | 'send' | 'full' | 'session' | 'person'

/** Spends one request from the client address's window (public routes and failed credentials). */
export function spendByAddress(root: RootDeps, st: RequestState) {
  st.rate = root.buckets.take(`addr:${st.address}`, root.config.publicRateLimitPerMinute, root.clock.now())
  if (!st.rate.allowed) throw new AppError('rate_limit_exceeded')
}

const REASONS = {
  unknown: 'The API key is invalid or has been revoked.',
  expired: 'The API key has expired.',
  grace_over: 'This token was replaced by a rotation and its grace period is over.',
}

/** The route group a path belongs to, which is what a key's `scopes` name. */
export const groupOf = (path: string) => path.split('/')[1] ?? ''

export async function authenticate(root: RootDeps, request: Request, level: Exclude<AuthLevel, 'public'>, path: string, st: RequestState): Promise<Actor> {
  const header = request.headers.get('authorization')
  const token = header?.match(/^Bearer\s+(\S+)\s*$/i)?.[1]
  if (!token) {
    spendByAddress(root, st)
    throw new AppError('missing_api_key')
  }
  const found = await resolveToken(root, token)
  if (!found.ok) {
    spendByAddress(root, st)
    throw new AppError('invalid_api_key', { message: REASONS[found.reason] })
  }
  const key = found.key
  const now = root.clock.now()
  st.rate = root.buckets.take(`key:${key.id}`, rateLimitOf(root, key), now)
  if (!st.rate.allowed) throw new AppError(key.rateCeilingPerMinute !== null ? 'rate_ceiling_exceeded' : 'rate_limit_exceeded')
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
