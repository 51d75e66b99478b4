import { pauseKey } from '../../src/api-keys/service'
import type { Scenario } from './scenarios'

/** A token in our format, so a scenario can send it as a fixed header. */
const FIXED = 'mr_guardGuardGuardGuardGuardGuardGuard0000'
const bearer = { authorization: `Bearer ${FIXED}` }

/**
 * Every refusal the platform itself gives on a GET of a full_access route, as
 * scenarios: no key, an unknown, revoked or sending-only key, a console session
 * that ended or still owes its second factor, a key paused by the kill switch, a
 * spent rate ceiling or window, and an unexpected storage failure (the route's
 * `table` dropped under it).
 */
export function guardScenarios(path: string, table: string): Scenario[] {
  return [
    { name: 'refuses no key', method: 'GET', path, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses an unknown key', method: 'GET', path, as: 'unknown', status: 403, code: 'invalid_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path, as: 'revoked', status: 403, code: 'invalid_api_key' },
    { name: 'refuses a sending-only key', method: 'GET', path, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses a console session that has ended', method: 'GET', path, as: 'none', headers: { cookie: 'mailroom_session=ended' }, status: 401, code: 'session_required' },
    { name: 'refuses a console session whose second factor is due', method: 'GET', path, as: { mfa: 'pending' }, status: 401, code: 'mfa_required' },
    {
      name: 'refuses a key paused by the kill switch',
      method: 'GET',
      path,
      as: 'none',
      headers: bearer,
      setup: async (h) => pauseKey(h.root, (await h.key({ token: FIXED })).id, 'complaint spike'),
      status: 403,
      code: 'kill_switch_active',
    },
    {
      name: 'refuses a key past its own rate ceiling',
      method: 'GET',
      path,
      as: 'none',
      headers: bearer,
      setup: async (h) => {
        await h.key({ token: FIXED, rate_ceiling_per_minute: 1 })
        await h.call('GET', path, { key: FIXED })
      },
      status: 429,
      code: 'rate_ceiling_exceeded',
    },
    { name: 'refuses a key past the deployment’s rate window', method: 'GET', path, env: { MAILROOM_RATE_LIMIT: '1' }, setup: (h) => h.call('GET', path), status: 429, code: 'rate_limit_exceeded' },
    { name: 'answers 500 when storage fails unexpectedly', method: 'GET', path, setup: (h) => h.root.db.execute(`drop table ${table}`), status: 500, code: 'internal_server_error' },
  ]
}
