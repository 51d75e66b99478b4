import { Elysia } from 'elysia'
import { redactText } from '../audit/redact'
import { UnitOfWork, isTransientStorageError } from '../db'
import type { Deps, RootDeps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { captureRequest } from '../logs/capture'
import { authenticate, spendByAddress, type AuthLevel } from './auth'
import { parseJsonBody } from './body'
import { errorResponse, fromValidation } from './errors'
import { claim, complete, fingerprint, idempotencyKeyOf, release } from './idempotency'
import type { RouteTable } from './route-table'
import { setState, stateOf, type RequestState } from './state'

/** Thrown to answer with a reply stored under an Idempotency-Key. */
class Replay {
  constructor(readonly status: number, readonly body: string) {}
}

const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE'])

function rateHeaders(st: RequestState): Record<string, string> {
  if (!st.rate) return {}
  return {
    'ratelimit-limit': String(st.rate.limit),
    'ratelimit-remaining': String(st.rate.remaining),
    'ratelimit-reset': String(st.rate.resetSeconds),
  }
}

function clientAddress(root: RootDeps, request: Request, server: { requestIP(r: Request): { address: string } | null } | null) {
  if (root.config.trustProxy) {
    const fwd = request.headers.get('x-forwarded-for')?.split(',')[0]?.trim()
    if (fwd) return fwd
  }
  return server?.requestIP(request)?.address ?? 'local'
}

function toAppError(code: string | number, error: unknown, url: string): AppError {
  if (error instanceof AppError) return error
  // A reply that fails its own schema is our bug, never the caller's.
  if (code === 'VALIDATION' && (error as { type?: string }).type === 'response') return new AppError('internal_server_error')
  if (code === 'VALIDATION') return fromValidation(error as Parameters<typeof fromValidation>[0], url)
  if (code === 'PARSE') {
    const cause = (error as { cause?: unknown }).cause
    return cause instanceof AppError ? cause : new AppError('validation_error', { message: 'The body could not be parsed.' })
  }
  if (code === 'NOT_FOUND') return new AppError('not_found', { message: 'The requested endpoint does not exist.' })
  if (isTransientStorageError(error)) return new AppError('service_unavailable', { message: 'Storage is unavailable for a moment; nothing was changed.' })
  return new AppError('internal_server_error')
}

/**
 * A page for a signed-in person (the OAuth consent page a tool client opens)
 * reached by a browser with no session: it goes to the console's sign-in, which
 * returns to it after. API callers keep the JSON refusal.
 */
const signInFirst = (request: Request, st: RequestState, err: AppError) =>
  request.method === 'GET' && st.level === 'session' && (err.code === 'missing_api_key' || err.code === 'session_required') && (request.headers.get('accept') ?? '').includes('text/html')

function signInPath(request: Request) {
  const u = new URL(request.url)
  return `/console/?next=${encodeURIComponent(u.pathname + u.search)}#/sign-in`
}

/**
 * The cross-cutting behaviour every route stands on: request ids, JSON bodies and
 * their limits, authentication and rate windows (the `auth` macro), idempotency,
 * one transaction per request committed before the reply, the error envelope,
 * and the request log.
 */
export function platform(root: RootDeps, routes: RouteTable) {
  return new Elysia({ name: 'platform' })
    .onRequest(({ request, set, server }) => {
      const st: RequestState = { id: root.ids.uuid(), start: performance.now(), address: clientAddress(root, request, server), write: MUTATING.has(request.method) }
      setState(request, st)
      set.headers['x-request-id'] = st.id
    })
    .onParse({ as: 'global' }, ({ request, path }) => parseJsonBody(request, path))
    .macro({
      auth: (level: AuthLevel) => ({
        async transform({ request, path, set }) {
          const st = stateOf(request)!
          st.level = level
          st.unit = new UnitOfWork(root.db)
          if (MUTATING.has(request.method)) idempotencyKeyOf(request.headers)
          try {
            if (level === 'public') spendByAddress(root, st)
            else st.actor = await authenticate(root, request, level, path, st)
          } finally {
            Object.assign(set.headers, rateHeaders(st))
          }
        },
        async resolve({ request, path, body }) {
          const st = stateOf(request)!
          const key = MUTATING.has(request.method) ? idempotencyKeyOf(request.headers) : undefined
          if (key !== undefined && st.actor) {
            const url = new URL(request.url)
            const fp = fingerprint(request.method, path + url.search, body)
            const c = await claim(root.db, root.clock.now(), st.actor.accountId, key, fp)
            if (c.kind === 'replay') throw new Replay(c.status, c.body)
            st.idem = { accountId: st.actor.accountId, key, fingerprint: fp }
          }
          const deps: Deps = { ...root, db: st.unit! }
          return { actor: st.actor as Actor, deps }
        },
      }),
    })
    .onAfterHandle({ as: 'global' }, async ({ request, response, set }) => {
      const st = stateOf(request)
      if (!st?.unit) return
      const idem = st.idem
      st.idem = undefined
      const status = typeof set.status === 'number' ? set.status : 200
      await st.unit.finish(
        true,
        idem && !(response instanceof Response) ? (tx) => complete(tx, idem.accountId, idem.key, status, JSON.stringify(response)) : undefined,
      )
    })
    .onError({ as: 'global' }, async ({ request, code, error, path }) => {
      let st = stateOf(request)
      if (!st) {
        st = { id: root.ids.uuid(), start: performance.now(), address: 'local', write: MUTATING.has(request.method) }
        setState(request, st)
      }
      if (error instanceof Replay) {
        st.replayed = error
        return new Response(error.body, {
          status: error.status,
          headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': st.id, 'idempotent-replayed': 'true', ...rateHeaders(st) },
        })
      }
      await st.unit?.finish(false).catch(() => undefined)
      if (st.idem) await release(root.db, st.idem.accountId, st.idem.key).catch(() => undefined)
      let err = toAppError(code, error, request.url)
      if (err.keep) await root.db.write(err.keep)
      const headers: Record<string, string> = { 'x-request-id': st.id }
      if (code === 'NOT_FOUND' && st.level === undefined) {
        const allowed = routes.methodsFor(path)
        if (allowed.length) {
          err = new AppError('method_not_allowed', { message: `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}.` })
          headers.allow = allowed.join(', ')
        }
      }
      // A bug gets its stack; storage that is full, locked or away is an outage, said in one line.
      if (err.code === 'internal_server_error') {
        root.log.error('unexpected failure', { request_id: st.id, method: request.method, path: redactText(path), error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
      } else if (err.code === 'service_unavailable') {
        root.log.error('storage unavailable', { request_id: st.id, method: request.method, path: redactText(path), error: error instanceof Error ? error.message : String(error) })
      }
      if (!st.rate) {
        try {
          spendByAddress(root, st)
        } catch {
          // Already answering with an error; the window only decides the headers here.
        }
      }
      st.error = err
      if (signInFirst(request, st, err)) return new Response(null, { status: 303, headers: { ...headers, location: signInPath(request) } })
      return errorResponse(root.config.baseUrl, err, { ...headers, ...rateHeaders(st) })
    })
    // After the reply has left: the request log costs the caller no time.
    .onAfterResponse({ as: 'global' }, (c) => captureRequest(root, c))
}

export type Platform = ReturnType<typeof platform>
