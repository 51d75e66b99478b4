import { t, type Static } from 'elysia'
import { Timestamp, Uuid } from '../http/schemas'

export const PropertyType = t.Union([t.Literal('string'), t.Literal('number'), t.Literal('boolean'), t.Literal('date')], {
  description: 'what every value of the property must be; a `date` is an ISO 8601 date or date-time string',
})

export const PropertyKey = t.String({
  minLength: 1,
  maxLength: 50,
  pattern: '^[A-Za-z0-9_]+$',
  description: 'letters, digits and `_`, at most 50 characters; case-sensitive; not `email`, `first_name`, `last_name` or `unsubscribed`',
  error: 'must be 1 to 50 letters, digits or `_`',
})

export const FallbackValue = t.Union([t.String({ maxLength: 10_000 }), t.Number(), t.Boolean(), t.Null()], {
  description: 'the value used where a contact has none; must be of the property’s type',
})

export const ContactProperty = t.Object({
  object: t.Literal('contact_property'),
  id: Uuid,
  key: t.String(),
  type: PropertyType,
  fallback_value: FallbackValue,
  created_at: Timestamp,
  updated_at: Timestamp,
})

export const CreateContactProperty = t.Object({
  key: t.Optional(PropertyKey),
  type: t.Optional(PropertyType),
  fallback_value: t.Optional(FallbackValue),
})
export type CreateContactProperty = Static<typeof CreateContactProperty>

export const UpdateContactProperty = t.Object({
  fallback_value: t.Optional(FallbackValue),
  key: t.Optional(t.String({ maxLength: 50, description: 'accepted when it equals the stored key; a key cannot change' })),
  type: t.Optional(t.String({ maxLength: 20, description: 'accepted when it equals the stored type; a type cannot change' })),
})
export type UpdateContactProperty = Static<typeof UpdateContactProperty>

/** The seed gives the list no parameters: any query parameter is refused by name. */
export const ListContactPropertiesQuery = t.Object({})

export const ContactPropertyIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 100, description: 'the property id' }) })

export const ContactPropertyList = t.Object({
  object: t.Literal('list'),
  data: t.Array(ContactProperty),
  has_more: t.Boolean({ description: 'always false: the list holds every property of the account' }),
  next_cursor: t.Null(),
})
