import { Elysia } from 'elysia'
import type { ErrorCode } from '../errors/catalogue'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { Deleted } from '../http/schemas'
import { listClickedLinks, listRecipients } from './recipients'
import * as s from './schema'
import * as svc from './service'

const tag = 'broadcasts'

/** What a draft's fields are refused for. */
const FIELD_ERRORS: ErrorCode[] = ['invalid_parameter', 'invalid_from_address', 'not_found']

/** What starting (or scheduling) a broadcast is refused for, checked before anything changes. */
const SEND_ERRORS: ErrorCode[] = [
  'invalid_parameter',
  'content_refused',
  'link_domain_listed',
  'template_not_published',
  'template_variable_missing',
  'domain_scope_violation',
  'domain_not_verified',
  'domain_sending_disabled',
  'agent_budget_exceeded',
  'daily_quota_exceeded',
  'monthly_quota_exceeded',
  'plan_required',
  'plan_limit_reached',
  'overage_cap_reached',
  'approval_required',
]

const SENDING =
  'Recipients are resolved when sending starts: the segment’s members, less contacts who unsubscribed, contacts who said no to the topic (for an opt-in topic, also those who never said yes) and suppressed addresses; `recipient_count` states how many. ' +
  'Their emails (one per recipient, bulk priority, never ahead of transactional mail) are written in the background; each copy is personalised and carries List-Unsubscribe. ' +
  'A key’s broadcast to more recipients than `MAILROOM_APPROVAL_THRESHOLD` waits for a person’s approval (403 `approval_required`, naming the agent action).'

export const broadcastRoutes = (platform: Platform) =>
  new Elysia({ name: 'broadcasts', prefix: '/broadcasts' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createBroadcast(deps, actor, body)), {
      ...op({
        id: 'createBroadcast',
        summary: 'Create a broadcast for a segment, as a draft or to send now or later',
        description: `Resend’s request: \`segment_id\` (or \`audience_id\`), \`from\` and \`subject\` are required. With \`send: true\` it is sent in the same request (at \`scheduled_at\` if given), and a refusal leaves nothing behind. ${SENDING}`,
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['missing_required_field', ...FIELD_ERRORS, ...SEND_ERRORS],
      }),
      body: s.CreateBroadcast,
      response: { 201: s.Broadcast },
    })
    .get('', ({ deps, actor, query }) => svc.listBroadcasts(deps, actor, query), {
      ...op({ id: 'listBroadcasts', summary: 'List broadcasts, newest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListBroadcastsQuery,
      response: { 200: s.BroadcastList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getBroadcast(deps, actor, params.id), {
      ...op({ id: 'getBroadcast', summary: 'Get one broadcast with its status and counts', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.BroadcastParams,
      response: { 200: s.Broadcast },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateBroadcast(deps, actor, params.id, body), {
      ...op({
        id: 'updateBroadcast',
        summary: 'Edit a draft',
        description: 'Only drafts change. `null` clears `name`, `reply_to`, `preview_text`, `html`, `text`, `topic_id` and `template`.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: [...FIELD_ERRORS, 'broadcast_status_conflict'],
      }),
      params: s.BroadcastParams,
      body: s.UpdateBroadcast,
      response: { 200: s.Broadcast },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteBroadcast(deps, actor, params.id), {
      ...op({ id: 'deleteBroadcast', summary: 'Delete a draft', tag, auth: 'full', method: 'DELETE', errors: ['not_found', 'broadcast_status_conflict'] }),
      params: s.BroadcastParams,
      response: { 200: Deleted('broadcast') },
    })
    .post('/:id/send', ({ deps, actor, params, body }) => svc.sendBroadcast(deps, actor, params.id, body), {
      ...op({
        id: 'sendBroadcast',
        summary: 'Send a draft now or schedule it',
        description: `\`scheduled_at\` takes ISO 8601 or natural language (\`in 1 hour\`, \`tomorrow at 9am\`), up to 30 days ahead; a scheduled broadcast is checked now and again when its time comes. ${SENDING}`,
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['not_found', 'broadcast_status_conflict', ...SEND_ERRORS],
      }),
      params: s.BroadcastParams,
      body: s.SendBroadcast,
      response: { 200: s.Broadcast },
    })
    .post('/:id/cancel', ({ deps, actor, params }) => svc.cancelBroadcast(deps, actor, params.id), {
      ...op({
        id: 'cancelBroadcast',
        summary: 'Cancel a scheduled or sending broadcast',
        description: 'A scheduled broadcast never starts; a sending one writes no more emails and every message still waiting in the queue is canceled. Messages already handed to a mail server go.',
        tag,
        auth: 'full',
        method: 'POST',
        errors: ['not_found', 'broadcast_status_conflict'],
      }),
      params: s.BroadcastParams,
      response: { 200: s.Broadcast },
    })
    .post('/:id/duplicate', async ({ deps, actor, params, set }) => ((set.status = 201), svc.duplicateBroadcast(deps, actor, params.id)), {
      ...op({ id: 'duplicateBroadcast', summary: 'Copy a broadcast into a new draft', description: 'Any status can be copied; the copy is named "<name> (copy)".', tag, auth: 'full', method: 'POST', errors: ['not_found'] }),
      params: s.BroadcastParams,
      response: { 201: s.Broadcast },
    })
    .get('/:id/recipients', ({ deps, actor, params, query }) => listRecipients(deps, actor, params.id, query), {
      ...op({
        id: 'listBroadcastRecipients',
        summary: 'Recipients of a broadcast with an event of one type',
        description:
          '`opened` and `clicked` rows carry `count`, `clicked` rows `clicked_links`, `bounced` rows `bounce_type`; `unsubscribed` is always an empty list (an unsubscribe is recorded against the contact). A row’s `id` is an opaque cursor for `after`/`before`.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['not_found', 'invalid_parameter', 'invalid_cursor'],
      }),
      params: s.BroadcastParams,
      query: s.RecipientsQuery,
      response: { 200: s.RecipientList },
    })
    .get('/:id/clicked-links', ({ deps, actor, params, query }) => listClickedLinks(deps, actor, params.id, query), {
      ...op({ id: 'listBroadcastClickedLinks', summary: 'Links clicked in a broadcast, most clicked first', tag, auth: 'full', method: 'GET', errors: ['not_found', 'invalid_cursor'] }),
      params: s.BroadcastParams,
      query: s.ListBroadcastsQuery,
      response: { 200: s.BroadcastLinkList },
    })
