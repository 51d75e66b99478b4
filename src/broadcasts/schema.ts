import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'
import { VariableValues } from '../templates/schema'

const Status = t.Union([t.Literal('draft'), t.Literal('scheduled'), t.Literal('queued'), t.Literal('sending'), t.Literal('sent'), t.Literal('canceled')], {
  description:
    '`draft` (editable); `scheduled` (waits for `scheduled_at`); `queued` (sending started: recipients resolved, their emails being enqueued); `sending` (every email enqueued, some still waiting to leave); `sent`; `canceled`',
})

const ReplyTo = t.Union([t.String({ maxLength: 1000 }), t.Array(t.String({ maxLength: 1000 }), { maxItems: 50 })], {
  description: '`a@b.com` or `Name <a@b.com>`, one or a list of at most 50',
})

const TemplateRef = t.Object(
  { id: t.String({ minLength: 1, maxLength: 100, description: 'the template’s id or alias' }), variables: t.Optional(VariableValues) },
  { description: 'send the published version of a template (rendered with `variables` when sending starts) instead of `html` and `text`' },
)

const ContentFields = {
  name: t.Optional(t.Nullable(t.String({ maxLength: 200, description: 'for you; recipients never see it' }))),
  segment_id: t.Optional(t.String({ maxLength: 100, description: 'the segment it goes to; required on create' })),
  audience_id: t.Optional(t.String({ maxLength: 100, description: 'Resend’s older name for `segment_id`' })),
  from: t.Optional(t.String({ maxLength: 1000, description: '`a@b.com` or `Name <a@b.com>`; required on create' })),
  subject: t.Optional(t.String({ maxLength: 998, description: 'required on create; contact variables allowed (`{{{FIRST_NAME|there}}}`)' })),
  reply_to: t.Optional(t.Nullable(ReplyTo)),
  preview_text: t.Optional(t.Nullable(t.String({ maxLength: 500, description: 'the line inboxes show after the subject (hidden at the top of the HTML)' }))),
  html: t.Optional(
    t.Nullable(
      t.String({
        description:
          'contact variables `{{{FIRST_NAME}}}`, `{{{LAST_NAME}}}`, `{{{EMAIL}}}`, a contact property `{{{key}}}` (or `{{{contact.key}}}`), each with an optional fallback `{{{FIRST_NAME|there}}}`, and `{{{RESEND_UNSUBSCRIBE_URL}}}`',
      }),
    ),
  ),
  text: t.Optional(t.Nullable(t.String({ description: 'the plain-text version; the same variables as `html`' }))),
  topic_id: t.Optional(t.Nullable(t.String({ maxLength: 100, description: 'the topic it goes under: contacts who said no (or, for an opt-in topic, never said yes) are left out' }))),
  template: t.Optional(t.Nullable(TemplateRef)),
}

export const CreateBroadcast = t.Object({
  ...ContentFields,
  send: t.Optional(t.Boolean({ description: 'send now (or at `scheduled_at`) instead of keeping a draft' })),
  scheduled_at: t.Optional(t.Nullable(t.String({ maxLength: 200, description: 'with `send: true`: ISO 8601 or natural language (`in 1 hour`, `tomorrow at 9am`), up to 30 days ahead' }))),
})
export type CreateBroadcast = Static<typeof CreateBroadcast>

export const UpdateBroadcast = t.Object(ContentFields)
export type UpdateBroadcast = Static<typeof UpdateBroadcast>

export const SendBroadcast = t.Object({
  scheduled_at: t.Optional(t.Nullable(t.String({ maxLength: 200, description: 'ISO 8601 or natural language (`in 1 hour`, `tomorrow at 9am`), up to 30 days ahead; left out, sending starts now' }))),
})
export type SendBroadcast = Static<typeof SendBroadcast>

const Counts = t.Object(
  {
    enqueued: t.Integer({ description: 'emails written so far, one per recipient' }),
    sent: t.Integer(),
    delivered: t.Integer(),
    delivery_delayed: t.Integer(),
    bounced: t.Integer(),
    complained: t.Integer(),
    failed: t.Integer(),
    suppressed: t.Integer({ description: 'members whose address is suppressed, and recipients refused at delivery' }),
    opened: t.Integer(),
    unique_opened: t.Integer(),
    clicked: t.Integer(),
    unique_clicked: t.Integer(),
    unsubscribed: t.Integer(),
    canceled: t.Integer({ description: 'messages a cancel stopped before they left' }),
  },
  { description: 'from the event record' },
)

