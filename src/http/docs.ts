import { CATALOGUE, type ErrorCode } from '../errors/catalogue'
import type { AuthLevel } from './auth'

export interface OpSpec {
  id: string
  summary: string
  tag: string
  auth: AuthLevel
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT'
  /** Codes this operation raises itself; the platform's codes are added from auth, method and body. */
  errors?: ErrorCode[]
  body?: boolean
  description?: string
  /** Path parameters the document names otherwise than the router (which allows one name per path position). */
  pathNames?: Record<string, string>
}

/** The codes the platform itself can answer for an operation of this kind. */
export function platformErrors(s: Pick<OpSpec, 'auth' | 'method' | 'body'>): ErrorCode[] {
  // Every operation stands on storage, which may be locked, full or unreachable for a moment.
  const codes: ErrorCode[] = ['rate_limit_exceeded', 'internal_server_error', 'validation_error', 'service_unavailable']
  // A console session is a credential on every non-public route: it may have ended, or owe its second factor;
  // so is a tool client's OAuth access token, which may have expired.
  if (s.auth !== 'public') codes.push('missing_api_key', 'invalid_api_key', 'oauth_token_invalid', 'kill_switch_active', 'rate_ceiling_exceeded', 'session_required', 'mfa_required')
  if (s.auth === 'full' || s.auth === 'send') codes.push('restricted_api_key')
  if (s.auth === 'person') codes.push('human_action_required')
  if (s.method !== 'GET') {
    // A full rate limiter lets reads pass but refuses changes.
    codes.push('unsupported_media_type', 'payload_too_large', 'invalid_idempotency_key', 'rate_limiter_unavailable')
    if (s.auth !== 'public') codes.push('idempotency_in_flight', 'idempotency_payload_mismatch', 'csrf_origin_rejected', 'insufficient_role')
  }
  return codes
}

export const ERROR_SCHEMA_REF = { $ref: '#/components/schemas/Error' }

/**
 * Route options for one operation: the auth level for the platform's macro and
 * the OpenAPI `detail` (operationId, summary, tag, and every error reply it can
 * give, grouped by status from the catalogue).
 */
export function op(s: OpSpec) {
  const codes = [...new Set([...platformErrors(s), ...(s.errors ?? [])])]
  const byStatus = new Map<number, ErrorCode[]>()
  for (const c of codes) byStatus.set(CATALOGUE[c].status, [...(byStatus.get(CATALOGUE[c].status) ?? []), c])
  const responses = Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, cs]) => [
        String(status),
        {
          description: cs.join(', '),
          content: { 'application/json': { schema: ERROR_SCHEMA_REF } },
          'x-error-codes': cs,
        },
      ]),
  )
  return {
    auth: s.auth,
    detail: {
      operationId: s.id,
      summary: s.summary,
      tags: [s.tag],
      ...(s.description ? { description: s.description } : {}),
      ...(s.auth === 'public' ? { security: [] } : s.auth === 'session' || s.auth === 'person' ? { security: [{ session: [] }] } : {}),
      'x-error-responses': responses,
      'x-auth': s.auth,
      ...(s.pathNames ? { 'x-path-names': s.pathNames } : {}),
    },
  }
}
