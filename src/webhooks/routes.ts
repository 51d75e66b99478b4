import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'webhooks'

export const webhookRoutes = (platform: Platform) =>
  new Elysia({ name: 'webhooks', prefix: '/webhooks' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createWebhook(deps, actor, body)), {
      ...op({
        id: 'createWebhook',
        summary: 'Create a webhook endpoint; its signing secret is shown once',
        description:
          'Takes `url` (or Resend’s `endpoint`) and `events`. Deliveries are signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`, `webhook-signature`); `webhook_compat` repeats the signature under the `svix-*` names. The URL must be https:// and resolve to public addresses only.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['missing_required_field', 'invalid_parameter', 'dns_unreachable', 'webhook_endpoint_limit_reached'],
      }),
      body: s.CreateWebhook,
      response: { 201: s.WebhookWithSecret },
    })
    .get('', ({ deps, actor, query }) => svc.listWebhooks(deps, actor, query), {
      ...op({ id: 'listWebhooks', summary: 'List webhook endpoints, newest first (never their secrets)', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListWebhooksQuery,
      response: { 200: s.WebhookList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getWebhook(deps, actor, params.id), {
      ...op({ id: 'getWebhook', summary: 'Get one webhook endpoint (never its secret)', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.WebhookIdParams,
      response: { 200: s.Webhook },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateWebhook(deps, actor, params.id, body), {
      ...op({
        id: 'updateWebhook',
        summary: 'Change a webhook endpoint’s URL, events, disabled flag or webhook_compat',
        description: 'Enabling an endpoint (also one the dispatcher disabled after 5 days of failures) sends its pending events again at once.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'invalid_parameter', 'dns_unreachable'],
      }),
      params: s.WebhookIdParams,
      body: s.UpdateWebhook,
      response: { 200: s.Webhook },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteWebhook(deps, actor, params.id), {
      ...op({ id: 'deleteWebhook', summary: 'Delete a webhook endpoint and its delivery log', tag, auth: 'full', method: 'DELETE', errors: ['not_found'] }),
      params: s.WebhookIdParams,
      response: { 200: Deleted('webhook') },
    })
    .post('/:id/signing-secret/rotate', ({ deps, actor, params }) => svc.rotateWebhookSecret(deps, actor, params.id), {
      ...op({
        id: 'rotateWebhookSigningSecret',
        summary: 'Issue a new signing secret, shown once; the old one signs beside it for 24 hours',
        tag,
        auth: 'full',
        method: 'POST',
        errors: ['not_found'],
      }),
      params: s.WebhookIdParams,
      response: { 200: s.RotatedWebhook },
    })
    .post('/:id/test', ({ deps, actor, params, body }) => svc.testWebhook(deps, actor, params.id, body), {
      ...op({
        id: 'testWebhook',
        summary: 'Send a signed sample event to the endpoint now and answer with its attempt',
        description: 'The sample goes out whether or not the endpoint takes its kind or is disabled; a failed test is logged and not retried.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['not_found'],
      }),
      params: s.WebhookIdParams,
      body: s.TestWebhook,
      response: { 200: s.WebhookEventDetail },
    })
    .get('/:id/events', ({ deps, actor, params, query }) => svc.listWebhookEvents(deps, actor, params.id, query), {
      ...op({ id: 'listWebhookEvents', summary: 'The delivery log: the endpoint’s events with their status, newest first', tag, auth: 'full', method: 'GET', errors: ['not_found', 'invalid_cursor'] }),
      params: s.WebhookIdParams,
      query: s.ListWebhookEventsQuery,
      response: { 200: s.WebhookEventList },
    })
    .get('/:id/events/:event_id', ({ deps, actor, params }) => svc.getWebhookEvent(deps, actor, params.id, params.event_id), {
      ...op({ id: 'getWebhookEvent', summary: 'One event with its payload and every attempt (status, response, duration)', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.WebhookEventParams,
      response: { 200: s.WebhookEventDetail },
    })
    .post('/:id/events/:event_id/replay', ({ deps, actor, params }) => svc.replayWebhookEvent(deps, actor, params.id, params.event_id), {
      ...op({ id: 'replayWebhookEvent', summary: 'Deliver an event again, now, with a fresh retry schedule', tag, auth: 'full', method: 'POST', errors: ['not_found'] }),
      params: s.WebhookEventParams,
      response: { 200: s.WebhookEvent },
    })
