import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

const Slug = t.String({ minLength: 1, maxLength: 100, description: 'the answer’s slug, e.g. `dns-records`' })

export const AnswerSummary = t.Object({
  object: t.Literal('support_answer'),
  slug: t.String(),
  title: t.String(),
  summary: t.String({ description: 'the answer’s first paragraph' }),
  url: t.String({ description: 'this answer on this server (needs the same credential)' }),
  score: t.Nullable(t.Number({ description: 'search rank (BM25 over title and body); null when listed without `q`' })),
})

export const Answer = t.Object({
  object: t.Literal('support_answer'),
  slug: t.String(),
  title: t.String(),
  summary: t.String(),
  body: t.String({ description: 'markdown' }),
  url: t.String(),
  votes: t.Object({ helpful: t.Integer(), not_helpful: t.Integer() }, { description: 'counted votes from every account' }),
})

export const AnswerList = t.Object({ object: t.Literal('list'), data: t.Array(AnswerSummary), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

export const SearchAnswersQuery = t.Object({
  q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'words to look for in titles and bodies; the best match first' })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 50, description: 'at most this many answers; default all' })),
})

export const SlugParams = t.Object({ slug: Slug })
export const HelpfulBody = t.Object({ helpful: t.Boolean() })
export const HelpfulReply = t.Object({ ok: t.Boolean(), counted: t.Boolean({ description: 'false when this caller already voted on this answer today (UTC)' }) })

export const Attachment = t.Object({
  object: t.Literal('support_attachment'),
  id: Uuid,
  filename: t.String(),
  content_type: t.String({ description: 'read from the bytes, not taken from the upload' }),
  size: t.Integer({ description: 'bytes' }),
  created_at: Timestamp,
  expires_at: Timestamp,
  expired: t.Boolean({ description: 'past `expires_at`: the download answers `support_attachment_expired`' }),
  download_url: t.String(),
})

const Author = t.Object({ type: t.Union([t.Literal('key'), t.Literal('person')]), id: t.String() })

export const Message = t.Object({
  object: t.Literal('support_message'),
  id: Uuid,
  request_id: Uuid,
  kind: t.Union([t.Literal('opened'), t.Literal('reply'), t.Literal('attachments')]),
  body: t.String(),
  author: t.Nullable(Author),
  attachments: t.Array(Attachment),
  desk: t.Object(
    { forwarded: t.Boolean(), email_id: t.Nullable(t.String()), error: t.Nullable(t.String()) },
    { description: 'whether the message was mailed to the operator’s desk (MAILROOM_SUPPORT_EMAIL); without a desk it waits in the console' },
  ),
  created_at: Timestamp,
})

const requestFields = {
  object: t.Literal('support_request'),
  id: Uuid,
  subject: t.String(),
  status: t.Union([t.Literal('open'), t.Literal('closed'), t.Literal('merged')]),
  contact_email: t.Nullable(t.String({ description: 'where the desk answers: the person who opened it, else the account’s owner' })),
  merged_into: t.Nullable(Uuid),
  closed_at: t.Nullable(Timestamp),
  reopen_until: t.Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
}

export const Request = t.Object(requestFields)
export const RequestWithMessages = t.Object({ ...requestFields, messages: t.Array(Message) })
export const RequestList = t.Object({ object: t.Literal('list'), data: t.Array(Request), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

export const Draft = t.Object({
  object: t.Literal('support_draft'),
  subject: t.String(),
  answers: t.Array(AnswerSummary, { description: 'the published answers that match the request, best first' }),
  reply: t.String({ description: 'a reply drafted from those answers' }),
})

const Text = t.String({ minLength: 1, maxLength: 20_000 })

export const OpenRequest = t.Object({
  subject: t.String({ minLength: 1, maxLength: 200 }),
  message: Text,
  draft: t.Optional(t.Boolean({ description: 'true: open nothing; answer a draft made from the published answers that match (200 `support_draft`)' })),
})
export type OpenRequest = Static<typeof OpenRequest>

export const ReplyBody = t.Object({ message: Text })

export const AttachBody = t.Object({
  message: t.Optional(t.String({ maxLength: 20_000, description: 'a note with the files' })),
  files: t.Array(
    t.Object({
      filename: t.String({ minLength: 1, maxLength: 255 }),
      content_type: t.Optional(t.String({ maxLength: 255, description: 'checked against the bytes when given' })),
      content: t.String({ description: 'the file, base64' }),
    }),
    { minItems: 1, maxItems: 100 },
  ),
})
export type AttachBody = Static<typeof AttachBody>

export const MergeBody = t.Object({ source_id: t.String({ maxLength: 400, description: 'the request to fold into this one; it ends `merged`' }) })

export const RequestParams = t.Object({ id: t.String({ maxLength: 400 }) })
export const AttachmentParams = t.Object({ id: t.String({ maxLength: 400 }), aid: t.String({ maxLength: 400 }) })

export const ListRequestsQuery = t.Object({ ...Paging.properties, status: t.Optional(t.Union([t.Literal('open'), t.Literal('closed'), t.Literal('merged')])) })
export type ListRequestsQuery = Static<typeof ListRequestsQuery>
