import { toOpenAPISchema } from '@elysiajs/openapi'
import type { AnyElysia } from 'elysia'
import { CATALOGUE } from '../errors/catalogue'
import { isFormRoute } from '../http/body'
import { SESSION_COOKIE } from '../sessions/cookie'
import { VERSION } from './service'

type Doc = ReturnType<typeof toOpenAPISchema>
type Operation = { requestBody?: { required?: boolean; content?: Record<string, unknown> }; [k: string]: unknown }

const ErrorSchema = {
  type: 'object',
  required: ['code', 'message', 'fix', 'docs_url', 'name', 'statusCode'],
  properties: {
    code: { type: 'string', enum: Object.keys(CATALOGUE) },
    message: { type: 'string' },
    fix: { type: 'string', description: 'what to do about it' },
    docs_url: { type: 'string', format: 'uri' },
    retry_after_seconds: { type: 'integer', description: 'present only when waiting can cure the refusal' },
    details: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, message: { type: 'string' } } } },
    name: { type: 'string', description: 'legacy-compatible (Resend) error name' },
    statusCode: { type: 'integer' },
  },
}

type RouteHooks = { body?: unknown; detail?: { 'x-error-responses'?: Record<string, unknown> } }

/** A TypeBox schema is JSON Schema already; a JSON round trip drops TypeBox's symbol keys. */
const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema))

const openApiPath = (path: string) => path.replace(/:([^/]+)/g, '{$1}').replace(/(.)\/$/, '$1')

type PathParam = { in?: string; name?: string }

/** Moves operations whose route names a path parameter otherwise than the document (`x-path-names` from `op()`). */
function renamePathParams(paths: Record<string, Record<string, Operation>>) {
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const names = operation['x-path-names'] as Record<string, string> | undefined
      if (!names) continue
      delete operation['x-path-names']
      for (const p of (operation.parameters ?? []) as PathParam[]) if (p.in === 'path' && p.name && names[p.name]) p.name = names[p.name]
      delete item[method]
      ;(paths[path.replace(/\{([^}]+)\}/g, (m, n: string) => (names[n] ? `{${names[n]}}` : m))] ??= {})[method] = operation
    }
    if (!Object.keys(item).length) delete paths[path]
  }
}

/**
 * The OpenAPI 3.1 document, generated from the same TypeBox schemas that validate
 * requests. The generator does not see bodies read by our own JSON parser, nor the
 * error replies of `op()`, so both are filled in here from the routes themselves.
 */
export function buildOpenApi(app: AnyElysia, baseUrl: string) {
  const { paths, components } = toOpenAPISchema(app, { staticFile: false }, undefined, undefined, '3.1.0') as Doc
  const hooks = new Map<string, RouteHooks>(
    (app.routes as { method: string; path: string; hooks: RouteHooks }[]).map((r) => [`${r.method.toLowerCase()} ${openApiPath(r.path)}`, r.hooks]),
  )
  for (const [path, item] of Object.entries(paths ?? {})) {
    for (const [method, operation] of Object.entries(item as Record<string, Operation>)) {
      const route = hooks.get(`${method} ${path}`)
      if (operation.requestBody && route?.body) {
        const type = isFormRoute(method.toUpperCase(), path) ? 'application/x-www-form-urlencoded' : 'application/json'
        operation.requestBody = { required: true, content: { [type]: { schema: plain(route.body) } } }
      }
      const errors = operation['x-error-responses'] as Record<string, unknown> | undefined
      delete operation['x-error-responses']
      operation.responses = { ...(operation.responses as object), ...errors }
    }
  }
  renamePathParams((paths ?? {}) as Record<string, Record<string, Operation>>)
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mailroom API',
      version: VERSION,
      description: 'Transactional email for software agents: send, receive, audiences, webhooks and metrics. Every error carries code, message, fix and docs_url.',
    },
    servers: [{ url: baseUrl }],
    security: [{ bearer: [] }, { session: [] }],
    components: {
      ...components,
      schemas: { ...(components as { schemas?: object })?.schemas, Error: ErrorSchema },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an API key: `Authorization: Bearer mr_…`' },
        session: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'a console session, set by POST /auth/sign-in' },
      },
    },
    paths,
  }
}
