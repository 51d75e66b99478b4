import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'suppressions'

export const suppressionRoutes = (platform: Platform) =>
  new Elysia({ name: 'suppressions', prefix: '/suppressions' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createSuppression(deps, actor, body)), {
      ...op({ id: 'createSuppression', summary: 'Suppress an address by hand', tag, auth: 'full', method: 'POST', body: true }),
      body: s.CreateSuppression,
      response: { 201: s.Suppression },
    })
    .get('', ({ deps, actor, query }) => svc.listSuppressions(deps, actor, query), {
      ...op({ id: 'listSuppressions', summary: 'List suppressed addresses, filtered by reason', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListSuppressionsQuery,
      response: { 200: s.SuppressionList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getSuppression(deps, actor, params.id), {
      ...op({ id: 'getSuppression', summary: 'One suppression, by id or address', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.SuppressionParams,
      response: { 200: s.Suppression },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteSuppression(deps, actor, params.id), {
      ...op({ id: 'deleteSuppression', summary: 'Clear a suppression (a fixed hard bounce, never an unsubscribe or complaint)', tag, auth: 'full', method: 'DELETE', errors: ['not_found', 'contact_resubscribe_required'] }),
      params: s.SuppressionParams,
      response: { 200: Deleted('suppression') },
    })
