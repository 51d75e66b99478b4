import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'
import { VariableValues } from '../templates/schema'

/** One address or a list of them, as Resend takes `to`, `cc`, `bcc` and `reply_to`. */
const Addresses = (what: string, max: number) =>
  t.Union([t.String({ maxLength: 1000 }), t.Array(t.String({ maxLength: 1000 }), { maxItems: max })], {
    description: `${what}: \`a@b.com\` or \`Name <a@b.com>\`, one or a list of at most ${max}`,
  })

export const SendAttachment = t.Object({
  content: t.Optional(t.Nullable(t.String({ description: 'the file, base64' }))),
  path: t.Optional(t.Nullable(t.String({ maxLength: 4000, description: 'an http(s) URL fetched when the email is accepted (10 s, within the 40 MB total)' }))),
  filename: t.Optional(t.Nullable(t.String({ maxLength: 255 }))),
  content_type: t.Optional(t.Nullable(t.String({ maxLength: 255, description: 'derived from the filename when left out' }))),
  content_id: t.Optional(t.Nullable(t.String({ maxLength: 255, description: 'makes the attachment inline, referenced from the HTML as `cid:<content_id>`' }))),
})
export type SendAttachment = Static<typeof SendAttachment>

export const TagInput = t.Object({
  name: t.String({ description: 'ASCII letters, digits, `_` and `-`, at most 256' }),
  value: t.String({ description: 'ASCII letters, digits, `_` and `-`, at most 256' }),
})

/**
 * Resend's send request. `from`, `to` and `subject` are checked by the service, so
 * a missing one answers `missing_required_field` naming it, as Resend does.
 */
export const SendEmail = t.Object({
  from: t.Optional(t.String({ maxLength: 1000, description: '`a@b.com` or `Name <a@b.com>`; required' })),
  to: t.Optional(Addresses('recipients; required', 50)),
  subject: t.Optional(t.String({ maxLength: 998, description: 'required' })),
  cc: t.Optional(t.Nullable(Addresses('copy recipients', 50))),
  bcc: t.Optional(t.Nullable(Addresses('blind copy recipients', 50))),
  reply_to: t.Optional(t.Nullable(Addresses('reply-to addresses', 50))),
  html: t.Optional(t.Nullable(t.String())),
  text: t.Optional(t.Nullable(t.String())),
  template: t.Optional(
    t.Nullable(
      t.Object(
        { id: t.String({ minLength: 1, maxLength: 100, description: 'the template’s id or alias' }), variables: t.Optional(VariableValues) },
        { description: 'send the published version of a template: not with `html` or `text`; `from`, `subject` and `reply_to` given here win over the template’s' },
      ),
    ),
  ),
  headers: t.Optional(t.Nullable(t.Record(t.String(), t.String(), { description: 'extra headers; headers the service sets itself are refused (`header_replaced`)' }))),
  attachments: t.Optional(t.Nullable(t.Array(SendAttachment, { maxItems: 100 }))),
  tags: t.Optional(t.Nullable(t.Array(TagInput, { maxItems: 50 }))),
  topic_id: t.Optional(t.Nullable(t.String({ maxLength: 100 }))),
  scheduled_at: t.Optional(
    t.Nullable(t.String({ maxLength: 200, description: 'ISO 8601, or natural language such as `in 1 hour`, `tomorrow at 9am`, `Friday at 3pm ET`; up to 30 days ahead' })),
  ),
  open_tracking: t.Optional(t.Boolean({ description: 'only `false`: open tracking is refused on transactional mail' })),
  click_tracking: t.Optional(t.Boolean({ description: 'overrides the domain’s click tracking for this email' })),
})
export type SendEmail = Static<typeof SendEmail>

export const SendBatch = t.Array(SendEmail, { minItems: 1, maxItems: 100, description: 'up to 100 emails' })

export const Sent = t.Object({ object: t.Literal('email'), id: Uuid })
export const BatchSent = t.Object({
  data: t.Array(t.Object({ id: Uuid })),
  errors: t.Optional(t.Array(t.Object({ index: t.Integer(), message: t.String(), code: t.String() }), { description: 'permissive mode only: the items not sent' })),
})

export const Finding = t.Object({
  code: t.String({ description: 'a catalogue error code, or a lint-only code (`text_part_missing`, `subject_empty`)' }),
  severity: t.Union([t.Literal('error'), t.Literal('warning')], { description: '`error`: a send would be refused; `warning`: it would be accepted' }),
  field: t.Optional(t.String()),
  message: t.String(),
  fix: t.String(),
})
export const LintReport = t.Object({
  object: t.Literal('lint'),
  ok: t.Boolean({ description: 'no finding of severity error' }),
  findings: t.Array(Finding),
  sizes: t.Object({ html_bytes: t.Integer(), text_bytes: t.Integer(), attachments_bytes: t.Integer() }),
  links: t.Array(t.String(), { description: 'the http(s) links found in html and text' }),
})

