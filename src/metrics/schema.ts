import { t, type Static } from 'elysia'
import { KeyLimits, Permission } from '../api-keys/schema'
import { Timestamp, Uuid } from '../http/schemas'
import { METRICS } from './counters'

const When = (description: string) => t.Optional(t.String({ minLength: 1, maxLength: 40, description }))
/**
 * A list given comma-separated, repeated, or both. Its values are checked by the
 * service, which can name the value that is wrong (Elysia's array coercion cannot).
 */
const List = (description: string) => t.Optional(t.Union([t.String({ maxLength: 4000 }), t.Array(t.String({ maxLength: 4000 }), { maxItems: 200 })], { description: `${description}; comma-separated, repeated, or both` }))

const eventKind = (description?: string) =>
  t.Union([t.Literal('sent'), t.Literal('delivered'), t.Literal('bounced'), t.Literal('complained'), t.Literal('opened'), t.Literal('clicked')], description ? { description } : {})
export const EventKind = eventKind()

/** The parameters of GET /metrics; any of those after `end_date` also switches GET /emails/metrics to this form. */
const MetricsParams = {
  since: When('window start: an ISO 8601 date or date-time (UTC unless it has an offset); default 7 days before the end'),
  until: When('window end: an ISO 8601 date (covering the whole day) or date-time; a future end is now; default now'),
  start_date: When('the same as `since`'),
  end_date: When('the same as `until`'),
  group_by: List('`domain` fills `by_domain`, `api_key` fills `by_api_key`'),
  event: t.Optional(eventKind('adds that event’s figure as `count` to every series and breakdown element, and orders the breakdowns by it')),
  domain: t.Optional(t.String({ minLength: 1, maxLength: 253, description: 'only mail sent from (or received at) this domain name' })),
  api_key_id: t.Optional(t.Union([Uuid, t.Literal('none')], { description: 'only mail sent with this key; `none` for mail no key sent' })),
}
export const MetricsQuery = t.Object(MetricsParams)
export type MetricsQuery = Static<typeof MetricsQuery>

export const EmailMetricsQuery = t.Object({
  ...MetricsParams,
  start_date: When('range start: an ISO 8601 date or date-time, read in `timezone` unless it has an offset; default 6 days before the end (before the end date’s day when that is a date)'),
  end_date: When('range end: an ISO 8601 date (covering the whole day) or date-time, read in `timezone` unless it has an offset; a future end is now; default now'),
  timezone: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'IANA time zone whose calendar the periods follow, e.g. America/New_York; default UTC' })),
  granularity: t.Optional(t.Union([t.Literal('hourly'), t.Literal('daily'), t.Literal('weekly'), t.Literal('monthly')], { description: 'period length when `period` is a dimension (weeks start on Monday); default daily' })),
  metrics: List(`the metrics to report, of ${METRICS.map((m) => `\`${m}\``).join(', ')}; default all`),
  dimensions: List('`period`, `domain`, `email`, `broadcast`: break the figures down; default none (totals only); `email` needs `email_id` and excludes `broadcast`'),
  domain_id: List('only mail of these sending domains: up to 100 ids'),
  email_id: List('only these emails: up to 100 ids; not with `broadcast_id` or the `broadcast` dimension'),
  broadcast_id: List('only these broadcasts: up to 100 ids; not with `email_id` or the `email` dimension'),
})
export type EmailMetricsQuery = Static<typeof EmailMetricsQuery>

const Figure = t.Integer({ minimum: 0 })
const totalsFields = { sent: Figure, delivered: Figure, bounced: Figure, complaints: Figure, opens: Figure, clicks: Figure }
/** The seed's metrics totals object. */
export const Totals = t.Object(totalsFields)
const Count = t.Optional(t.Integer({ minimum: 0, description: 'the figure of the `event` asked for; present only with `event`' }))

export const Metrics = t.Object({
  object: t.Literal('metrics'),
  since: Timestamp,
  until: Timestamp,
  event: t.Nullable(EventKind),
  totals: Totals,
  previous: t.Object(totalsFields, { description: 'the same figures for the window of the same length just before' }),
  series: t.Array(t.Object({ date: t.String({ format: 'date', description: 'a UTC day' }), ...totalsFields, count: Count })),
  by_domain: t.Array(t.Object({ domain: t.String(), ...totalsFields, count: Count }), { description: 'with `group_by=domain`, by sending domain; otherwise empty' }),
  by_api_key: t.Array(t.Object({ api_key_id: t.String({ description: 'a key id, or `none`' }), name: t.Nullable(t.String()), ...totalsFields, count: Count }), {
    description: 'with `group_by=api_key`, by the key that sent; otherwise empty',
  }),
})

const metricFields = Object.fromEntries(METRICS.map((m) => [m, t.Optional(t.Number({ minimum: 0, description: m.endsWith('_rate') ? 'a fraction (0 to 1)' : 'a count' }))]))

export const EmailMetrics = t.Object({
  object: t.Literal('metrics'),
  start_date: Timestamp,
  end_date: Timestamp,
  timezone: t.String(),
  granularity: t.String(),
  metrics: t.Array(t.String()),
  dimensions: t.Array(t.String()),
  totals: t.Object(metricFields, { description: 'the metrics asked for, over the whole range' }),
  data: t.Optional(
    t.Array(
      t.Object({
        period: t.Optional(t.String({ description: 'the period’s start in `timezone`, with its offset' })),
        domain_id: t.Optional(t.Nullable(t.String())),
        domain_name: t.Optional(t.Nullable(t.String())),
        email_id: t.Optional(t.String()),
        broadcast_id: t.Optional(t.Nullable(t.String({ description: 'null for mail that was not part of a broadcast' }))),
        broadcast_name: t.Optional(t.Nullable(t.String({ description: 'null when the broadcast has no name or is gone' }))),
        ...metricFields,
      }),
      { description: 'with `dimensions`: one row per combination that saw events; with `period` alone, every period' },
    ),
  ),
})

const Quota = t.Object({
  used: t.Integer({ description: 'emails counted against the quota: one per recipient of every send' }),
  limit: t.Nullable(t.Integer({ description: 'null: unlimited' })),
  remaining: t.Nullable(t.Integer()),
  sent: t.Integer({ description: 'the same as `used`' }),
  received: t.Integer({ description: 'inbound emails in the period; they spend no quota' }),
  period_started_at: Timestamp,
  resets_at: Timestamp,
})

export const Usage = t.Object({
  object: t.Literal('usage'),
  emails: t.Object({
    daily: t.Object(Quota.properties, { description: 'the UTC day' }),
    monthly: t.Object(Quota.properties, { description: 'the UTC calendar month; its limit is the plan’s monthly inclusion' }),
  }),
  domains: t.Object({ used: t.Integer(), limit: t.Nullable(t.Integer()) }),
  rate_limit: t.Object({ limit: t.Integer({ description: 'requests (and emails) per window for a key without its own ceiling' }), duration: t.String() }),
  api_keys: t.Array(
    t.Composite([
      t.Object({ id: Uuid, name: t.String(), permission: Permission }),
      t.Pick(KeyLimits, ['budget_per_period', 'period', 'used', 'remaining', 'period_started_at', 'resets_at', 'rate_ceiling_per_minute', 'paused']),
    ]),
    { description: 'every key of the account that is not revoked' },
  ),
})
