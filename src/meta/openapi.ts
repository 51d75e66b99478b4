import { toOpenAPISchema } from '@elysiajs/openapi'
import type { AnyElysia } from 'elysia'
import { CATALOGUE } from '../errors/catalogue'
import { VERSION } from './service'

type Doc = ReturnType<typeof toOpenAPISchema>
type Operation = { requestBody?: { content?: Record<string, unknown> }; [k: string]: unknown }

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

/**
 * The OpenAPI 3.1 document, generated from the same TypeBox schemas that validate
 * requests. Bodies are JSON only, so other media types the generator lists are dropped.
 */
export function buildOpenApi(app: AnyElysia, baseUrl: string) {
  const { paths, components } = toOpenAPISchema(app, { staticFile: false }, undefined, undefined, '3.1.0') as Doc
  for (const item of Object.values(paths ?? {})) {
    for (const operation of Object.values(item as Record<string, Operation>)) {
      const content = operation.requestBody?.content
      if (content?.['application/json']) operation.requestBody!.content = { 'application/json': content['application/json'] }
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mailroom API',
      version: VERSION,
      description: 'Transactional email for software agents: send, receive, audiences, webhooks and metrics. Every error carries code, message, fix and docs_url.',
    },
    servers: [{ url: baseUrl }],
    security: [{ bearer: [] }],
    components: {
      ...components,
      schemas: { ...(components as { schemas?: object })?.schemas, Error: ErrorSchema },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API key: `Authorization: Bearer mr_…`' } },
    },
    paths,
  }
}
