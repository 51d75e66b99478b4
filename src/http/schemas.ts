import { t } from 'elysia'
import { UUID_PATTERN } from '../lib/ids'

export const Uuid = t.String({ pattern: UUID_PATTERN, description: 'a UUID', error: 'must be a UUID' })
export const Timestamp = t.String({ format: 'date-time', description: 'ISO 8601' })

/** The seed's paging query: `limit` 1 to 500 and one of `cursor`, `after`, `before`. */
export const Paging = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, description: 'page size, 1 to 500; default 100' })),
  cursor: t.Optional(t.String({ maxLength: 1000 })),
  after: t.Optional(t.String({ maxLength: 400 })),
  before: t.Optional(t.String({ maxLength: 400 })),
})

export const Deleted = (object: string) => t.Object({ object: t.Literal(object), id: t.String(), deleted: t.Boolean() })
