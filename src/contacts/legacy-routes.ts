import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import * as member from './membership'
import * as s from './schema'

const tag = 'contacts'

/**
 * The audience-era routes Resend's SDK still calls when given an `audienceId`: an
 * audience is a segment under its older name, and a contact named under it must be
 * one of its members.
 */
export const audienceContactRoutes = (platform: Platform) =>
  new Elysia({ name: 'audience-contacts', prefix: '/audiences/:audienceId/contacts' })
    .use(platform)
    .post('', async ({ deps, actor, params, body, set }) => ((set.status = 201), member.createAudienceContact(deps, actor, params.audienceId, body)), {
      ...op({
        id: 'createAudienceContact',
        summary: 'Legacy: create a contact in an audience',
        description: 'As POST /contacts, with the contact added to the audience (segment) in the path. An address the account already holds answers 409 `contact_already_exists`; add that contact with POST /contacts/{id}/segments/{segmentId}.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['not_found', 'missing_required_field', 'invalid_parameter', 'contact_already_exists', 'contact_resubscribe_required'],
      }),
      params: s.AudienceParams,
      body: s.CreateContact,
      response: { 201: s.Contact },
    })
    .get('', ({ deps, actor, params, query }) => member.listMembers(deps, actor, params.audienceId, query), {
      ...op({ id: 'listAudienceContacts', summary: 'Legacy: list an audience’s contacts, newest first', tag, auth: 'full', method: 'GET', errors: ['not_found', 'invalid_cursor', 'invalid_parameter'] }),
      params: s.AudienceParams,
      query: s.SegmentMembersQuery,
      response: { 200: s.ContactList },
    })
    .get('/:id', ({ deps, actor, params }) => member.getAudienceContact(deps, actor, params.audienceId, params.id), {
      ...op({ id: 'getAudienceContact', summary: 'Legacy: get a contact of an audience by id or e-mail address', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.AudienceContactParams,
      response: { 200: s.Contact },
    })
    .patch('/:id', ({ deps, actor, params, body }) => member.updateAudienceContact(deps, actor, params.audienceId, params.id, body), {
      ...op({
        id: 'updateAudienceContact',
        summary: 'Legacy: update a contact of an audience',
        description: 'As PATCH /contacts/{id}, for a member of the audience.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'contact_already_exists', 'contact_resubscribe_required'],
      }),
      params: s.AudienceContactParams,
      body: s.UpdateContact,
      response: { 200: s.Contact },
    })
    .delete('/:id', ({ deps, actor, params }) => member.deleteAudienceContact(deps, actor, params.audienceId, params.id), {
      ...op({
        id: 'deleteAudienceContact',
        summary: 'Legacy: delete a contact of an audience',
        description: 'Deletes the contact, as the audience-era route did; to take it out of the audience only, use DELETE /contacts/{id}/segments/{segmentId}.',
        tag,
        auth: 'full',
        method: 'DELETE',
        errors: ['not_found'],
      }),
      params: s.AudienceContactParams,
      response: { 200: s.DeletedContact },
    })

/** A segment's members: what Resend's SDK calls for `contacts.list({segmentId})` (or `audienceId`). */
export const segmentContactRoutes = (platform: Platform) =>
  new Elysia({ name: 'segment-contacts', prefix: '/segments' })
    .use(platform)
    .get('/:id/contacts', ({ deps, actor, params, query }) => member.listMembers(deps, actor, params.id, query), {
      ...op({ id: 'listSegmentContacts', summary: 'List a segment’s contacts, newest first', tag: 'segments', auth: 'full', method: 'GET', errors: ['not_found', 'invalid_cursor', 'invalid_parameter'] }),
      params: s.SegmentIdParams,
      query: s.SegmentMembersQuery,
      response: { 200: s.ContactList },
    })
