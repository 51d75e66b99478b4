import { t, type Static } from 'elysia'
import { Paging, Timestamp } from '../http/schemas'

export const Reason = t.Union([t.Literal('bounce'), t.Literal('complaint'), t.Literal('unsubscribe'), t.Literal('manual')])

export const Suppression = t.Object({
  object: t.Literal('suppression'),
  id: t.String(),
  email: t.String(),
  reason: Reason,
  /** Resend's name for the reason. */
  origin: Reason,
  source_email_id: t.Nullable(t.String()),
  detail: t.Nullable(t.String()),
  clearable: t.Boolean({ description: 'a hard bounce can be cleared; an unsubscribe or complaint cannot' }),
  created_at: Timestamp,
})

export const CreateSuppression = t.Object({
  email: t.String({ minLength: 3, maxLength: 320, pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$', error: 'must be an e-mail address' }),
  detail: t.Optional(t.String({ maxLength: 500 })),
})
export type CreateSuppression = Static<typeof CreateSuppression>

export const ListSuppressionsQuery = t.Composite([
  Paging,
  t.Object({
    reason: t.Optional(Reason),
    origin: t.Optional(Reason),
    email: t.Optional(t.String({ maxLength: 320 })),
  }),
])
export type ListSuppressionsQuery = Static<typeof ListSuppressionsQuery>

export const SuppressionList = t.Object({ object: t.Literal('list'), data: t.Array(Suppression), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const SuppressionParams = t.Object({ id: t.String({ minLength: 1, maxLength: 320, description: 'a suppression id or the suppressed address' }) })
