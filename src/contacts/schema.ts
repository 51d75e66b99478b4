import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'
import { Subscription } from '../topics/schema'

/** A plain address: something@domain.tld, no spaces. */
export const EMAIL_PATTERN = '^[^\\s@<>,;"]+@[^\\s@<>,;"]+\\.[^\\s@<>,;".]{2,}$'

/** A plain address, at most 320 characters. */
export const Email = t.String({
  minLength: 3,
  maxLength: 320,
  pattern: EMAIL_PATTERN,
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
  segments: t.Optional(t.Array(SegmentRef, { maxItems: 100, description: 'segments to add the contact to: ids, or `{id}` objects as Resend’s SDK sends them' })),
  audience_id: t.Optional(t.String({ maxLength: 400, description: 'legacy: one more segment to add the contact to (an audience is a segment)' })),
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

/** `unsubscribed` and the created range filter; `segment_id` (or legacy `audience_id`) lists one segment's members. */
const ContactFilters = {
  segment_id: t.Optional(t.String({ minLength: 1, maxLength: 400, description: 'only members of this segment' })),
  audience_id: t.Optional(t.String({ minLength: 1, maxLength: 400, description: 'legacy name of `segment_id`' })),
  email: t.Optional(t.String({ minLength: 1, maxLength: 320, description: 'only the contact with this address (case-insensitive)' })),
  unsubscribed: t.Optional(t.Union([t.Literal('true'), t.Literal('false')], { description: 'only unsubscribed (`true`) or subscribed (`false`) contacts' })),
  since: t.Optional(t.String({ maxLength: 40, description: 'created at or after: ISO 8601 date or date-time' })),
  until: t.Optional(t.String({ maxLength: 40, description: 'created at or before: ISO 8601 date (the whole day) or date-time' })),
}
export const ListContactsQuery = t.Composite([Paging, t.Object(ContactFilters)])
export type ListContactsQuery = Static<typeof ListContactsQuery>
/** A segment's member list: the segment is in the path. */
export const SegmentMembersQuery = t.Composite([Paging, t.Object({ email: ContactFilters.email, unsubscribed: ContactFilters.unsubscribed, since: ContactFilters.since, until: ContactFilters.until })])
export type SegmentMembersQuery = Static<typeof SegmentMembersQuery>

export const ContactList = t.Object({ object: t.Literal('list'), data: t.Array(Contact), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

/** The body as validated; a bare array is wrapped into `{contacts}` before validation. */
export const ContactBatch = t.Object(
  // Elysia refuses unknown fields of the top-level object only: an item says so itself.
  { contacts: t.Optional(t.Array(t.Object(CreateContact.properties, { additionalProperties: false }), { minItems: 1, maxItems: 100 })) },
  { description: '`{contacts: [...]}` or a bare array of 1 to 100 contacts, each as POST /contacts takes it; `email` picks the contact to create or update' },
)
export type ContactBatch = Static<typeof ContactBatch>

export const BatchResult = t.Object({
  object: t.Literal('contact_batch'),
  data: t.Array(t.Composite([Contact, t.Object({ action: t.Union([t.Literal('created'), t.Literal('updated')]) })]), { description: 'one item per contact sent, in order' }),
  created: t.Integer(),
  updated: t.Integer(),
})

export const ContactSegmentParams = t.Object({
  id: ContactRefParams.properties.id,
  segmentId: t.String({ minLength: 1, maxLength: 400, description: 'the segment id' }),
})

export const ContactSegment = t.Object({
  object: t.Literal('segment'),
  id: t.String(),
  name: t.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
  added_at: t.Nullable(t.String({ description: 'when the contact was added to the static segment; null for a rule segment, whose members are whoever matches its rules' })),
})
export const ContactSegmentList = t.Object({ object: t.Literal('list'), data: t.Array(ContactSegment), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

export const ContactSegmentChange = t.Object({
  object: t.Literal('contact_segment'),
  contact_id: t.String(),
  segment_id: t.String(),
  added: t.Optional(t.Boolean({ description: 'false when the contact was already in the segment' })),
  deleted: t.Optional(t.Boolean()),
})

export const Resubscribe = t.Object({
  object: t.Literal('contact_resubscribe'),
  id: t.Nullable(t.String({ description: 'the pending request; null when nothing needs confirming' })),
  contact_id: t.String(),
  email: t.String(),
  status: t.Union([t.Literal('pending'), t.Literal('subscribed')], { description: '`pending`: the contact must open `confirm_url` and confirm; `subscribed`: the contact already receives mail' }),
  confirm_url: t.Nullable(t.String({ description: 'the page where the contact confirms; hand it to them (it is single-use and expires)' })),
  expires_at: t.Nullable(Timestamp),
})

export const SegmentIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 400, description: 'the segment id' }) })
export const AudienceParams = t.Object({ audienceId: t.String({ minLength: 1, maxLength: 400, description: 'the audience (segment) id' }) })
export const AudienceContactParams = t.Object({ audienceId: AudienceParams.properties.audienceId, id: ContactRefParams.properties.id })