const Count = t.Object({ limit: t.Nullable(t.Integer()), used: t.Integer(), remaining: t.Nullable(t.Integer()) })
export const PreflightReport = t.Object({
  object: t.Literal('preflight'),
  ok: t.Boolean({ description: 'a send of this body by this key would be accepted now' }),
  findings: t.Array(Finding),
  recipients: t.Integer({ description: 'distinct recipients: what the send would spend' }),
  simulator: t.Boolean({ description: 'every recipient is a simulator address' }),
  scheduled_at: t.Nullable(Timestamp),
  domain: t.Nullable(t.Object({ id: t.Nullable(t.String()), name: t.String(), status: t.Nullable(t.String()), sending_enabled: t.Boolean() })),
  budget: t.Nullable(t.Composite([Count, t.Object({ period: t.String(), resets_at: Timestamp })])),
  quota: t.Object({ daily: t.Nullable(Count), monthly: t.Nullable(Count) }),
  rate: t.Object({ limit: t.Integer(), remaining: t.Integer() }),
})

export const LastEvent = t.Union([
  t.Literal('queued'),
  t.Literal('scheduled'),
  t.Literal('sent'),
  t.Literal('delivered'),
  t.Literal('delivery_delayed'),
  t.Literal('bounced'),
  t.Literal('failed'),
  t.Literal('suppressed'),
  t.Literal('canceled'),
  t.Literal('complained'),
  t.Literal('opened'),
  t.Literal('clicked'),
  t.Literal('unsubscribed'),
  t.Literal('received'),
])
const Tag = t.Object({ name: t.String(), value: t.String() })

