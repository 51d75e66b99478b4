import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

const LABEL = '^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$'
const Label = (description: string) => t.String({ minLength: 1, maxLength: 63, pattern: LABEL, description, error: 'must be one DNS label: letters, digits and inner hyphens, at most 63 characters' })

export const Tls = t.Union([t.Literal('opportunistic'), t.Literal('enforced')], {
  description: '`opportunistic` tries TLS and falls back to plain SMTP; `enforced` never sends without TLS.',
})
const Capability = t.Union([t.Literal('enabled'), t.Literal('disabled')])
export const Capabilities = t.Object({ sending: Capability, receiving: Capability })

export const DomainStatus = t.Union(
  [t.Literal('not_started'), t.Literal('pending'), t.Literal('verified'), t.Literal('partially_verified'), t.Literal('failed'), t.Literal('temporary_failure')],
  { description: '`verified` when DKIM and the return-path MX and SPF records verify; `partially_verified` when some do; `pending` while checks go on (72 hours); `failed` after that.' },
)

export const DnsRecord = t.Object({
  record: t.Union([t.Literal('DKIM'), t.Literal('SPF'), t.Literal('DMARC'), t.Literal('Receiving'), t.Literal('Tracking')], { description: 'what the record is for; `SPF` names both records of the return-path subdomain (MX and TXT), as in Resend' }),
  name: t.String({ description: 'the fully qualified name to publish it at' }),
  type: t.Union([t.Literal('TXT'), t.Literal('MX'), t.Literal('CNAME')]),
  value: t.String(),
  ttl: t.String({ description: '`Auto`: any TTL works' }),
  priority: t.Optional(t.Integer()),
  status: t.Union([t.Literal('not_started'), t.Literal('pending'), t.Literal('verified'), t.Literal('failed'), t.Literal('temporary_failure')]),
  detail: t.Optional(t.String({ description: 'what the last check found instead, and what to publish' })),
  required: t.Boolean({ description: 'whether the domain’s status depends on it (DKIM and the return-path records); the others are advice or enable receiving and tracking' }),
})
export type DnsRecord = Static<typeof DnsRecord>

const DomainFields = {
  object: t.Literal('domain'),
  id: Uuid,
  name: t.String(),
  status: DomainStatus,
  created_at: Timestamp,
  region: t.Union([t.Literal('us'), t.Literal('eu')]),
  capabilities: Capabilities,
  open_tracking: t.Boolean(),
  click_tracking: t.Boolean(),
  tracking_subdomain: t.Nullable(t.String()),
  tls: Tls,
  custom_return_path: t.String(),
}

export const Domain = t.Object({
  ...DomainFields,
  records: t.Array(DnsRecord),
  verified_at: t.Nullable(Timestamp),
  last_checked_at: t.Nullable(Timestamp),
  check_window_ends_at: Timestamp,
  updated_at: Timestamp,
})

export const DomainListItem = t.Object(DomainFields)
export const DomainList = t.Object({ object: t.Literal('list'), data: t.Array(DomainListItem), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

const CapabilitiesInput = t.Object({ sending: t.Optional(Capability), receiving: t.Optional(Capability) })

export const CreateDomain = t.Object({
  name: t.String({ minLength: 1, maxLength: 253, description: 'the domain to send from, e.g. `example.com` or `mail.example.com`' }),
  region: t.Optional(
    t.String({ maxLength: 64, description: '`us` (default) or `eu`; Resend’s `us-east-1`, `sa-east-1`, `ap-northeast-1` are read as `us` and `eu-west-1` as `eu`' }),
  ),
  custom_return_path: t.Optional(Label('label of the return-path (bounce) subdomain; default `send`')),
  open_tracking: t.Optional(t.Boolean()),
  click_tracking: t.Optional(t.Boolean()),
  tracking_subdomain: t.Optional(t.Nullable(Label('label of the click and open tracking host, e.g. `links`'))),
  tls: t.Optional(Tls),
  capabilities: t.Optional(CapabilitiesInput),
})
export type CreateDomain = Static<typeof CreateDomain>

export const UpdateDomain = t.Object({
  open_tracking: t.Optional(t.Boolean()),
  click_tracking: t.Optional(t.Boolean()),
  tracking_subdomain: t.Optional(t.Nullable(t.String({ maxLength: 63, description: 'a new label for the tracking host; it can change but not be removed' }))),
  tls: t.Optional(Tls),
  capabilities: t.Optional(CapabilitiesInput),
  name: t.Optional(t.Unknown({ description: 'cannot change (domain_field_immutable)' })),
  region: t.Optional(t.Unknown({ description: 'cannot change (domain_field_immutable)' })),
  custom_return_path: t.Optional(t.Unknown({ description: 'cannot change (domain_field_immutable)' })),
})
export type UpdateDomain = Static<typeof UpdateDomain>

export const VerifyDomain = t.Object({
  reopen: t.Optional(t.Boolean({ description: 'open a new 72-hour check window on a domain whose window closed more than 7 days ago' })),
})

export const DomainIdParams = t.Object({ id: Uuid })
export const ListDomainsQuery = Paging
