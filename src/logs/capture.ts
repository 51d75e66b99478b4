import { resolveToken } from '../api-keys/service'
import { isSecretName, REDACTED, redactedJson, redactText } from '../audit/redact'
import type { RootDeps } from '../deps'
import { bearerToken } from '../http/auth'
import { envelope } from '../http/errors'
import { stateOf, type RequestState } from '../http/state'
import { iso } from '../lib/clock'
import { uuidV7Time } from '../lib/ids'
import type { LogEntry } from './buffer'

/** Each body is kept up to 8 KB of redacted JSON; a string inside it up to 1,000 characters (attachment contents, HTML). */
const BODY_LIMIT = 8 * 1024
const STRING_LIMIT = 1000

/** What the platform's after-response hook sees of a request. */
export interface Answered {
  request: Request
  path: string
  set: { status?: number | string }
  body?: unknown
  responseValue?: unknown
}

function bodyText(v: unknown): { text: string | null; truncated: boolean } {
  if (v === undefined || v === null || v instanceof Response || v instanceof Blob || v instanceof ArrayBuffer || ArrayBuffer.isView(v) || v instanceof ReadableStream) {
    return { text: null, truncated: false }
  }
  const text = typeof v === 'string' ? redactText(v.slice(0, BODY_LIMIT + 1)) : redactedJson(v, { maxString: STRING_LIMIT })
  return text.length > BODY_LIMIT ? { text: text.slice(0, BODY_LIMIT), truncated: true } : { text, truncated: false }
}

/**
 * Requests whose body is a credential under a plain name: the second-factor step
 * takes a TOTP or recovery code as `code`, which no name or pattern tells apart
 * from any other code.
 */
const CREDENTIAL_BODIES = new Set(['/auth/mfa/verify'])
const credentialBody = (body: unknown) => (body && typeof body === 'object' ? Object.fromEntries(Object.keys(body).map((k) => [k, REDACTED])) : REDACTED)

function headersOf(request: Request): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of request.headers) out[name] = isSecretName(name) ? REDACTED : redactText(value)
  return out
}

function queryOf(url: string): string | null {
  const i = url.indexOf('?')
  if (i < 0 || i === url.length - 1) return null
  const params = [...new URLSearchParams(url.slice(i + 1))].map(([k, v]): [string, string] => [k, isSecretName(k) ? REDACTED : redactText(v)])
  return new URLSearchParams(params).toString()
}

function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** The reply as it left: an error envelope, a replayed reply, or what the handler returned. */
function replyOf(root: RootDeps, st: RequestState, c: Answered) {
  if (st.error) return { status: st.error.status, errorCode: st.error.code, body: envelope(root.config.baseUrl, st.error) }
  if (st.replayed) return { status: st.replayed.status, errorCode: null, body: jsonOrText(st.replayed.body) }
  const v = c.responseValue
  if (v instanceof Response) return { status: v.status, errorCode: null, body: null }
  return { status: typeof c.set.status === 'number' ? c.set.status : 200, errorCode: null, body: v }
}

type Caller = { accountId: string; keyId: string | null }

/**
 * Who made a request that never reached its route's authentication (no such
 * route, a body refused before the route ran): the key its Authorization header
 * names, if it is one.
 */
async function keyOwner(root: RootDeps, token: string): Promise<Caller | null> {
  const found = await resolveToken(root, token)
  return found.ok ? { accountId: found.key.accountId, keyId: found.key.id } : null
}

function entryOf(root: RootDeps, st: RequestState, c: Answered, caller: Caller): LogEntry {
  const reply = replyOf(root, st, c)
  const request = bodyText(CREDENTIAL_BODIES.has(c.path) ? credentialBody(c.body) : c.body)
  const response = bodyText(reply.body)
  return {
    id: st.id,
    accountId: caller.accountId,
    keyId: caller.keyId,
    method: c.request.method,
    // A path can carry a secret of its own: an invitation is accepted at /invite/{token}/accept.
    path: redactText(c.path),
    query: queryOf(c.request.url),
    status: reply.status,
    errorCode: reply.errorCode,
    durationMs: Math.round((performance.now() - st.start) * 100) / 100,
    userAgent: c.request.headers.get('user-agent'),
    requestHeaders: headersOf(c.request),
    requestBody: request.text,
    requestBodyTruncated: request.truncated,
    responseBody: response.text,
    responseBodyTruncated: response.truncated,
    // The request id was made from the clock on arrival: the entry is dated when the request came in.
    createdAt: iso(uuidV7Time(st.id)),
  }
}

/**
 * Queues the log entry of an answered API request. Public routes (health, the
 * OpenAPI document, tracking pixels and links, unsubscribe pages) are not API
 * calls of an account and are left out, and so are requests that name no
 * account (no key, an unknown one): no account could read them.
 */
export function captureRequest(root: RootDeps, c: Answered) {
  const st = stateOf(c.request)
  if (!st || st.level === 'public') return
  try {
    const known = st.caller ?? st.actor
    if (known) return root.requestLog.record(entryOf(root, st, c, known))
    const token = st.level === undefined ? bearerToken(c.request) : undefined
    if (!token) return
    // Made now, while the request's timings hold; the account is filled in once the key is looked up.
    const entry = entryOf(root, st, c, { accountId: '', keyId: null })
    root.requestLog.add(keyOwner(root, token).then((who) => who && { ...entry, ...who }))
  } catch (e) {
    // The reply has left; a log entry that cannot be made must not take the process with it.
    root.log.error('request log entry failed', { request_id: st.id, error: (e as Error).message })
  }
}
