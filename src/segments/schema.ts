import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'


const Days = t.Integer({ minimum: 1, maximum: 3650, description: 'a number of days, 1 to 3650, counted back from the moment the segment is read' })

export const PropertyRule = t.Object(
  {
    field: t.Literal('property'),
    key: t.String({ minLength: 1, maxLength: 100, description: 'a key defined with POST /contact-properties' }),
    op: t.Union(
      [
        t.Literal('eq'),
        t.Literal('ne'),
        t.Literal('gt'),
        t.Literal('gte'),
        t.Literal('lt'),
        t.Literal('lte'),
        t.Literal('contains'),
        t.Literal('exists'),
        t.Literal('not_exists'),
      ],
      {
        description:
          '`eq`, `ne` (any type); `gt`, `gte`, `lt`, `lte` (number and date); `contains` (string, case-insensitive); `exists`, `not_exists` (whether the contact holds a value of its own, any type)',
      },
    ),
    value: t.Optional(t.Union([t.String({ maxLength: 10_000 }), t.Number(), t.Boolean()], { description: 'of the property’s type; omitted for `exists` and `not_exists`' })),
  },
  { additionalProperties: false, description: 'compares a contact property; a contact without a value of its own compares the property’s `fallback_value`' },
)

export const TopicRule = t.Object(
  {
    field: t.Literal('topic'),
    topic_id: Uuid,
    subscribed: t.Boolean({ description: 'the answer wanted; a contact who never answered counts as the topic default' }),
  },
  { additionalProperties: false, description: 'a contact’s answer for a topic' },
)

export const EngagementRule = t.Object(
  {
    field: t.Literal('engagement'),
    event: t.Union([t.Literal('opened'), t.Literal('clicked')]),
    within_days: Days,
    negate: t.Optional(t.Boolean({ description: 'true selects contacts who did NOT do it in the window' })),
  },
  { additionalProperties: false, description: 'whether the contact’s address opened or clicked any email in the last `within_days` days' },
)

export const CreatedAtRule = t.Object(
  {
    field: t.Literal('created_at'),
    op: t.Union([t.Literal('before'), t.Literal('after'), t.Literal('within_days')]),
    value: t.Union([t.String({ maxLength: 40 }), t.Integer()], { description: 'an ISO 8601 date or date-time for `before` and `after`; a number of days (1 to 3650) for `within_days`' }),
  },
  { additionalProperties: false, description: 'when the contact was created' },
)

export const UnsubscribedRule = t.Object(
  { field: t.Literal('unsubscribed'), value: t.Boolean() },
  { additionalProperties: false, description: 'whether the contact unsubscribed from every broadcast' },
)

export const EmailRule = t.Object(
  {
    field: t.Literal('email'),
    op: t.Union([t.Literal('eq'), t.Literal('ends_with'), t.Literal('contains')]),
    value: t.String({ minLength: 1, maxLength: 320, description: 'compared case-insensitively' }),
  },
  { additionalProperties: false, description: 'the contact’s address' },
)

export const Rule = t.Union([PropertyRule, TopicRule, EngagementRule, CreatedAtRule, UnsubscribedRule, EmailRule], {
  description: 'one condition, told apart by `field`',
  error: 'must be a rule: {field: property|topic|engagement|created_at|unsubscribed|email, …} with the fields of its kind',
})
export type Rule = Static<typeof Rule>
export type PropertyRule = Static<typeof PropertyRule>
export type PropertyOp = PropertyRule['op']

export const MAX_RULES = 50
const Rules = t.Array(Rule, {
  maxItems: MAX_RULES,
  description: `at most ${MAX_RULES} conditions; an empty list makes a static segment (members are added one by one), any condition makes a rule segment (members are the contacts matching, computed when read)`,
})
export const Match = t.Union([t.Literal('all'), t.Literal('any')], { description: '`all`: a member meets every rule; `any`: at least one' })
export type Match = Static<typeof Match>

const Name = t.String({ minLength: 1, maxLength: 256 })

export const Segment = t.Object({
  object: t.Literal('segment'),
  id: Uuid,
  name: t.String(),
  type: t.Union([t.Literal('static'), t.Literal('rules')], { description: '`static`: members are added one by one; `rules`: members are the contacts matching `rules`' }),
  match: Match,
  rules: t.Array(Rule),
  created_at: Timestamp,
  updated_at: Timestamp,
})

export const CreateSegment = t.Object({
  name: Name,
  rules: t.Optional(Rules),
  match: t.Optional(Match),
})
export type CreateSegment = Static<typeof CreateSegment>

/** Fields left out stay as they are. */
export const UpdateSegment = t.Partial(CreateSegment)
export type UpdateSegment = Static<typeof UpdateSegment>

export const SegmentIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 400, description: 'segment id' }) })
export const SegmentList = t.Object({ object: t.Literal('list'), data: t.Array(Segment), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListSegmentsQuery = t.Composite([
  Paging,
  t.Object({
    since: t.Optional(t.String({ maxLength: 40, description: 'created at or after: ISO 8601 date or date-time' })),
    until: t.Optional(t.String({ maxLength: 40, description: 'created at or before: ISO 8601 date (the whole day) or date-time' })),
  }),
])
export type ListSegmentsQuery = Static<typeof ListSegmentsQuery>

/** Resend's audience: a segment under its older name. */
export const Audience = t.Object({ object: t.Literal('audience'), id: Uuid, name: t.String(), created_at: Timestamp })
export const CreateAudience = t.Object({ name: Name })
export type CreateAudience = Static<typeof CreateAudience>
export const AudienceList = t.Object({ object: t.Literal('list'), data: t.Array(Audience), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
