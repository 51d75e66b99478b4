import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import * as s from './schema'
import * as svc from './service'

const tag = 'logs'

export const logRoutes = (platform: Platform) =>
  new Elysia({ name: 'logs', prefix: '/logs' })
    .use(platform)
    .get('', ({ deps, actor, query }) => svc.listLogs(deps, actor, query), {
      ...op({
        id: 'listLogs',
        summary: 'List API requests, newest first: method, path, status, key, duration, error code',
        description:
          'Filters: `method`, `path` (exact) or `path_prefix`, `status` (`404`) or its class (`4xx`), `key_id`, `error_code`, `since` and `until`. Requests are kept 30 days. Requests that name no account (no key, an unknown key) and public pages are not logged.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['invalid_cursor', 'invalid_parameter'],
      }),
      query: s.ListLogsQuery,
      response: { 200: s.LogList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getLog(deps, actor, params.id), {
      ...op({
        id: 'getLog',
        summary: 'Get one request with its headers, body and reply (redacted)',
        description: 'The id is the request id of the reply’s `x-request-id` header.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['not_found'],
      }),
      params: s.LogIdParams,
      response: { 200: s.Log },
    })
