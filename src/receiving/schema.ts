import { t, type Static } from 'elysia'
import { SendAttachment, TagInput } from '../emails/schema'
import { Paging, Timestamp, Uuid } from '../http/schemas'

const Addresses = t.Array(t.String())

export const InboundAttachment = t.Object({
  object: t.Literal('attachment'),
  id: Uuid,
  filename: t.String(),
  size: t.Integer(),
  content_type: t.String(),
  content_id: t.Nullable(t.String()),
  content_disposition: t.Union([t.Literal('inline'), t.Literal('attachment')]),
  download_url: t.String({ description: 'this route with `?download=1`; needs the same API key' }),
  expires_at: t.Nullable(Timestamp),
})

const AttachmentRef = t.Omit(InboundAttachment, ['object', 'download_url', 'expires_at'])

export const Authentication = t.Object(
  {
    spf: t.Nullable(t.Object({ result: t.String(), domain: t.Nullable(t.String()) })),
    dkim: t.Array(t.Object({ result: t.String(), domain: t.Nullable(t.String()), selector: t.Nullable(t.String()) })),
    dmarc: t.Nullable(t.Object({ result: t.String(), domain: t.Nullable(t.String()), policy: t.Nullable(t.String()) })),
    header: t.Nullable(t.String({ description: 'the Authentication-Results value (RFC 8601)' })),
    error: t.Optional(t.String({ description: 'why the checks could not finish (DNS unreachable, timeout)' })),
  },
  { description: 'SPF, DKIM and DMARC results from mailauth, taken when the message arrived' },
)

const SummaryFields = {
  object: t.Literal('email'),
  id: Uuid,
  to: Addresses,
  from: t.String(),
  created_at: Timestamp,
  subject: t.String(),
  bcc: t.Nullable(Addresses),
  cc: t.Nullable(Addresses),
  reply_to: t.Nullable(Addresses),
  received_for: Addresses,
  message_id: t.String({ description: 'with its angle brackets' }),
  in_reply_to: t.Nullable(t.String()),
  thread_id: Uuid,
  size: t.Integer({ description: 'bytes as received' }),
  attachments: t.Array(AttachmentRef),
}

export const InboundSummary = t.Object(SummaryFields)
export const InboundEmail = t.Object({
  ...SummaryFields,
  html: t.Nullable(t.String()),
  text: t.Nullable(t.String()),
  headers: t.Record(t.String(), t.String()),
  references: t.Array(t.String()),
  authentication: Authentication,
  raw: t.Object({ download_url: t.String({ description: 'GET /emails/receiving/{id}/raw; needs the same API key' }), expires_at: t.Nullable(Timestamp) }),
})

export const InboundList = t.Object({ object: t.Literal('list'), data: t.Array(InboundSummary), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const InboundAttachmentList = t.Object({ object: t.Literal('list'), data: t.Array(InboundAttachment), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

export const ListInboundQuery = t.Composite([
  Paging,
  t.Object({
    to: t.Optional(t.String({ minLength: 1, maxLength: 320, description: 'a recipient: the envelope recipient or an address in To or Cc' })),
    from: t.Optional(t.String({ minLength: 1, maxLength: 320, description: 'the sender address, or a domain (`example.com` or `@example.com`)' })),
    since: t.Optional(t.String({ maxLength: 40, description: 'received at or after: ISO 8601 date or date-time' })),
    until: t.Optional(t.String({ maxLength: 40, description: 'received at or before: ISO 8601 date (the whole day) or date-time' })),
  }),
])
export type ListInboundQuery = Static<typeof ListInboundQuery>

export const InboundParams = t.Object({ id: Uuid })
export const InboundAttachmentParams = t.Object({ id: Uuid, aid: Uuid })
export const DownloadQuery = t.Object({ download: t.Optional(t.Union([t.Literal('1'), t.Literal('true'), t.Literal('0'), t.Literal('false')])) })
export const GetInboundQuery = t.Object({
  html_format: t.Optional(t.Union([t.Literal('cid'), t.Literal('data_uri')], { description: 'Resend SDK: `cid` leaves `cid:` references (default); `data_uri` inlines the parts' })),
})

const ThreadFields = {
  object: t.Literal('thread'),
  id: Uuid,
  subject: t.String(),
  message_count: t.Integer(),
  created_at: Timestamp,
  last_message_at: Timestamp,
}
export const ThreadSummary = t.Object(ThreadFields)
export const ThreadMessage = t.Object({
  direction: t.Union([t.Literal('inbound'), t.Literal('outbound')]),
  id: Uuid,
  from: t.String(),
  to: Addresses,
  subject: t.String(),
  message_id: t.String({ description: 'with its angle brackets' }),
  in_reply_to: t.Nullable(t.String()),
  created_at: Timestamp,
  last_event: t.Nullable(t.String({ description: 'outbound: the email’s last event; inbound: `received`' })),
})
export const Thread = t.Object({ ...ThreadFields, messages: t.Array(ThreadMessage) })
export const ThreadList = t.Object({ object: t.Literal('list'), data: t.Array(ThreadSummary), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListThreadsQuery = Paging
export type ListThreadsQuery = Static<typeof ListThreadsQuery>

export const Reply = t.Object(
  {
    from: t.Optional(t.String({ maxLength: 1000, description: 'defaults to the address the message was sent to (its first envelope recipient), with the name it was addressed by' })),
    to: t.Optional(t.Union([t.String(), t.Array(t.String(), { maxItems: 50 })], { description: 'defaults to the message’s Reply-To, else its From' })),
    cc: t.Optional(t.Nullable(t.Union([t.String(), t.Array(t.String(), { maxItems: 50 })]))),
    bcc: t.Optional(t.Nullable(t.Union([t.String(), t.Array(t.String(), { maxItems: 50 })]))),
    reply_to: t.Optional(t.Nullable(t.Union([t.String(), t.Array(t.String(), { maxItems: 50 })]))),
    subject: t.Optional(t.String({ maxLength: 1000, description: 'defaults to `Re: ` and the original subject' })),
    html: t.Optional(t.Nullable(t.String())),
    text: t.Optional(t.Nullable(t.String())),
    headers: t.Optional(t.Nullable(t.Record(t.String(), t.String()))),
    attachments: t.Optional(t.Nullable(t.Array(SendAttachment, { maxItems: 100 }))),
    tags: t.Optional(t.Nullable(t.Array(TagInput, { maxItems: 50 }))),
    scheduled_at: t.Optional(t.Nullable(t.String({ maxLength: 200 }))),
    click_tracking: t.Optional(t.Boolean()),
  },
  { description: 'A send (POST /emails) whose threading headers, recipient, sender and subject default from the message replied to.' },
)
export type Reply = Static<typeof Reply>
export const Replied = t.Object({ object: t.Literal('email'), id: Uuid, thread_id: Uuid, in_reply_to: t.String(), references: t.Array(t.String()) })
