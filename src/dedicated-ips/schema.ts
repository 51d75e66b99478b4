import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

const Overflow = t.Union([t.Literal('shared'), t.Literal('hold')], {
  description: 'mail over the day’s warm-up cap: `shared` sends it from the host’s default address; `hold` keeps it queued until the next UTC day (no attempt spent) and refuses new sends with `daily_limit_reached`',
})

export const DedicatedIp = t.Object({
  object: t.Literal('dedicated_ip'),
  id: Uuid,
  ip: t.String({ description: 'canonical text: dotted IPv4 or RFC 5952 IPv6' }),
  family: t.Union([t.Literal(4), t.Literal(6)]),
  ptr: t.Nullable(t.String({ description: 'the reverse DNS name found when the address was registered or last checked' })),
  warmup: t.Object({
    enabled: t.Boolean({ description: 'false for an address registered as already warm, or once the schedule is over' }),
    started_at: t.Nullable(Timestamp),
    day: t.Nullable(t.Integer({ description: 'day of the schedule, from 1; null when warm' })),
    daily_limit: t.Nullable(t.Integer({ description: 'today’s cap (UTC day); null for none' })),
    sent_today: t.Integer(),
    remaining_today: t.Nullable(t.Integer()),
    completes_at: t.Nullable(Timestamp),
    schedule: t.Array(t.Integer(), { description: 'the daily caps, day 1 first; no cap after the last' }),
  }),
  overflow: Overflow,
  domains: t.Array(
    t.Object({
      id: Uuid,
      name: t.String(),
      assigned_by: t.Union([t.Literal('account'), t.Literal('operator')], { description: '`operator`: pinned by MAILROOM_DEDICATED_IP_PINS; PATCH cannot change it' }),
    }),
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
})

export const RegisterDedicatedIp = t.Object({
  ip: t.String({ minLength: 2, maxLength: 64, description: 'an IPv4 or IPv6 address of this host' }),
  warmup: t.Optional(t.Boolean({ description: 'default true: follow the warm-up schedule from today; false for an address that is already warm' })),
  overflow: t.Optional(Overflow),
})
export type RegisterDedicatedIp = Static<typeof RegisterDedicatedIp>

export const UpdateDedicatedIp = t.Object({
  domains: t.Optional(
    t.Array(t.String({ minLength: 1, maxLength: 253 }), {
      maxItems: 1000,
      description: 'every domain (id or name) that sends from this address, replacing the list; a domain moves here from another address of the account. Operator-pinned domains must stay as pinned',
    }),
  ),
  warmup: t.Optional(t.Boolean({ description: 'true starts the schedule today when it is off; false ends it (the address is warm)' })),
  overflow: t.Optional(Overflow),
})
export type UpdateDedicatedIp = Static<typeof UpdateDedicatedIp>

export const DedicatedIpIdParams = t.Object({ id: Uuid })
export const DedicatedIpList = t.Object({ object: t.Literal('list'), data: t.Array(DedicatedIp), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListDedicatedIpsQuery = Paging
