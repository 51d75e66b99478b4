import { t } from 'elysia'
import { Timestamp, Uuid } from '../http/schemas'

const Level = t.Union([t.Literal('ok'), t.Literal('warning'), t.Literal('critical')], {
  description: '`critical` at or above the threshold, `warning` from half of it',
})
const Rates = {
  sent: t.Integer(),
  delivered: t.Integer(),
  bounced: t.Integer(),
  complained: t.Integer(),
  bounce_rate: t.Number({ description: 'bounced / sent' }),
  complaint_rate: t.Number({ description: 'complained / delivered' }),
}
const RecordState = t.Union([t.Literal('not_started'), t.Literal('pending'), t.Literal('verified'), t.Literal('failed'), t.Literal('temporary_failure'), t.Literal('absent')], {
  description: 'what the last verification check found (GET /domains/{id}); `absent` when the domain has no such record',
})

export const DeliverabilityReport = t.Object({
  object: t.Literal('deliverability_report'),
  generated_at: Timestamp,
  thresholds: t.Object({
    bounce_rate: t.Number({ description: 'the kill switch’s bounce share (MAILROOM_KILL_SWITCH_BOUNCE_PERCENT), as a fraction' }),
    complaint_rate: t.Number({ description: 'the kill switch’s complaint share (MAILROOM_KILL_SWITCH_COMPLAINT_PERCENT), as a fraction' }),
    min_sends: t.Integer({ description: 'below this many sends a window’s rates are not judged (MAILROOM_KILL_SWITCH_MIN_SENDS)' }),
  }),
  windows: t.Array(
    t.Object({
      days: t.Integer({ description: '1 (today, UTC), 7 or 30 UTC days up to now' }),
      since: Timestamp,
      ...Rates,
      judged: t.Boolean({ description: 'enough sends to judge the rates' }),
      bounce_level: Level,
      complaint_level: Level,
    }),
  ),
  trend: t.Object({
    bounce: t.Union([t.Literal('rising'), t.Literal('falling'), t.Literal('steady')], { description: 'the last 7 days against the 7 before' }),
    complaint: t.Union([t.Literal('rising'), t.Literal('falling'), t.Literal('steady')]),
    daily: t.Array(t.Object({ date: t.String({ description: 'YYYY-MM-DD (UTC)' }), ...Rates })),
  }),
  domains: t.Array(
    t.Object({
      id: Uuid,
      name: t.String(),
      status: t.String({ description: 'the domain’s verification status' }),
      dkim: RecordState,
      spf: RecordState,
      return_path_mx: RecordState,
      dmarc: RecordState,
      blocklisted: t.Boolean({ description: 'a domain blocklist lists it as of the last check: sends answer `sending_domain_blocked`' }),
      dedicated_ip: t.Nullable(t.String({ description: 'the source address its mail leaves from; null for the host’s default' })),
    }),
  ),
})

const Status = t.Union([t.Literal('pass'), t.Literal('warning'), t.Literal('fail'), t.Literal('unknown')], { description: '`unknown`: DNS gave no answer for this check' })

export const DomainCheck = t.Object({
  check: t.Union([t.Literal('spf'), t.Literal('dkim'), t.Literal('dmarc'), t.Literal('return_path_mx'), t.Literal('receiving_mx'), t.Literal('ptr')]),
  status: Status,
  name: t.String({ description: 'the DNS name checked' }),
  detail: t.String({ description: 'what was found' }),
  fix: t.Nullable(t.String({ description: 'what to publish or change; null when it passes' })),
  lookups: t.Optional(t.Integer({ description: 'SPF: DNS lookups the record needs, counted through its includes (at most 10)' })),
  policy: t.Optional(t.Nullable(t.String({ description: 'DMARC: the p= policy' }))),
  addresses: t.Optional(
    t.Array(
      t.Object({
        ip: t.String(),
        ptr: t.Nullable(t.String()),
        forward_confirmed: t.Boolean({ description: 'the PTR name resolves back to the address (FCrDNS)' }),
      }),
    ),
  ),
})

export const DomainDeliverability = t.Object({
  object: t.Literal('deliverability_check'),
  domain_id: Uuid,
  domain: t.String(),
  checked_at: Timestamp,
  status: Status,
  checks: t.Array(DomainCheck),
})

const Listing = t.Object({
  zone: t.String(),
  status: t.Union([t.Literal('listed'), t.Literal('clean'), t.Literal('unknown')], { description: '`unknown`: the zone did not answer, or answered with an error code' }),
  code: t.Nullable(t.String({ description: 'the zone’s 127.0.0.x answer' })),
  reason: t.Nullable(t.String({ description: 'the zone’s TXT reason, when it gives one' })),
})
const Overall = t.Union([t.Literal('listed'), t.Literal('clean'), t.Literal('unknown')])

export const BlocklistReport = t.Object({
  object: t.Literal('blocklist_report'),
  checked_at: Timestamp,
  zones: t.Object({ addresses: t.Array(t.String()), domains: t.Array(t.String()) }),
  addresses: t.Array(
    t.Object({
      ip: t.String(),
      source: t.Union([t.Literal('dedicated'), t.Literal('default')], { description: '`default`: the host’s shared outbound address (MAILROOM_OUTBOUND_IPS)' }),
      dedicated_ip_id: t.Nullable(Uuid),
      status: Overall,
      listings: t.Array(Listing),
    }),
  ),
  domains: t.Array(t.Object({ id: Uuid, name: t.String(), status: Overall, blocked: t.Boolean({ description: 'sends from it answer `sending_domain_blocked`' }), listings: t.Array(Listing) })),
})

export const DeliverabilityDomainParams = t.Object({ id: Uuid })
