import { t, type Static } from 'elysia'
import { Timestamp, Uuid } from '../http/schemas'

const Level = t.Union(
  [t.Literal('sandbox'), t.Literal('new'), t.Literal('established'), t.Literal('trusted')],
  { description: '`sandbox`: only to its members and verified domains, small daily cap; `new` and `established`: daily caps; `trusted`: no ladder cap' },
)
const State = t.Union(
  [t.Literal('active'), t.Literal('paused'), t.Literal('review'), t.Literal('suspended')],
  { description: '`paused`: no real sends (`sending_paused_everywhere`); `review`: only to its members and verified domains, no bulk sends; `suspended`: no sends at all' },
)

const Requirement = t.Object({ name: t.String({ description: '`days_at_level`, `verified_domain`, `delivered_sends`, `rates` or `state`' }), met: t.Boolean(), detail: t.String() })

export const AppealView = t.Object({
  object: t.Literal('trust_appeal'),
  id: Uuid,
  status: t.Union([t.Literal('granted'), t.Literal('pending'), t.Literal('decided')], {
    description: '`granted`: the automatic review lifted the pause or raised the level; `pending`: kept for the operator; `decided`: the operator decided, or there was nothing to review',
  }),
  reason: t.String({ description: 'what the person wrote' }),
  outcome: t.String({ description: 'what the review found or decided' }),
  by: t.String({ description: 'the person who appealed' }),
  created_at: Timestamp,
  updated_at: Timestamp,
})

export const TrustStanding = t.Object({
  object: t.Literal('trust_standing'),
  account_id: t.String(),
  level: Level,
  level_since: t.Nullable(Timestamp),
  state: State,
  state_since: t.Nullable(Timestamp),
  reasons: t.Array(t.String(), { description: 'why the account stands where it does, in words' }),
  limits: t.Object({
    daily_cap: t.Nullable(t.Integer({ description: 'emails a UTC day at this level; null for none' })),
    sent_today: t.Integer(),
    remaining_today: t.Nullable(t.Integer()),
    resets_at: Timestamp,
    recipients: t.Union([t.Literal('any'), t.Literal('own'), t.Literal('none')], { description: '`own`: only the members and verified domains below; `none`: suspended or paused' }),
    allowed_recipients: t.Nullable(t.Object({ members: t.Array(t.String()), domains: t.Array(t.String()) })),
    bulk_sends: t.Boolean({ description: 'broadcasts and batches above `bulk_size` recipients may go' }),
    bulk_size: t.Integer(),
    young_domain_hours: t.Integer({ description: 'bulk sends from a domain verified more recently than this are held (not for trusted accounts)' }),
  }),
  paused_domains: t.Array(t.Object({ domain: t.String(), reason: t.String(), since: Timestamp })),
  rates: t.Object({
    window_hours: t.Integer(),
    sent: t.Integer({ description: 'real (not simulator) sends in the window, one per recipient' }),
    bounced: t.Integer(),
    complained: t.Integer(),
    bounce_percent: t.Number(),
    complaint_percent: t.Number(),
    thresholds: t.Object({ bounce_percent: t.Number(), complaint_percent: t.Number(), min_sends: t.Integer({ description: 'fewer sends in the window are not judged' }) }),
  }),
  next_level: t.Nullable(Level),
  raises_it: t.Array(Requirement, { description: 'what promotes the account to `next_level`; the review job promotes it once every one is met' }),
  history: t.Array(t.Object({ from: t.String(), to: t.String(), reason: t.String(), by: t.String(), at: Timestamp }), { description: 'the last 20 changes, newest first' }),
  latest_appeal: t.Nullable(AppealView),
})

export const TrustAppeal = t.Composite([AppealView, t.Object({ standing: TrustStanding })])

export const AppealBody = t.Object({
  reason: t.String({ minLength: 1, maxLength: 2000, description: 'what happened and what changed; kept with the appeal for the operator' }),
})
export type AppealBody = Static<typeof AppealBody>
