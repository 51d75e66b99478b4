import { AppError } from '../errors/app-error'

export const MB = 1024 * 1024
export const DEFAULT_BODY_LIMIT = 1 * MB
export const LARGE_BODY_LIMIT = 50 * MB

/**
 * Routes that carry mail content take 50 MB (40 MB of attachments after base64);
 * everything else 1 MB. One list, so the limit of a route is read in one place.
 */
const LARGE = [
  /^POST \/emails$/,
  /^POST \/emails\/batch$/,
  /^POST \/emails\/receiving\/[^/]+\/reply$/,
  /^(POST|PATCH) \/(templates|broadcasts|automations)(\/[^/]+)?$/,
  /^POST \/support\/requests\/[^/]+\/attachments$/,
]

export function bodyLimit(method: string, path: string) {
  const key = `${method} ${path}`
  return LARGE.some((r) => r.test(key)) ? LARGE_BODY_LIMIT : DEFAULT_BODY_LIMIT
}

const isJson = (contentType: string) => /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(contentType)

/**
 * Recipient-facing forms, not API operations: the one-click unsubscribe POST (RFC 8058
 * sends `List-Unsubscribe=One-Click` as a form), the preference page and the resubscribe
 * confirmation; and OAuth's form-encoded endpoints (RFC 6749, RFC 7009) and consent
 * form. They take an
 * HTML form body (url-encoded or multipart) read as `{name: value | value[]}`; any
 * other body is ignored there, so a mailbox provider's POST is never refused for its type.
 */
const FORM = [/^POST \/unsubscribe\/[^/]+(\/preferences)?$/, /^POST \/resubscribe\/[^/]+$/, /^POST \/oauth\/(authorize|token|revoke)$/]

export const isFormRoute = (method: string, path: string) => FORM.some((r) => r.test(`${method} ${path}`))

/** Bodies whose signature covers their exact bytes (the payment provider's events): kept as received beside the parsed JSON. */
const SIGNED = [/^POST \/billing\/webhook$/]
const rawBodies = new WeakMap<Request, string>()
export const rawBodyOf = (request: Request) => rawBodies.get(request) ?? ''

async function parseForm(buf: ArrayBuffer, contentType: string): Promise<Record<string, string | string[]>> {
  const out: Record<string, string | string[]> = {}
  const add = (k: string, v: string) => {
    const had = out[k]
    out[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v]
  }
  if (/^application\/x-www-form-urlencoded/i.test(contentType)) {
    for (const [k, v] of new URLSearchParams(new TextDecoder().decode(buf))) add(k, v)
  } else if (/^multipart\/form-data/i.test(contentType)) {
    try {
      const form = await new Response(buf, { headers: { 'content-type': contentType } }).formData()
      for (const [k, v] of form) if (typeof v === 'string') add(k, v)
    } catch {
      // A malformed multipart body carries nothing we need: the token is in the path.
    }
  }
  return out
}

/**
 * JSON only. An empty body is `{}` whatever its content type (Resend's SDK sends
 * `Content-Type: application/json` on body-less calls); a body that is not JSON
 * answers 415; one over the route's limit answers 413 before it is parsed.
 */
export async function parseJsonBody(request: Request, path: string): Promise<unknown> {
  const limit = bodyLimit(request.method, path)
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > limit) throw new AppError('payload_too_large', { message: `The body is larger than ${limit / MB} MB, the limit of this operation.` })
  const buf = await request.arrayBuffer()
  if (buf.byteLength > limit) throw new AppError('payload_too_large', { message: `The body is larger than ${limit / MB} MB, the limit of this operation.` })
  const contentType = request.headers.get('content-type') ?? ''
  if (isFormRoute(request.method, path)) return parseForm(buf, contentType)
  const text = new TextDecoder().decode(buf)
  if (SIGNED.some((r) => r.test(`${request.method} ${path}`))) rawBodies.set(request, text)
  if (text.trim() === '') return {}
  if (!isJson(contentType)) {
    throw new AppError('unsupported_media_type', { message: `The body must be JSON; got ${contentType ? `\`${contentType}\`` : 'no Content-Type'}.` })
  }
  try {
    return JSON.parse(text)
  } catch (e) {
    throw new AppError('validation_error', { message: 'The body is not valid JSON.', details: [{ field: 'body', message: (e as Error).message }] })
  }
}
