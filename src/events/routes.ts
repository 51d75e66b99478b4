import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'events'

export const eventRoutes = (platform: Platform) =>
  new Elysia({ name: 'events', prefix: '/events' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createEvent(deps, actor, body)), {
      ...op({
        id: 'createEvent',
        summary: 'Define a custom event (name, payload schema)',
        description: 'Automations trigger on, and wait for, defined events. The optional `schema` is a flat map of payload key to `string`, `number`, `boolean` or `date`.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['invalid_parameter', 'event_name_taken'],
      }),
      body: s.CreateEvent,
      response: { 201: s.Event },
    })
    .get('', ({ deps, actor, query }) => svc.listEvents(deps, actor, query), {
      ...op({ id: 'listEvents', summary: 'List event definitions, newest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListEventsQuery,
      response: { 200: s.EventList },
    })
    .post('/send', async ({ deps, actor, body, set }) => ((set.status = 202), svc.sendEvent(deps, actor, body)), {
      ...op({
        id: 'sendEvent',
        summary: 'Record an occurrence of an event for a contact',
        description: 'Names the contact by `contact_id` or `email`. Payload keys the event schema names must have its types. Automations triggered by the event start from this record.',
        tag,
        auth: 'send',
        method: 'POST',
        body: true,
        errors: ['not_found', 'missing_required_field', 'invalid_parameter'],
      }),
      body: s.SendEvent,
      response: { 202: s.SentEvent },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getEvent(deps, actor, params.id), {
      ...op({ id: 'getEvent', summary: 'Get one event definition by id or name', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.EventRefParams,
      response: { 200: s.Event },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateEvent(deps, actor, params.id, body), {
      ...op({
        id: 'updateEvent',
        summary: 'Rename an event or replace its payload schema',
        description: '`schema: null` clears the schema. Occurrences already recorded keep the name they were sent with.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'missing_required_field', 'invalid_parameter', 'event_name_taken', 'event_in_use'],
      }),
      params: s.EventRefParams,
      body: s.UpdateEvent,
      response: { 200: s.Event },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteEvent(deps, actor, params.id), {
      ...op({ id: 'deleteEvent', summary: 'Delete an event definition (recorded occurrences stay)', tag, auth: 'full', method: 'DELETE', errors: ['not_found', 'event_in_use'] }),
      params: s.EventRefParams,
      response: { 200: Deleted('event') },
    })