const summaryFields = {
  id: Uuid,
  name: t.Nullable(t.String()),
  segment_id: t.String(),
  audience_id: t.String({ description: 'the same as `segment_id` (Resend’s older name)' }),
  status: Status,
  topic_id: t.Nullable(t.String()),
  created_at: Timestamp,
  scheduled_at: t.Nullable(Timestamp),
  sent_at: t.Nullable(Timestamp),
}

export const BroadcastSummary = t.Object(summaryFields)

export const Broadcast = t.Object({
  object: t.Literal('broadcast'),
  ...summaryFields,
  from: t.String(),
  subject: t.String(),
  reply_to: t.Nullable(t.Array(t.String())),
  preview_text: t.Nullable(t.String()),
  html: t.Nullable(t.String({ description: 'with a template: null until sending starts, then what the template rendered' })),
  text: t.Nullable(t.String()),
  template: t.Nullable(t.Object({ id: Uuid, variables: VariableValues })),
  updated_at: Timestamp,
  started_at: t.Nullable(Timestamp),
  canceled_at: t.Nullable(Timestamp),
  recipient_count: t.Nullable(
    t.Integer({
      description: 'recipients after leaving out unsubscribed contacts, topic refusals and suppressed addresses: counted when sending starts (an estimate while scheduled), exact once every email is enqueued',
    }),
  ),
  estimated_recipient_count: t.Optional(
    t.Nullable(t.Integer({ description: 'a draft read by id: how many it would go to if sent now (the same rules as `recipient_count`), so the count is known before sending; null for other states' })),
  ),
  counts: Counts,
  error: t.Nullable(t.Object({ code: t.String(), message: t.String() }, { description: 'why a scheduled broadcast could not start (it was canceled)' })),
})

export const BroadcastParams = t.Object({ id: Uuid })
export const BroadcastList = t.Object({ object: t.Literal('list'), data: t.Array(BroadcastSummary), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListBroadcastsQuery = Paging

export const RecipientType = t.Union([
  t.Literal('sent'),
  t.Literal('delivered'),
  t.Literal('opened'),
  t.Literal('clicked'),
  t.Literal('bounced'),
  t.Literal('complained'),
  t.Literal('unsubscribed'),
  t.Literal('suppressed'),
])
export type RecipientType = Static<typeof RecipientType>
export const BounceType = t.Union([t.Literal('permanent'), t.Literal('transient'), t.Literal('undetermined')])
export type BounceType = Static<typeof BounceType>

export const RecipientsQuery = t.Object({
  type: RecipientType,
  email: t.Optional(t.String({ maxLength: 320, description: 'only this address' })),
  bounce_type: t.Optional(BounceType),
  limit: Paging.properties.limit,
  after: t.Optional(t.String({ maxLength: 1000, description: 'a row’s `id`: the rows after it' })),
  before: t.Optional(t.String({ maxLength: 1000, description: 'a row’s `id`: the rows before it' })),
})
export type RecipientsQuery = Static<typeof RecipientsQuery>

const ClickedLink = t.Object({ url: t.String(), clicks: t.Integer() })

export const Recipient = t.Object({
  id: t.String({ description: 'an opaque paging cursor for the row (for `after` and `before`); it identifies nothing else' }),
  email: t.String(),
  contact_id: t.Nullable(t.String({ description: 'null when the address no longer maps to a contact' })),
  count: t.Optional(t.Integer({ description: 'opened and clicked rows: how many times' })),
  clicked_links: t.Optional(t.Array(ClickedLink, { description: 'clicked rows: each link and how often this recipient clicked it' })),
  bounce_type: t.Optional(BounceType),
})
export const RecipientList = t.Object({ object: t.Literal('list'), data: t.Array(Recipient), has_more: t.Boolean() })

export const BroadcastLink = t.Object({
  id: t.String({ description: 'an opaque paging cursor for the row; it identifies nothing else' }),
  url: t.String(),
  clicks: t.Integer(),
  unique_clicks: t.Integer({ description: 'recipients who clicked it' }),
})
export const BroadcastLinkList = t.Object({ object: t.Literal('list'), data: t.Array(BroadcastLink), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
