import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

export const Subscription = t.Union([t.Literal('opt_in'), t.Literal('opt_out')], {
  description: '`opt_in`: contacts are out until they say yes; `opt_out`: contacts are in until they say no.',
})
export const Visibility = t.Union([t.Literal('public'), t.Literal('private')], {
  description: '`public` topics show to every contact on the preference page; `private` ones only to contacts who opted in.',
})

export const TopicName = t.String({ minLength: 1, maxLength: 50, description: 'unique in the account (compared case-insensitively); at most 50 characters' })
const Description = t.String({ maxLength: 200, description: 'at most 200 characters' })

export const Topic = t.Object({
  object: t.Literal('topic'),
  id: Uuid,
  name: t.String(),
  description: t.String({ description: 'empty when none was given' }),
  default_subscribed: t.Boolean({ description: 'what a contact who never answered reports; false makes the topic opt-in (silence means no)' }),
  default_subscription: Subscription,
  visibility: Visibility,
  created_at: Timestamp,
  updated_at: Timestamp,
})

export const CreateTopic = t.Object({
  name: TopicName,
  default_subscription: t.Optional(Subscription),
  default_subscribed: t.Optional(t.Boolean({ description: 'the same default as a boolean; send this or `default_subscription`' })),
  description: t.Optional(t.Nullable(Description)),
  visibility: t.Optional(Visibility),
})
export type CreateTopic = Static<typeof CreateTopic>

export const UpdateTopic = t.Object({
  id: t.Optional(t.String({ maxLength: 400, description: 'ignored when it equals the path id (Resend’s SDK sends it); any other value is refused' })),
  name: t.Optional(TopicName),
  description: t.Optional(t.Nullable(Description)),
  visibility: t.Optional(Visibility),
  default_subscription: t.Optional(Subscription),
  default_subscribed: t.Optional(t.Boolean()),
})
export type UpdateTopic = Static<typeof UpdateTopic>

export const TopicIdParams = t.Object({ id: Uuid })
export const TopicList = t.Object({ object: t.Literal('list'), data: t.Array(Topic), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListTopicsQuery = Paging
