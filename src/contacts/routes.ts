import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import * as s from './schema'
import * as svc from './service'

const tag = 'contacts'

export const contactRoutes = (platform: Platform) =>
  new Elysia({ name: 'contacts', prefix: '/contacts' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createContact(deps, actor, body)), {
      ...op({
        id: 'createContact',
        summary: 'Create a contact, optionally with its topic answers',
        description: '`email` is required and must be new to the account. `topics` records answers at once; `segments` and `audience_id` are accepted and not yet acted on.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['missing_required_field', 'invalid_parameter', 'contact_already_exists', 'not_found'],
      }),
      body: s.CreateContact,
      response: { 201: s.Contact },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getContact(deps, actor, params.id), {
      ...op({ id: 'getContact', summary: 'Get a contact by id or e-mail address', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.ContactRefParams,
      response: { 200: s.Contact },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateContact(deps, actor, params.id, body), {
      ...op({
        id: 'updateContact',
        summary: 'Change a contact’s address, names, unsubscribed flag or properties',
        description: '`properties` are merged into the stored ones; a null value removes its key.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'contact_already_exists'],
      }),
      params: s.ContactRefParams,
      body: s.UpdateContact,
      response: { 200: s.Contact },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteContact(deps, actor, params.id), {
      ...op({ id: 'deleteContact', summary: 'Delete a contact and its topic answers', tag, auth: 'full', method: 'DELETE', errors: ['not_found'] }),
      params: s.ContactRefParams,
      response: { 200: s.DeletedContact },
    })
    .get('/:id/topics', ({ deps, actor, params, query }) => svc.listContactTopics(deps, actor, params.id, query), {
      ...op({
        id: 'listContactTopics',
        summary: 'What a contact said for every topic of the account',
        description: 'One item per topic, newest topic first. A topic the contact never answered reports its default with `is_default: true`.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['not_found', 'invalid_cursor'],
      }),
      params: s.ContactRefParams,
      query: s.ListContactTopicsQuery,
      response: { 200: s.ContactTopicList },
    })
    .patch('/:id/topics', ({ deps, actor, params, body }) => svc.updateContactTopics(deps, actor, params.id, body), {
      ...op({
        id: 'updateContactTopics',
        summary: 'Record a contact’s answers for some topics',
        description: 'Answers are absolute; topics left out keep what they had. Replies with the whole topic list plus `contact_id` and the answers just recorded.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'missing_required_field', 'invalid_parameter'],
      }),
      params: s.ContactRefParams,
      // Resend's SDK sends the answers as a bare array: read it as `{topics}` before validation.
      transform: (ctx) => {
        if (Array.isArray(ctx.body)) ctx.body = { topics: ctx.body }
      },
      body: s.UpdateContactTopics,
      response: { 200: s.ContactTopicsUpdated },
    })
