import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

export const FieldType = t.Union([t.Literal('string'), t.Literal('number'), t.Literal('boolean'), t.Literal('date')])

export const EventName = t.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]*$',
  description: 'letters, digits, `_`, `.`, `:` and `-`, starting with a letter or digit; at most 100 characters; unique in the account; the `resend:` and `mailroom:` prefixes are reserved',
  error: 'must be 1 to 100 letters, digits, `_`, `.`, `:` or `-`, starting with a letter or digit',
})

const PayloadSchema = t.Nullable(
  t.Record(t.String({ minLength: 1, maxLength: 100 }), FieldType, {
    description: 'a flat map of payload key to type (`string`, `number`, `boolean`, `date`); occurrences are checked against it',
    maxProperties: 100,
  }),
)

export const Event = t.Object({
  object: t.Literal('event'),
  id: Uuid,
  name: t.String(),
  schema: PayloadSchema,
  created_at: Timestamp,
  updated_at: Timestamp,
})

export const CreateEvent = t.Object({ name: EventName, schema: t.Optional(PayloadSchema) })
export type CreateEvent = Static<typeof CreateEvent>

export const UpdateEvent = t.Object({
  name: t.Optional(EventName),
  schema: t.Optional(PayloadSchema),
})
export type UpdateEvent = Static<typeof UpdateEvent>

export const SendEvent = t.Object({
  event: t.String({ minLength: 1, maxLength: 100, description: 'the name (or id) of a defined event' }),
  contact_id: t.Optional(t.String({ maxLength: 400, description: 'the contact; send this or `email`' })),
  email: t.Optional(t.String({ maxLength: 320, description: "the contact's address; send this or `contact_id`" })),
  payload: t.Optional(t.Record(t.String({ maxLength: 100 }), t.Unknown(), { description: 'key/value pairs; keys the schema names must have its type' })),
})
export type SendEvent = Static<typeof SendEvent>

export const SentEvent = t.Object({
  object: t.Literal('event'),
  event: t.String({ description: 'the event name' }),
  id: Uuid,
  contact_id: Uuid,
  created_at: Timestamp,
})

export const EventRefParams = t.Object({ id: t.String({ minLength: 1, maxLength: 400, description: 'the event id or name' }) })
export const EventList = t.Object({ object: t.Literal('list'), data: t.Array(Event), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListEventsQuery = Paging
