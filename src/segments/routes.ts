import { Elysia, t } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'segments'

const RULES =
  'A segment with no `rules` is static: contacts join it with POST /contacts/{id}/segments/{segmentId}. With rules, its members are the contacts matching them (`match: all` or `any`), computed whenever it is read; a rule names a defined contact property with a comparison that fits its type (`property`), a topic answer (`topic`, a contact who never answered counts as the topic default), an open or click in the last N days (`engagement`), the creation date (`created_at`), the unsubscribed flag or the address. A rule that does not fit the account answers 422 `invalid_parameter` naming it (`rules[2].key`).'

export const segmentRoutes = (platform: Platform) =>
  new Elysia({ name: 'segments', prefix: '/segments' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createSegment(deps, actor, body)), {
      ...op({ id: 'createSegment', summary: 'Create a segment, static or chosen by rules', description: RULES, tag, auth: 'full', method: 'POST', body: true, errors: ['invalid_parameter'] }),
      body: s.CreateSegment,
      response: { 201: s.Segment },
    })
    .get('', ({ deps, actor, query }) => svc.listSegments(deps, actor, query), {
      ...op({ id: 'listSegments', summary: 'List segments, newest first', description: '`since` and `until` bound `created_at`.', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor', 'invalid_parameter'] }),
      query: s.ListSegmentsQuery,
      response: { 200: s.SegmentList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getSegment(deps, actor, params.id), {
      ...op({ id: 'getSegment', summary: 'Get one segment with its rules', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.SegmentIdParams,
      response: { 200: s.Segment },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateSegment(deps, actor, params.id, body), {
      ...op({
        id: 'updateSegment',
        summary: 'Rename a segment or change its rules',
        description: `Fields left out stay. \`rules: []\` makes the segment static (starting empty); a static segment takes rules only while it has no members. ${RULES}`,
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'invalid_parameter'],
      }),
      params: s.SegmentIdParams,
      body: s.UpdateSegment,
      response: { 200: s.Segment },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteSegment(deps, actor, params.id), {
      ...op({
        id: 'deleteSegment',
        summary: 'Delete a segment; its contacts stay',
        description: 'A segment a broadcast or an automation uses answers 409 `segment_in_use`, naming them.',
        tag,
        auth: 'full',
        method: 'DELETE',
        errors: ['not_found', 'segment_in_use'],
      }),
      params: s.SegmentIdParams,
      response: { 200: Deleted('segment') },
    })

/**
 * Segments under their older name, in Resend's audience shape. The router allows
 * one parameter name per path position, and the audience-contact routes took
 * `audienceId`; the documents still call it `id`.
 */
const AudienceParams = t.Object({ audienceId: s.SegmentIdParams.properties.id })
const pathNames = { audienceId: 'id' }

export const audienceRoutes = (platform: Platform) =>
  new Elysia({ name: 'audiences', prefix: '/audiences' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createAudience(deps, actor, body)), {
      ...op({ id: 'createAudience', summary: 'Legacy: create an audience (a static segment)', tag, auth: 'full', method: 'POST', body: true }),
      body: s.CreateAudience,
      response: { 201: s.Audience },
    })
    .get('', ({ deps, actor, query }) => svc.listAudiences(deps, actor, query), {
      ...op({ id: 'listAudiences', summary: 'Legacy: list every segment as an audience, newest first', description: '`since` and `until` bound `created_at`.', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor', 'invalid_parameter'] }),
      query: s.ListSegmentsQuery,
      response: { 200: s.AudienceList },
    })
    .get('/:audienceId', ({ deps, actor, params }) => svc.getAudience(deps, actor, params.audienceId), {
      ...op({ id: 'getAudience', summary: 'Legacy: get one segment as an audience', tag, auth: 'full', method: 'GET', errors: ['not_found'], pathNames }),
      params: AudienceParams,
      response: { 200: s.Audience },
    })
    .delete('/:audienceId', ({ deps, actor, params }) => svc.deleteAudience(deps, actor, params.audienceId), {
      ...op({
        id: 'deleteAudience',
        summary: 'Legacy: delete an audience (a segment); its contacts stay',
        description: 'An audience a broadcast or an automation uses answers 409 `segment_in_use`.',
        tag,
        auth: 'full',
        method: 'DELETE',
        errors: ['not_found', 'segment_in_use'],
        pathNames,
      }),
      params: AudienceParams,
      response: { 200: Deleted('audience') },
    })