const EmailFields = {
  object: t.Literal('email'),
  id: Uuid,
  to: t.Array(t.String()),
  from: t.String(),
  created_at: Timestamp,
  subject: t.String(),
  bcc: t.Nullable(t.Array(t.String())),
  cc: t.Nullable(t.Array(t.String())),
  reply_to: t.Nullable(t.Array(t.String())),
  last_event: LastEvent,
  scheduled_at: t.Nullable(Timestamp),
  tags: t.Array(Tag),
  topic_id: t.Nullable(t.String()),
  message_id: t.String({ description: 'the Message-ID header, with its angle brackets' }),
  api_key_id: t.Nullable(t.String({ description: 'the key that sent it' })),
  simulator: t.Boolean({ description: 'every recipient was a simulator address' }),
}
export const EmailSummary = t.Object(EmailFields)
export const Email = t.Object({ ...EmailFields, html: t.Nullable(t.String()), text: t.Nullable(t.String()) })
export const EmailList = t.Object({ object: t.Literal('list'), data: t.Array(EmailSummary), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

const Filters = {
  status: t.Optional(LastEvent),
  from: t.Optional(t.String({ minLength: 1, maxLength: 320, description: 'the sender address, or a domain (`example.com` or `@example.com`)' })),
  to: t.Optional(t.String({ minLength: 1, maxLength: 320, description: 'a recipient (to, cc or bcc)' })),
  tag: t.Optional(t.String({ minLength: 1, maxLength: 520, description: '`name:value`, or `name` for any value' })),
  since: t.Optional(t.String({ maxLength: 40, description: 'created at or after: ISO 8601 date or date-time' })),
  until: t.Optional(t.String({ maxLength: 40, description: 'created at or before: ISO 8601 date (the whole day) or date-time' })),
  start_date: t.Optional(t.String({ maxLength: 40, description: 'the same as `since`' })),
  end_date: t.Optional(t.String({ maxLength: 40, description: 'the same as `until`' })),
}
export const ListEmailsQuery = t.Composite([Paging, t.Object(Filters)])
export type ListEmailsQuery = Static<typeof ListEmailsQuery>
export const ExportQuery = t.Object(Filters)
export type EmailFilters = Static<typeof ExportQuery>

export const EmailIdParams = t.Object({ id: Uuid })
export const AttachmentParams = t.Object({ id: Uuid, aid: Uuid })

export const Schedule = t.Object({
  scheduled_at: t.String({ minLength: 1, maxLength: 200, description: 'ISO 8601 or natural language, up to 30 days ahead' }),
})
export type Schedule = Static<typeof Schedule>
export const EmailRef = t.Object({ object: t.Literal('email'), id: Uuid })
export const Rescheduled = t.Object({ object: t.Literal('email'), id: Uuid, scheduled_at: Timestamp })

export const BulkCancel = t.Object(
  {
    ids: t.Optional(t.Array(Uuid, { minItems: 1, maxItems: 1000, uniqueItems: true })),
    scheduled_before: t.Optional(t.String({ maxLength: 40, description: 'ISO 8601: emails scheduled before this time' })),
    scheduled_after: t.Optional(t.String({ maxLength: 40, description: 'ISO 8601: emails scheduled after this time' })),
    tag: t.Optional(t.String({ minLength: 1, maxLength: 520, description: '`name:value`, or `name` for any value' })),
  },
  { description: '`ids`, a filter, or both (then both must match). At most 1000 emails per call.' },
)
export type BulkCancel = Static<typeof BulkCancel>
export const BulkCanceled = t.Object({
  object: t.Literal('bulk_cancel'),
  canceled: t.Integer(),
  skipped: t.Integer({ description: 'named ids that were not scheduled any more' }),
  not_found: t.Integer({ description: 'named ids that are not emails of this account' }),
  ids: t.Array(Uuid, { description: 'the emails canceled' }),
  has_more: t.Boolean({ description: 'a filter matched more than 1000 emails: call again' }),
})

export const EmailEvent = t.Object({
  object: t.Literal('email_event'),
  id: Uuid,
  email_id: Uuid,
  type: LastEvent,
  recipient: t.Nullable(t.String()),
  data: t.Record(t.String(), t.Unknown()),
  created_at: Timestamp,
})
export const EmailEventList = t.Object({ object: t.Literal('list'), data: t.Array(EmailEvent), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const EventsQuery = Paging

const Attempt = t.Object({
  started_at: Timestamp,
  duration_ms: t.Integer(),
  host: t.Nullable(t.String()),
  smtp_code: t.Nullable(t.Integer()),
  enhanced_code: t.Nullable(t.String()),
  response: t.Nullable(t.String()),
  outcome: t.String(),
  worker: t.Nullable(t.String({ description: 'the delivery worker that made the attempt (host:pid:…, its instance first), telling instances on one database apart' })),
})
export const Explanation = t.Object({
  object: t.Literal('email_explanation'),
  id: Uuid,
  last_event: LastEvent,
  summary: t.String({ description: 'one sentence: why the email is where it is' }),
  accepted: t.Object({
    at: Timestamp,
    api_key_id: t.Nullable(t.String()),
    simulator: t.Boolean(),
    domain: t.Nullable(t.String()),
    checks: t.Array(t.Object({ name: t.String(), passed: t.Boolean(), detail: t.Optional(t.String()) })),
    warnings: t.Array(Finding),
    budget: t.Nullable(t.Record(t.String(), t.Unknown())),
    quota: t.Nullable(t.Record(t.String(), t.Unknown())),
  }),
  scheduled_at: t.Nullable(Timestamp),
  deliveries: t.Array(
    t.Object({
      id: Uuid,
      recipient: t.String(),
      kind: t.String(),
      state: t.String(),
      attempts: t.Integer(),
      next_attempt_at: t.Nullable(Timestamp),
      last_code: t.Nullable(t.Integer()),
      last_response: t.Nullable(t.String()),
      suppressed: t.Nullable(t.Object({ reason: t.String(), since: Timestamp, detail: t.Nullable(t.String()) })),
      history: t.Array(Attempt),
    }),
  ),
})

export const MimePart: any = t.Recursive((Self) =>
  t.Object({
    content_type: t.String(),
    headers: t.Array(t.Object({ name: t.String(), value: t.String() })),
    size: t.Integer({ description: 'bytes of the part as sent, headers included' }),
    body_size: t.Integer({ description: 'bytes of the encoded body' }),
    charset: t.Optional(t.String()),
    encoding: t.Optional(t.String()),
    disposition: t.Optional(t.String()),
    filename: t.Optional(t.String()),
    content_id: t.Optional(t.String()),
    parts: t.Optional(t.Array(Self)),
  }),
)
export const MimeTree = t.Object({ object: t.Literal('mime'), id: Uuid, size: t.Integer(), root: MimePart })

export const Attachment = t.Object({
  object: t.Literal('attachment'),
  id: Uuid,
  filename: t.String(),
  content_type: t.String(),
  content_id: t.Nullable(t.String()),
  content_disposition: t.Union([t.Literal('inline'), t.Literal('attachment')]),
  size: t.Integer(),
  download_url: t.String({ description: 'this route with `?download=1`; needs the same API key' }),
  expires_at: t.Nullable(Timestamp),
})
export const AttachmentList = t.Object({ object: t.Literal('list'), data: t.Array(Attachment), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const AttachmentQuery = t.Object({ download: t.Optional(t.Union([t.Literal('1'), t.Literal('true'), t.Literal('0'), t.Literal('false')])) })
