import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

export const Permission = t.Union([t.Literal('full_access'), t.Literal('sending_access')], {
  description: '`full_access` may call every route; `sending_access` may only send.',
})
export const Period = t.Union([t.Literal('hourly'), t.Literal('daily'), t.Literal('weekly'), t.Literal('monthly')])
export const LoopGuard = t.Union([t.Literal('off'), t.Literal('warn'), t.Literal('hold'), t.Literal('block')], {
  description: 'what the key does when it sends the same content to the same recipient again and again, or answers an automatic reply: `off` nothing; `warn` sends and records a `loop_detected` warning; `hold` answers `approval_required` and waits for a person; `block` refuses with `loop_detected`',
})
const Hostname = t.String({ minLength: 1, maxLength: 253, pattern: '^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\\.)+[a-zA-Z]{2,63}$', description: 'a domain name, e.g. example.com' })
/** A route group the key may call; `group:read` allows only reads in it. Empty list: every group its permission allows. */
export const Scope = t.String({ pattern: '^[a-z][a-z0-9-]*(:read)?$', maxLength: 64 })

export const ApiKey = t.Object({
  object: t.Literal('api_key'),
  id: Uuid,
  name: t.String(),
  permission: Permission,
  domain_scope: t.Nullable(t.String()),
  scopes: t.Array(t.String()),
  expires_at: t.Nullable(Timestamp),
  token_prefix: t.String(),
  system: t.Boolean(),
  created_at: Timestamp,
  last_used_at: t.Nullable(Timestamp),
  request_count_30d: t.Integer(),
  rotated_at: t.Nullable(Timestamp),
  previous_key_expires_at: t.Nullable(Timestamp),
  budget_per_period: t.Nullable(t.Integer()),
  period: Period,
  rate_ceiling_per_minute: t.Nullable(t.Integer()),
  loop_guard: LoopGuard,
  paused_at: t.Nullable(Timestamp),
  paused_reason: t.Nullable(t.String()),
})
export const ApiKeyWithToken = t.Composite([ApiKey, t.Object({ token: t.String({ description: 'The secret. Shown exactly once.' }) })])

const Limits = {
  budget_per_period: t.Optional(t.Nullable(t.Integer({ minimum: 0, description: 'emails per period; null is unlimited' }))),
  period: t.Optional(Period),
  rate_ceiling_per_minute: t.Optional(t.Nullable(t.Integer({ minimum: 1, maximum: 1_000_000 }))),
  loop_guard: t.Optional(LoopGuard),
}

export const CreateApiKey = t.Object({
  name: t.String({ minLength: 1, maxLength: 100 }),
  permission: t.Optional(Permission),
  domain_scope: t.Optional(t.Nullable(Hostname)),
  scopes: t.Optional(t.Array(Scope, { maxItems: 50, uniqueItems: true })),
  expires_at: t.Optional(t.Nullable(t.String({ format: 'date-time' }))),
  ...Limits,
})
export type CreateApiKey = Static<typeof CreateApiKey>

export const UpdateApiKey = t.Object({
  name: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
  domain_scope: t.Optional(t.Nullable(Hostname)),
  scopes: t.Optional(t.Array(Scope, { maxItems: 50, uniqueItems: true })),
})
export type UpdateApiKey = Static<typeof UpdateApiKey>

export const RotateApiKey = t.Object({
  grace_hours: t.Optional(t.Union([t.Literal(0), t.Literal(1), t.Literal(24)], { description: 'hours the old token keeps working; default 24' })),
})

export const KeyLimits = t.Object({
  object: t.Literal('key_limits'),
  key_id: Uuid,
  budget_per_period: t.Nullable(t.Integer()),
  period: Period,
  used: t.Integer({ description: 'emails spent in the current period' }),
  remaining: t.Nullable(t.Integer()),
  period_started_at: Timestamp,
  resets_at: Timestamp,
  rate_ceiling_per_minute: t.Nullable(t.Integer()),
  rate: t.Object({ limit: t.Integer(), remaining: t.Integer(), reset_seconds: t.Integer() }),
  loop_guard: LoopGuard,
  paused: t.Boolean(),
})
export const UpdateKeyLimits = t.Object(Limits)
export type UpdateKeyLimits = Static<typeof UpdateKeyLimits>

export const KeyIdParams = t.Object({ id: Uuid })
export const ApiKeyList = t.Object({ object: t.Literal('list'), data: t.Array(ApiKey), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListApiKeysQuery = Paging
