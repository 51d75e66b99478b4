import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import * as s from './schema'
import * as svc from './service'

const tag = 'agent-actions'

const DECIDE =
  'A decision reserved to a person signed in to the console with two-factor authentication; no API key may make it, not even for another key. ' +
  'An action left undecided past `expires_at` answers `approval_expired`; a decided one `agent_action_decided`.'

export const agentActionRoutes = (platform: Platform) =>
  new Elysia({ name: 'agent-actions', prefix: '/agent-actions' })
    .use(platform)
    .get('', ({ deps, actor, query }) => svc.listActions(deps, actor, query), {
      ...op({ id: 'listAgentActions', summary: 'Actions waiting for a person’s approval, and past decisions, newest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListAgentActionsQuery,
      response: { 200: s.AgentActionList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getAction(deps, actor, params.id), {
      ...op({ id: 'getAgentAction', summary: 'Get one agent action', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.AgentActionParams,
      response: { 200: s.AgentAction },
    })
    .post('/:id/approve', ({ deps, actor, params }) => svc.approveAction(deps, actor, params.id), {
      ...op({
        id: 'approveAgentAction',
        summary: 'Approve a held action; it runs at once, exactly once',
        description: `The held request is replayed through the same service as the key that asked, in the approval’s own transaction: if it is refused now (say the key’s budget was spent meanwhile), that refusal is the answer and the action stays pending. ${DECIDE}`,
        tag,
        auth: 'person',
        method: 'POST',
        errors: ['not_found', 'approval_expired', 'agent_action_decided'],
      }),
      params: s.AgentActionParams,
      response: { 200: s.AgentAction },
    })
    .post('/:id/reject', ({ deps, actor, params }) => svc.rejectAction(deps, actor, params.id), {
      ...op({ id: 'rejectAgentAction', summary: 'Reject a held action; it never runs', description: DECIDE, tag, auth: 'person', method: 'POST', errors: ['not_found', 'approval_expired', 'agent_action_decided'] }),
      params: s.AgentActionParams,
      response: { 200: s.AgentAction },
    })
