import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

export const ActionStatus = t.Union([t.Literal('pending'), t.Literal('approved'), t.Literal('rejected'), t.Literal('expired')])

export const AgentAction = t.Object({
  object: t.Literal('agent_action'),
  id: Uuid,
  status: ActionStatus,
  kind: t.Union([t.Literal('send_email'), t.Literal('send_batch'), t.Literal('reply'), t.Literal('send_broadcast'), t.Literal('raise_key_limits')], {
    description: 'what runs on approval, exactly as the key asked for it',
  }),
  reason: t.String({ description: '`batch_threshold`, `broadcast_threshold`, `loop_guard` or `key_limit_raise`' }),
  detail: t.String(),
  api_key_id: Uuid,
  request: t.Record(t.String(), t.Unknown(), { description: 'the held request, replayed through the same service on approval' }),
  result: t.Unknown({ description: 'what the approved action answered (e.g. the email ids); null until it ran' }),
  decided_by: t.Nullable(t.String({ description: 'the person who approved or rejected it' })),
  decided_at: t.Nullable(Timestamp),
  expires_at: Timestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
})

export const AgentActionList = t.Object({ object: t.Literal('list'), data: t.Array(AgentAction), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListAgentActionsQuery = t.Composite([Paging, t.Object({ status: t.Optional(ActionStatus) })])
export type ListAgentActionsQuery = Static<typeof ListAgentActionsQuery>
export const AgentActionParams = t.Object({ id: Uuid })
