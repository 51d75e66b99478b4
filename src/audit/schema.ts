import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

const Name = (what: string) => t.String({ minLength: 1, maxLength: 50, pattern: '^[a-z][a-z0-9_]*$', error: `must be ${what} in snake_case`, description: `${what}, singular snake_case` })
const Shape = t.Nullable(t.Record(t.String(), t.Unknown(), { description: 'the resource as the API answers it, secrets replaced by `[redacted]`; null before a create and after a delete' }))

export const AuditActor = t.Object({
  kind: t.Union([t.Literal('key'), t.Literal('session'), t.Literal('system')], { description: '`system`: the service itself (jobs, bounces, complaints, recipients’ unsubscribes)' }),
  key_id: t.Nullable(t.String({ description: 'the API key that made the change' })),
  person_id: t.Nullable(t.String({ description: 'the person whose console session made the change' })),
  session_id: t.Nullable(t.String({ description: 'that console session' })),
})

const summary = {
  object: t.Literal('audit_entry'),
  id: Uuid,
  resource: t.String({ description: 'api_key, key_limit, domain, topic, contact, suppression, webhook, …' }),
  resource_id: t.String(),
  action: t.String({ description: 'created, updated, deleted, rotated, verified, dkim_rotated, topics_updated, …' }),
  actor: AuditActor,
  created_at: Timestamp,
}
export const AuditSummary = t.Object(summary)
export const AuditEntry = t.Object({ ...summary, before: Shape, after: Shape })

export const AuditList = t.Object({ object: t.Literal('list'), data: t.Array(AuditSummary), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

export const ListAuditQuery = t.Composite([
  Paging,
  t.Object({
    resource: t.Optional(Name('a resource type')),
    resource_id: t.Optional(t.String({ minLength: 1, maxLength: 320 })),
    action: t.Optional(Name('an action')),
    actor: t.Optional(t.Union([t.Literal('key'), t.Literal('session'), t.Literal('system')])),
    key_id: t.Optional(Uuid),
    since: t.Optional(t.String({ maxLength: 40, description: 'at or after: ISO 8601 date or date-time' })),
    until: t.Optional(t.String({ maxLength: 40, description: 'at or before: ISO 8601 date (the whole day) or date-time' })),
  }),
])
export type ListAuditQuery = Static<typeof ListAuditQuery>

export const AuditIdParams = t.Object({ id: Uuid })
