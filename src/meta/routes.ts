import { Elysia, t, type AnyElysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { AppError } from '../errors/app-error'
import { buildOpenApi } from './openapi'
import { errorPage, referencePage } from './pages'
import * as s from './schema'
import { status, type Runtime } from './service'

const tag = 'meta'
const html = (body: string) => new Response(body, { headers: { 'content-type': 'text/html; charset=utf-8' } })

export const metaRoutes = (platform: Platform, app: () => AnyElysia, runtime: Runtime, baseUrl: string) => {
  let spec: ReturnType<typeof buildOpenApi> | undefined
  const document = () => (spec ??= buildOpenApi(app(), baseUrl))
  return new Elysia({ name: 'meta' })
    .use(platform)
    .get('/health', () => ({ object: 'health' as const, status: 'ok' as const }), {
      ...op({ id: 'getHealth', summary: 'Liveness probe', tag, auth: 'public', method: 'GET' }),
      response: { 200: s.Health },
    })
    .get('/status', ({ deps }) => status(deps, runtime), {
      ...op({ id: 'getStatus', summary: 'Readiness: storage, scheduler, SMTP listener, dispatcher backlog', tag, auth: 'public', method: 'GET', errors: ['service_unavailable'] }),
      response: { 200: s.Status },
    })
    .get('/openapi.json', () => document(), {
      ...op({ id: 'getOpenApi', summary: 'OpenAPI 3.1 description generated from the validating schemas', tag, auth: 'public', method: 'GET' }),
      response: { 200: s.OpenApiDocument },
    })
    .get('/docs', () => html(referencePage(document() as Parameters<typeof referencePage>[0])), { auth: 'public', detail: { hide: true } })
    .get(
      '/docs/errors/:code',
      ({ params }) => {
        const body = errorPage(params.code)
        if (!body) throw new AppError('not_found', { message: `There is no error code \`${params.code}\`.` })
        return html(body)
      },
      { auth: 'public', params: t.Object({ code: t.String({ maxLength: 100 }) }), detail: { hide: true } },
    )
}
