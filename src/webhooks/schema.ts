import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'
import { WEBHOOK_EVENT_KINDS } from './kinds'

export const EventKind = t.Union(
  WEBHOOK_EVENT_KINDS.map((k) => t.Literal(k)),
  { description: 'an event kind: `email.*` (sent, delivered, delivery_delayed, bounced, complained, opened, clicked, failed, scheduled, suppressed, received, canceled), `contact.*`, `domain.*`, `topic.*` (created, updated, deleted), `suppression.*` (created, deleted)' },
)
const Events = t.Array(EventKind, { minItems: 1, maxItems: WEBHOOK_EVENT_KINDS.length, uniqueItems: true, description: 'the kinds this endpoint receives; at least one' })
const Url = t.String({ minLength: 1, maxLength: 2048, description: 'an https:// URL whose host resolves to public addresses only (http:// and private addresses with MAILROOM_ALLOW_PRIVATE_WEBHOOKS)' })
const Status = t.Union([t.Literal('enabled'), t.Literal('disabled')], { description: 'Resend’s name for `disabled`' })

export const Webhook = t.Object({
  object: t.Literal('webhook'),
  id: Uuid,
  url: t.String(),
  endpoint: t.String({ description: 'the same URL, under Resend’s name' }),
  events: t.Array(t.String()),
  disabled: t.Boolean(),
  status: Status,
  disabled_reason: t.Nullable(t.Union([t.Literal('manual'), t.Literal('failing')], { description: '`failing`: disabled by the dispatcher after 5 days of failed deliveries' })),
  webhook_compat: t.Boolean({ description: 'deliveries also carry the signature under `svix-id`, `svix-timestamp` and `svix-signature`' }),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export const WebhookWithSecret = t.Composite([
  Webhook,
  t.Object({ signing_secret: t.String({ description: '`whsec_…`: shown here once, never again' }) }),
])
export const RotatedWebhook = t.Composite([
  WebhookWithSecret,
  t.Object({ previous_secret_expires_at: Timestamp }),
])

export const CreateWebhook = t.Object({
  url: t.Optional(Url),
  endpoint: t.Optional(t.String({ maxLength: 2048, description: 'the URL under Resend’s name; send this or `url`' })),
  events: Events,
  disabled: t.Optional(t.Boolean({ description: 'default false' })),
  webhook_compat: t.Optional(t.Boolean({ description: 'default false' })),
})
export type CreateWebhook = Static<typeof CreateWebhook>

export const UpdateWebhook = t.Object({
  url: t.Optional(Url),
  endpoint: t.Optional(t.String({ maxLength: 2048 })),
  events: t.Optional(Events),
  disabled: t.Optional(t.Boolean()),
  status: t.Optional(Status),
  webhook_compat: t.Optional(t.Boolean()),
})
export type UpdateWebhook = Static<typeof UpdateWebhook>

export const TestWebhook = t.Object({
  type: t.Optional(EventKind),
})
export type TestWebhook = Static<typeof TestWebhook>

export const WebhookIdParams = t.Object({ id: Uuid })
export const WebhookEventParams = t.Object({ id: Uuid, event_id: Uuid })
export const WebhookList = t.Object({ object: t.Literal('list'), data: t.Array(Webhook), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListWebhooksQuery = Paging

const EventStatus = t.Union([t.Literal('success'), t.Literal('failed'), t.Literal('attempting'), t.Literal('pending')], {
  description: '`success` (a 2xx came back), `attempting` (failed, will retry), `failed` (the retry schedule is spent), `pending` (not tried yet)',
})
export const WebhookEvent = t.Object({
  object: t.Literal('webhook_event'),
  id: Uuid,
  webhook_id: Uuid,
  type: t.String(),
  created_at: Timestamp,
  status: EventStatus,
  attempt_count: t.Integer(),
  last_status_code: t.Nullable(t.Integer()),
  next_attempt_at: t.Nullable(Timestamp),
  delivered_at: t.Nullable(Timestamp),
})
export const WebhookAttempt = t.Object({
  id: Uuid,
  sent_at: Timestamp,
  http_status_code: t.Nullable(t.Integer({ description: 'null when no answer came' })),
  response: t.String({ description: 'the first 2 KB of the answer, or why there was none' }),
  duration_ms: t.Integer(),
  outcome: t.Union([t.Literal('succeeded'), t.Literal('failed')]),
})
export const WebhookEventDetail = t.Composite([
  WebhookEvent,
  t.Object({
    payload: t.Object({ type: t.String(), created_at: Timestamp, data: t.Record(t.String(), t.Unknown()) }, { description: 'the body every attempt sends, parsed' }),
    attempts: t.Array(WebhookAttempt, { description: 'every attempt, oldest first' }),
  }),
])
export const WebhookEventList = t.Object({ object: t.Literal('list'), data: t.Array(WebhookEvent), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListWebhookEventsQuery = t.Composite([
  Paging,
  t.Object({
    status: t.Optional(EventStatus),
    type: t.Optional(EventKind),
  }),
])
export type ListWebhookEventsQuery = Static<typeof ListWebhookEventsQuery>
