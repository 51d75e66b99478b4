import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import { html, notFoundPage } from '../tracking/pages'
import { batchContacts } from './batch'
import * as member from './membership'
import * as resub from './resubscribe'
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
        description:
          '`email` is required and must be new to the account (409 `contact_already_exists` otherwise). `topics` records answers at once; `segments` (and the legacy `audience_id`) add the contact to those segments. `properties` must fit the account’s contact properties. An address whose owner unsubscribed or complained stays unsubscribed: `unsubscribed: false` for it answers 409 `contact_resubscribe_required`.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['missing_required_field', 'invalid_parameter', 'contact_already_exists', 'not_found', 'contact_resubscribe_required'],
      }),
      body: s.CreateContact,
      response: { 201: s.Contact },
    })
    .get('', ({ deps, actor, query }) => svc.listContacts(deps, actor, query), {
      ...op({
        id: 'listContacts',
        summary: 'List contacts, newest first, filtered by segment, address, unsubscribed flag or created range',
        description: '`segment_id` (or the legacy `audience_id`) lists one segment’s members; `since` and `until` bound `created_at`.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['invalid_cursor', 'not_found', 'invalid_parameter'],
      }),
      query: s.ListContactsQuery,
      response: { 200: s.ContactList },
    })
    .post('/batch', ({ deps, actor, body }) => batchContacts(deps, actor, body), {
      ...op({
        id: 'batchContacts',
        summary: 'Create or update up to 100 contacts in one call',
        description:
          'Each item is a contact as POST /contacts takes it; its `email` picks the contact: a new address is created, an existing one updated (fields as PATCH changes them; answers recorded; segments joined). All or nothing: the first bad item answers its error with its `index` and nothing is kept.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['missing_required_field', 'invalid_parameter', 'not_found', 'contact_resubscribe_required'],
      }),
      // A bare array is the batch (as POST /emails/batch takes one): read it as `{contacts}` before validation.
      transform: (ctx) => {
        if (Array.isArray(ctx.body)) ctx.body = { contacts: ctx.body }
      },
      body: s.ContactBatch,
      response: { 200: s.BatchResult },
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
        description:
          '`properties` are merged into the stored ones (a null value removes its key) and must fit the account’s contact properties. `unsubscribed: false` for a contact who unsubscribed themselves (or complained) answers 409 `contact_resubscribe_required`: only the contact can lift that.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'contact_already_exists', 'contact_resubscribe_required'],
      }),
      params: s.ContactRefParams,
      body: s.UpdateContact,
      response: { 200: s.Contact },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteContact(deps, actor, params.id), {
      ...op({ id: 'deleteContact', summary: 'Delete a contact with its topic answers and segment memberships', tag, auth: 'full', method: 'DELETE', errors: ['not_found'] }),
      params: s.ContactRefParams,
      response: { 200: s.DeletedContact },
    })
    .post('/:id/resubscribe', ({ deps, actor, params }) => resub.requestResubscribe(deps, actor, params.id), {
      ...op({
        id: 'resubscribeContact',
        summary: 'Ask an unsubscribed contact to confirm they want mail again',
        description:
          'Only the contact can lift an unsubscribe. The reply holds `confirm_url`, a single-use page valid 7 days where the contact confirms; hand it to them. On confirmation the contact is subscribed and the suppression their unsubscribe or complaint made is cleared. A pending request is answered again, not doubled; a contact who receives mail answers `status: subscribed`.',
        tag,
        auth: 'full',
        method: 'POST',
        errors: ['not_found'],
      }),
      params: s.ContactRefParams,
      response: { 200: s.Resubscribe },
    })
    .get('/:id/segments', ({ deps, actor, params, query }) => member.listContactSegments(deps, actor, params.id, query), {
      ...op({
        id: 'listContactSegments',
        summary: 'The segments a contact is in',
        description: 'Static segments it was added to (with `added_at`) and rule segments whose rules it matches now (`added_at: null`), newest segment first.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['not_found', 'invalid_cursor'],
      }),
      params: s.ContactRefParams,
      query: s.ListContactTopicsQuery,
      response: { 200: s.ContactSegmentList },
    })
    .post('/:id/segments/:segmentId', ({ deps, actor, params }) => member.addToSegment(deps, actor, params.id, params.segmentId), {
      ...op({
        id: 'addContactToSegment',
        summary: 'Add a contact to a static segment',
        description:
          'A contact who unsubscribed must confirm first (409 `contact_resubscribe_required`). Adding a member again changes nothing and answers `added: false`. A rule segment’s members are whoever matches its rules: adding to one answers 422 `invalid_parameter`.',
        tag,
        auth: 'full',
        method: 'POST',
        errors: ['not_found', 'contact_resubscribe_required', 'invalid_parameter'],
      }),
      params: s.ContactSegmentParams,
      response: { 200: s.ContactSegmentChange },
    })
    .delete('/:id/segments/:segmentId', ({ deps, actor, params }) => member.removeFromSegment(deps, actor, params.id, params.segmentId), {
      ...op({
        id: 'removeContactFromSegment',
        summary: 'Remove a contact from a static segment',
        description: '404 when the contact is not in the segment; 422 `invalid_parameter` for a rule segment, whose members are whoever matches its rules.',
        tag,
        auth: 'full',
        method: 'DELETE',
        errors: ['not_found', 'invalid_parameter'],
      }),
      params: s.ContactSegmentParams,
      response: { 200: s.ContactSegmentChange },
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

/** A fresh object per route: Elysia writes the macro's hooks into it. */
const hidden = () => ({ auth: 'public' as const, detail: { hide: true } })

/**
 * The page a contact confirms a resubscribe on: recipient-facing, public and hidden
 * from /openapi.json. GET only asks; POST confirms. A bad or used-up link gets a
 * plain page, never an error envelope.
 */
export const resubscribePageRoutes = (platform: Platform) =>
  new Elysia({ name: 'resubscribe-pages' })
    .use(platform)
    .get('/resubscribe/:token', async ({ deps, params }) => {
      const found = await resub.readResubscribe(deps, params.token)
      if (!found) return notFoundPage()
      if (found.request.status === 'confirmed') return found.contact.unsubscribed ? notFoundPage() : html(resub.resubscribedPage(found))
      return html(resub.confirmPage(found, params.token))
    }, hidden())
    .post('/resubscribe/:token', async ({ deps, params }) => {
      const found = await resub.readResubscribe(deps, params.token)
      if (!found || (found.request.status === 'confirmed' && found.contact.unsubscribed)) return notFoundPage()
      await resub.confirmResubscribe(deps, found)
      return html(resub.resubscribedPage(found))
    }, hidden())
