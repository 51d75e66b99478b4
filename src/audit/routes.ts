import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import * as s from './schema'
import * as svc from './service'

const tag = 'audit'

export const auditRoutes = (platform: Platform) =>
  new Elysia({ name: 'audit', prefix: '/audit' })
    .use(platform)
    .get('', ({ deps, actor, query }) => svc.listAudit(deps, actor, query), {
      ...op({
        id: 'listAudit',
        summary: 'List state changes, newest first: who changed what, when, with which key',
        description: 'Filters: `resource`, `resource_id`, `action`, `actor` (key, session or system), `key_id`, `since` and `until`. Items leave out `before` and `after`; GET /audit/{id} has them.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['invalid_cursor', 'invalid_parameter'],
      }),
      query: s.ListAuditQuery,
      response: { 200: s.AuditList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getAuditEntry(deps, actor, params.id), {
      ...op({ id: 'getAuditEntry', summary: 'Get one state change with the resource before and after it (secrets redacted)', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.AuditIdParams,
      response: { 200: s.AuditEntry },
    })
