import { AppError, type FieldIssue } from '../errors/app-error'
import { CATALOGUE, type ErrorCode } from '../errors/catalogue'

export const docsUrl = (baseUrl: string, code: string) => `${baseUrl}/docs/errors/${code}`

/** The one error envelope: the seed's fields plus Resend's `name` and `statusCode`. */
export function envelope(baseUrl: string, err: AppError) {
  const spec = CATALOGUE[err.code]
  const retry = err.retryAfter ?? spec.retryAfter
  return {
    code: err.code,
    message: err.message,
    fix: spec.fix,
    docs_url: docsUrl(baseUrl, err.code),
    ...(retry ? { retry_after_seconds: retry } : {}),
    ...(err.details ? { details: err.details } : {}),
    ...err.extra,
    name: spec.legacy,
    statusCode: spec.status,
  }
}

export function errorResponse(baseUrl: string, err: AppError, headers: Record<string, string>) {
  const body = envelope(baseUrl, err)
  const h: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', ...headers, ...err.headers }
  if (body.retry_after_seconds && (err.status === 429 || err.status === 503 || err.code === 'idempotency_in_flight')) {
    h['retry-after'] = String(body.retry_after_seconds)
  }
  return new Response(JSON.stringify(body), { status: err.status, headers: h })
}

interface ValidationLike {
  type: string
  value?: unknown
  all?: { path?: string; message?: string; summary?: string; schema?: { error?: string } }[]
}

/**
 * Elysia checks query parameters one by one and does not say which one failed
 * (type `property`); the failing value names it.
 */
function failingQueryParam(url: string, value: unknown) {
  for (const [k, v] of new URL(url).searchParams) if (v === String(value)) return k
  return undefined
}

/** Turns Elysia's validation failure into 400 `validation_error` with one entry per field. */
export function fromValidation(error: ValidationLike, url: string): AppError {
  if (error.type === 'property') {
    const name = failingQueryParam(url, error.value)
    const message = error.all?.[0]?.message ?? 'Invalid value'
    const field = name ? `query.${name}` : 'query'
    return new AppError('validation_error', { message: `Invalid \`${field}\`: ${message}.`, details: [{ field, message }] })
  }
  const where = error.type === 'query' ? 'query' : error.type === 'params' ? 'path' : error.type === 'headers' ? 'header' : 'body'
  const seen = new Set<string>()
  const details: FieldIssue[] = []
  for (const issue of error.all ?? []) {
    const field = (issue.path ?? '').replace(/^\//, '').replace(/\//g, '.') || where
    const message = issue.schema?.error ?? issue.summary ?? issue.message ?? 'Invalid value'
    if (seen.has(field)) continue
    seen.add(field)
    details.push({ field: where === 'body' ? field : `${where}.${field}`, message })
  }
  const list = details.map((d) => `\`${d.field}\``).join(', ')
  return new AppError('validation_error', { message: `Invalid ${list || where}: ${details[0]?.message ?? 'see details'}.`, details })
}
