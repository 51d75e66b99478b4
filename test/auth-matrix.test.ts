import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { buildApp } from '../src/app'
import type { ErrorCode } from '../src/errors/catalogue'
import { expectError, harness, type Harness } from './support/harness'
import { anotherSession, person } from './support/people'

/**
 * Generated from the mounted routes: every route's auth level is checked with no
 * key, an unknown key, a revoked key and a sending-only key, so a new route
 * cannot forget its guard.
 */
let h: Harness
let keys: { sending: string; revoked: string }
beforeAll(async () => {
  h = await harness({ MAILROOM_RATE_LIMIT: '100000', MAILROOM_PUBLIC_RATE_LIMIT: '100000' })
  const sending = await h.key({ name: 'sender', permission: 'sending_access' })
  const revoked = await h.key({ name: 'revoked' })
  await h.call('DELETE', `/api-keys/${revoked.id}`)
  keys = { sending: sending.token, revoked: revoked.token }
})
afterAll(() => h.close())

const routes = () =>
  (h.app.routes as { method: string; path: string; hooks: { detail?: { hide?: boolean; 'x-auth'?: string } } }[])
    .filter((r) => !r.hooks.detail?.hide)
    .map((r) => ({ method: r.method, path: r.path.replace(/:[^/]+/g, '01890000-0000-7000-8000-000000000001'), auth: r.hooks.detail?.['x-auth'] }))

const send = (method: string, path: string, key: string | null) => h.call(method, path, { key, ...(method === 'GET' ? {} : { body: {} }) })

describe('auth matrix', () => {
  test('every route declares its auth level', () => {
    for (const r of routes()) expect(['public', 'send', 'full', 'session', 'person'], `${r.method} ${r.path}`).toContain(r.auth ?? 'none')
  })

  test('non-public routes refuse no key, an unknown key and a revoked key', async () => {
    for (const r of routes().filter((r) => r.auth !== 'public')) {
      expectError(await send(r.method, r.path, null), 'missing_api_key', 401)
      expectError(await send(r.method, r.path, 'mr_unknownunknownunknownunknownunknownunkn'), 'invalid_api_key', 403)
      expectError(await send(r.method, r.path, keys.revoked), 'invalid_api_key', 403)
    }
  })

  test('management routes refuse a sending-only key; send routes accept it', async () => {
    for (const r of routes()) {
      const res = await send(r.method, r.path, keys.sending)
      const expected: Record<string, [ErrorCode, number] | null> = {
        full: ['restricted_api_key', 403],
        session: ['session_required', 401],
        person: ['human_action_required', 403],
        send: null,
        public: null,
      }
      const want = expected[r.auth!]
      if (want) expectError(res, want[0], want[1])
      else expect(['missing_api_key', 'invalid_api_key', 'restricted_api_key'], `${r.method} ${r.path}`).not.toContain(res.body?.code)
    }
  })

  test('session and person routes refuse even a full_access key', async () => {
    for (const r of routes().filter((r) => r.auth === 'session' || r.auth === 'person')) {
      const res = await send(r.method, r.path, h.token)
      if (r.auth === 'session') expectError(res, 'session_required', 401)
      else expectError(res, 'human_action_required', 403)
    }
  })

  test('every non-public route takes a real console session (an owner’s, two-factor done) as its credential', async () => {
    const owner = await person(h, { role: 'owner', email: 'matrix-owner@people.test' })
    const refusals = ['missing_api_key', 'invalid_api_key', 'restricted_api_key', 'session_required', 'human_action_required', 'mfa_required', 'csrf_origin_rejected', 'insufficient_role']
    for (const r of routes().filter((r) => r.auth !== 'public')) {
      // A session of its own for each route: sign-out ends the one it is given.
      const cookie = await anotherSession(h, owner, true)
      const res = await h.call(r.method, r.path, { key: null, headers: { cookie, origin: 'http://mailroom.test' }, ...(r.method === 'GET' ? {} : { body: {} }) })
      expect(refusals, `${r.method} ${r.path} (${r.auth}): ${JSON.stringify(res.body)}`).not.toContain(res.body?.code)
    }
  })

  test('session and person routes refuse a session that still owes its second factor', async () => {
    const owner = await person(h, { role: 'owner', mfa: 'pending', email: 'matrix-pending@people.test' })
    const step = ['/auth/mfa/enroll', '/auth/mfa/verify', '/auth/sign-out']
    for (const r of routes().filter((r) => (r.auth === 'session' || r.auth === 'person') && !step.includes(r.path))) {
      expectError(await h.call(r.method, r.path, { key: null, headers: { cookie: owner.cookie }, ...(r.method === 'GET' ? {} : { body: {} }) }), 'mfa_required', 401)
    }
  })

  test('public routes need no key', async () => {
    for (const r of routes().filter((r) => r.auth === 'public' && r.method === 'GET')) {
      expect((await send(r.method, r.path, null)).status, r.path).toBeLessThan(400)
    }
  })
})

test('buildApp is pure: building twice gives the same routes', () => {
  const again = buildApp(h.root, h.runtime)
  expect(again.routes.map((r) => `${r.method} ${r.path}`)).toEqual(h.app.routes.map((r) => `${r.method} ${r.path}`))
})
