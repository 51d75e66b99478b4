import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'contact-properties'

export const contactPropertyRoutes = (platform: Platform) =>
  new Elysia({ name: 'contact-properties', prefix: '/contact-properties' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createProperty(deps, actor, body)), {
      ...op({
        id: 'createContactProperty',
        summary: 'Define a custom contact property: key, type and fallback',
        description:
          'From then on every contact write (create, update, batch, import) checks values under `key` against `type`. Keys are case-sensitive and unique in the account; at most 1,000 properties.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['missing_required_field', 'invalid_parameter', 'contact_property_key_taken', 'contact_property_limit_reached'],
      }),
      body: s.CreateContactProperty,
      response: { 201: s.ContactProperty },
    })
    .get('', ({ deps, actor }) => svc.listProperties(deps, actor), {
      ...op({
        id: 'listContactProperties',
        summary: 'List the account’s contact properties with their types',
        description: 'No parameters: the reply holds every property, newest first, so `has_more` is false and `next_cursor` null.',
        tag,
        auth: 'full',
        method: 'GET',
      }),
      query: s.ListContactPropertiesQuery,
      response: { 200: s.ContactPropertyList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getProperty(deps, actor, params.id), {
      ...op({ id: 'getContactProperty', summary: 'Get one contact property', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.ContactPropertyIdParams,
      response: { 200: s.ContactProperty },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateProperty(deps, actor, params.id, body), {
      ...op({
        id: 'updateContactProperty',
        summary: 'Change a contact property’s fallback value',
        description: 'Key and type never change (stored values were checked against the type); sending them is accepted only when they equal the stored ones.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'invalid_parameter'],
      }),
      params: s.ContactPropertyIdParams,
      body: s.UpdateContactProperty,
      response: { 200: s.ContactProperty },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteProperty(deps, actor, params.id), {
      ...op({ id: 'deleteContactProperty', summary: 'Delete a contact property and its value on every contact', tag, auth: 'full', method: 'DELETE', errors: ['not_found'] }),
      params: s.ContactPropertyIdParams,
      response: { 200: Deleted('contact_property') },
    })
