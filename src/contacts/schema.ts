import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'
import { Subscription } from '../topics/schema'

/** A plain address: something@domain.tld, no spaces, at most 320 characters. */
export const Email = t.String({
  minLength: 3,
  maxLength: 320,
  pattern: '^[^\\s@<>,;"]+@[^\\s@<>,;"]+\\.[^\\s@<>,;".]{2,}$',
  description: 'an e-mail address; stored lower-case',
  error: 'must be an e-mail address like name@example.com',
})

const Name = t.String({ maxLength: 256 })
const PropertyValue = t.Union([t.String({ maxLength: 10_000 }), t.Number(), t.Boolean(), t.Null()])
export const Properties = t.Record(t.String({ minLength: 1, maxLength: 100 }), PropertyValue, { description: 'custom properties: string, number, boolean or null values' })

export const Contact = t.Object({
  object: t.Literal('contact'),
  id: Uuid,
  email: t.String(),
  first_name: t.Nullable(t.String()),
  last_name: t.Nullable(t.String()),
  unsubscribed: t.Boolean({ description: 'unsubscribed from every broadcast' }),
  properties: t.Record(t.String(), PropertyValue),
  created_at: Timestamp,
  updated_at: Timestamp,
})

/**
 * One answer. The seed's form is `{topic_id, subscribed}`; Resend's is
 * `{id, subscription}`. Either name of each half is accepted.
 */
export const TopicAnswerInput = t.Object(
  {
    topic_id: t.Optional(Uuid),
    id: t.Optional(Uuid),
    subscribed: t.Optional(t.Boolean()),
    subscription: t.Optional(Subscription),
  },
  // Also keeps a non-object item from passing as `{}`: every field here is optional.
  { minProperties: 1, error: 'must be an answer object: {topic_id, subscribed} or {id, subscription}' },
)
export type TopicAnswerInput = Static<typeof TopicAnswerInput>
const Answers = t.Array(TopicAnswerInput, { maxItems: 1000 })

const SegmentRef = t.Union([t.String({ maxLength: 400 }), t.Object({ id: t.String({ maxLength: 400 }) })])

export const CreateContact = t.Object({
  email: t.Optional(Email),
  first_name: t.Optional(t.Nullable(Name)),
  last_name: t.Optional(t.Nullable(Name)),
  unsubscribed: t.Optional(t.Boolean()),
  properties: t.Optional(Properties),
  topics: t.Optional(Answers),
  segments: t.Optional(t.Array(SegmentRef, { maxItems: 1000, description: 'accepted (ids or `{id}` objects) and not yet acted on' })),
  audience_id: t.Optional(t.String({ maxLength: 400, description: 'legacy; accepted and not yet acted on' })),
})
export type CreateContact = Static<typeof CreateContact>

export const UpdateContact = t.Object({
  email: t.Optional(Email),
  first_name: t.Optional(t.Nullable(Name)),
  last_name: t.Optional(t.Nullable(Name)),
  unsubscribed: t.Optional(t.Boolean()),
  properties: t.Optional(t.Record(t.String({ minLength: 1, maxLength: 100 }), PropertyValue, { description: 'merged into the stored properties; a null value removes that key' })),
})
export type UpdateContact = Static<typeof UpdateContact>

/** `{id}` in a contact path: the contact id or its e-mail address (URL-encoded), 1 to 320 characters. */
export const ContactRefParams = t.Object({ id: t.String({ minLength: 1, maxLength: 320, description: 'contact id or e-mail address' }) })

export const DeletedContact = t.Object({
  object: t.Literal('contact'),
  id: t.String(),
  contact: t.String({ description: 'the id or address as given in the path (Resend’s field)' }),
  deleted: t.Boolean(),
})

export const ContactTopic = t.Object({
  object: t.Literal('contact_topic'),
  id: Uuid,
  topic_id: Uuid,
  name: t.String(),
  description: t.String(),
  subscribed: t.Boolean(),
  subscription: Subscription,
  is_default: t.Boolean({ description: 'true when the contact never answered and the value is the topic default' }),
})

export const ContactTopicList = t.Object({
  object: t.Literal('list'),
  data: t.Array(ContactTopic),
  has_more: t.Boolean(),
  next_cursor: t.Nullable(t.String()),
})
export const ListContactTopicsQuery = Paging

/** The body as validated; a bare array (Resend's SDK) is wrapped into `{topics}` before validation. */
export const UpdateContactTopics = t.Object(
  { topics: t.Optional(Answers) },
  { description: '`{topics: [{topic_id, subscribed}]}` or `{topics: [{id, subscription}]}`; a bare array of either is accepted as `topics`' },
)
export type UpdateContactTopics = Static<typeof UpdateContactTopics>

export const RecordedAnswer = t.Object({
  id: Uuid,
  topic_id: Uuid,
  subscribed: t.Boolean(),
  subscription: Subscription,
})

export const ContactTopicsUpdated = t.Composite([
  ContactTopicList,
  t.Object({ contact_id: t.String(), topics: t.Array(RecordedAnswer, { description: 'the answers this call recorded' }) }),
])
