import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { pauseKey } from '../src/api-keys/service'
import { accounts, consoleSessions, memberships, people, recoveryCodes, requestLogs } from '../src/db/tables'
import { expectError, harness, type Harness } from './support/harness'
import { PASSWORD, anotherSession, asCookie, cookieFrom, person, sessionCount, signIn, signUp, totp, type Person } from './support/people'
import { scenarios } from './support/scenarios'

const ORIGIN = { origin: 'http://mailroom.test' }
const ada = 'ada@people.test'
const missing = '01890000-0000-7000-8000-000000000000'

/** Sign-up of Ada (owner of the boot account), then `n` wrong passwords. */
const failedTimes = async (h: Harness, n: number, email = ada) => {
  await signUp(h, ada)
  for (let i = 0; i < n; i++) expectError(await h.call('POST', '/auth/sign-in', { key: null, body: { email, password: 'wrong password!' } }), 'invalid_credentials', 401)
}

/** Ada signed in through the API, with an enrolment started and its secret. */
const enrolling = async (h: Harness) => {
  await signUp(h, ada)
  const { cookie } = await signIn(h, ada)
  const secret = (await h.call('POST', '/auth/mfa/enroll', asCookie(cookie))).body.secret as string
  return { cookie, secret }
}

/** A test on a fresh app of its own. */
const withHarness = (fn: (h: Harness) => Promise<void>, env: Record<string, string> = {}) => async () => {
  const h = await harness(env)
  try {
    await fn(h)
  } finally {
    await h.close()
  }
}

/** A person enrolled, signed in again: the second factor is due. */
const pending = (h: Harness) => person(h, { mfa: 'pending' })

describe('Sessions: scenarios', () => {
  scenarios([
    // POST /auth/sign-in
    { name: 'signs in and sets an HttpOnly, SameSite=Lax, Secure session cookie', method: 'POST', path: '/auth/sign-in', as: 'none', setup: (h) => signUp(h, ada, { name: 'Ada' }),
      body: { email: 'ADA@people.test', password: PASSWORD }, status: 200,
      expect: { object: 'session', role: 'owner', two_factor: 'not_enrolled', person: { email: ada, name: 'Ada' }, expires_at: '2026-03-02T22:00:00.000Z' },
      check: async (r, up, h) => {
        expect(r.body.account_id).toBe(h.accountId)
        expect(r.body.accounts).toEqual([{ id: h.accountId, name: 'Default account', role: 'owner' }])
        const cookie = r.headers.get('set-cookie')!
        expect(cookie).toMatch(/^mailroom_session=[A-Za-z0-9]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Lax; Secure$/)
        const [row] = await h.root.db.q.select().from(consoleSessions)
        expect(row).toMatchObject({ personId: up.member.person_id, accountId: h.accountId, mfaVerifiedAt: null })
        expect(row.tokenHash).not.toContain(cookieFrom(r.headers).split('=')[1])
        expect((await h.call('GET', '/account', asCookie(cookieFrom(r.headers)))).status).toBe(200)
      } },
    { name: 'leaves Secure off over plain http on a loopback base URL', method: 'POST', path: '/auth/sign-in', as: 'none', env: { MAILROOM_BASE_URL: 'http://127.0.0.1:3000' }, setup: (h) => signUp(h, ada),
      body: { email: ada, password: PASSWORD }, status: 200,
      check: (r) => expect(r.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Lax$/) },
    { name: 'says the second factor is pending for an enrolled person', method: 'POST', path: '/auth/sign-in', as: 'none', setup: (h) => person(h, { mfa: 'pending' }),
      body: (p: Person) => ({ email: p.email, password: PASSWORD }), status: 200, expect: { two_factor: 'pending' } },
    { name: 'says enrolment is required when the account requires two-factor', method: 'POST', path: '/auth/sign-in', as: 'none', setup: async (h) => {
      const p = await person(h, { mfa: 'none' })
      await h.root.db.write((tx) => tx.update(accounts).set({ requireMfa: true }).where(eq(accounts.id, h.accountId)))
      return p
    }, body: (p: Person) => ({ email: p.email, password: PASSWORD }), status: 200, expect: { two_factor: 'enrolment_required' } },
    { name: 'signs in to the account named by account_id', method: 'POST', path: '/auth/sign-in', as: 'none', env: { MAILROOM_OPEN_SIGNUP: 'true' }, setup: async (h) => {
      await signUp(h, ada)
      const other = await signUp(h, 'bob@people.test', { account_name: 'Bob’s' })
      const p = await person(h, { email: 'carol@people.test', accountId: other.account.id, role: 'viewer' })
      await h.root.db.write((tx) => tx.insert(memberships).values({ id: h.root.ids.uuid(), accountId: h.accountId, personId: p.id, role: 'admin', createdAt: '2026-03-02T10:00:00.000Z', updatedAt: '2026-03-02T10:00:00.000Z' }))
      return { p, other: other.account.id }
    }, body: (c: any, h: Harness) => ({ email: c.p.email, password: PASSWORD, account_id: h.accountId }), status: 200, expect: { role: 'admin' },
      check: (r, _c, h) => {
        expect(r.body.account_id).toBe(h.accountId)
        expect(r.body.accounts.map((a: { role: string }) => a.role)).toEqual(['viewer', 'admin'])
      } },
    { name: 'refuses an account_id the person is not a member of', method: 'POST', path: '/auth/sign-in', as: 'none', setup: (h) => signUp(h, ada),
      body: { email: ada, password: PASSWORD, account_id: missing }, status: 422, code: 'invalid_parameter', check: async (_r, _c, h) => expect(await sessionCount(h)).toBe(0) },
    { name: 'refuses a wrong password', method: 'POST', path: '/auth/sign-in', as: 'none', setup: (h) => signUp(h, ada), body: { email: ada, password: 'not the password' }, status: 401, code: 'invalid_credentials',
      check: async (r, _c, h) => {
        expect(r.headers.get('set-cookie')).toBeNull()
        expect(await sessionCount(h)).toBe(0)
      } },
    { name: 'refuses an address nobody signed up with, in the same words', method: 'POST', path: '/auth/sign-in', as: 'none', setup: (h) => signUp(h, ada), body: { email: 'nobody@people.test', password: PASSWORD }, status: 401, code: 'invalid_credentials',
      expect: { message: 'The email address or the password is wrong.' } },
    { name: 'makes a check due after 5 failures for one address, even for the right password', method: 'POST', path: '/auth/sign-in', as: 'none', setup: (h) => failedTimes(h, 5),
      body: { email: ada, password: PASSWORD }, status: 400, code: 'sign_in_check_required', expect: { retry_after_seconds: 30 } },
    { name: 'makes a check due after 20 failures from one client address, whatever the address tried', method: 'POST', path: '/auth/sign-in', as: 'none', setup: async (h) => {
      await signUp(h, ada)
      for (let i = 0; i < 20; i++) await h.call('POST', '/auth/sign-in', { key: null, body: { email: `guess${i}@people.test`, password: 'wrong password!' } })
    }, body: { email: ada, password: PASSWORD }, status: 400, code: 'sign_in_check_required' },
    { name: 'refuses an address that is no address', method: 'POST', path: '/auth/sign-in', as: 'none', body: { email: 'ada', password: PASSWORD }, status: 400, code: 'validation_error' },
    { name: 'refuses a missing password', method: 'POST', path: '/auth/sign-in', as: 'none', body: { email: ada }, status: 400, code: 'validation_error' },

    // POST /auth/sign-out
    { name: 'ends the session and clears the cookie', method: 'POST', path: '/auth/sign-out', as: 'none', setup: (h) => person(h), headers: (p: Person) => ({ cookie: p.cookie, ...ORIGIN }), status: 200,
      check: async (r, p, h) => {
        expect(r.body).toEqual({ object: 'session', id: p.sessionId, deleted: true })
        expect(r.headers.get('set-cookie')).toMatch(/^mailroom_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax; Secure$/)
        expectError(await h.call('GET', '/account', asCookie(p.cookie)), 'session_required', 401)
      } },
    { name: 'works while the second factor is still due', method: 'POST', path: '/auth/sign-out', as: 'none', setup: pending, headers: (p: Person) => ({ cookie: p.cookie }), status: 200 },
    { name: 'leaves the person’s other sessions alone', method: 'POST', path: '/auth/sign-out', as: 'none', setup: async (h) => {
      const p = await person(h)
      return { p, other: await anotherSession(h, p, true) }
    },
      headers: (c: any) => ({ cookie: c.p.cookie }), status: 200, check: async (_r, c, h) => expect((await h.call('GET', '/account', asCookie(c.other))).status).toBe(200) },
    { name: 'refuses a state change from another site', method: 'POST', path: '/auth/sign-out', as: 'none', setup: (h) => person(h), headers: (p: Person) => ({ cookie: p.cookie, origin: 'https://evil.example' }), status: 403, code: 'csrf_origin_rejected',
      check: async (_r, p, h) => expect((await h.call('GET', '/account', asCookie(p.cookie))).status).toBe(200) },
    { name: 'refuses an API key', method: 'POST', path: '/auth/sign-out', status: 401, code: 'session_required' },
    { name: 'refuses a cookie of no session', method: 'POST', path: '/auth/sign-out', as: 'none', headers: { cookie: 'mailroom_session=nosuchsession' }, status: 401, code: 'session_required' },
    { name: 'refuses no credential', method: 'POST', path: '/auth/sign-out', as: 'none', status: 401, code: 'missing_api_key' },

    // POST /auth/mfa/enroll
    { name: 'hands out a TOTP secret and its otpauth URI, kept pending', method: 'POST', path: '/auth/mfa/enroll', as: 'none', setup: (h) => person(h, { mfa: 'none' }), headers: (p: Person) => ({ cookie: p.cookie }), status: 200,
      expect: { object: 'mfa_enrollment', algorithm: 'SHA1', digits: 6, period: 30 },
      check: async (r, p, h) => {
        expect(r.body.secret).toMatch(/^[A-Z2-7]{32}$/)
        expect(r.body.otpauth_uri).toBe(`otpauth://totp/Mailroom:${encodeURIComponent(p.email)}?issuer=Mailroom&secret=${r.body.secret}&algorithm=SHA1&digits=6&period=30`)
        const [row] = await h.root.db.q.select().from(people).where(eq(people.id, p.id))
        expect(row).toMatchObject({ totpPendingSecret: r.body.secret, totpSecret: null, mfaEnabledAt: null })
      } },
    { name: 'lets an enrolled person with a verified session enrol a new authenticator', method: 'POST', path: '/auth/mfa/enroll', as: { mfa: 'complete' }, status: 200, expect: { object: 'mfa_enrollment' } },
    { name: 'refuses an enrolled person whose session has not passed the second factor', method: 'POST', path: '/auth/mfa/enroll', as: 'none', setup: pending, headers: (p: Person) => ({ cookie: p.cookie }), status: 401, code: 'mfa_required',
      check: async (_r, p, h) => expect((await h.root.db.q.select().from(people).where(eq(people.id, p.id)))[0].totpPendingSecret).toBeNull() },
    { name: 'refuses an API key', method: 'POST', path: '/auth/mfa/enroll', status: 401, code: 'session_required' },

    // POST /auth/mfa/verify
    { name: 'completes an enrolment and answers ten recovery codes once', method: 'POST', path: '/auth/mfa/verify', as: 'none', setup: enrolling, headers: (c: any) => ({ cookie: c.cookie }),
      body: (c: any, h: Harness) => ({ code: totp(h, c.secret) }), status: 200, expect: { object: 'session', two_factor: 'complete' },
      check: async (r, c, h) => {
        expect(r.body.recovery_codes).toHaveLength(10)
        for (const code of r.body.recovery_codes) expect(code).toMatch(/^[0-9a-f]{5}-[0-9a-f]{5}$/)
        const [row] = await h.root.db.q.select().from(people)
        expect(row).toMatchObject({ totpSecret: c.secret, totpPendingSecret: null, mfaEnabledAt: '2026-03-02T10:00:00.000Z' })
        const stored = await h.root.db.q.select().from(recoveryCodes)
        expect(stored).toHaveLength(10)
        expect(JSON.stringify(stored)).not.toContain(r.body.recovery_codes[0])
        expect((await h.root.db.q.select().from(consoleSessions))[0].mfaVerifiedAt).toBe('2026-03-02T10:00:00.000Z')
      } },
    { name: 'passes the second factor of a pending session', method: 'POST', path: '/auth/mfa/verify', as: 'none', setup: pending, headers: (p: Person) => ({ cookie: p.cookie }),
      body: (p: Person, h: Harness) => ({ code: totp(h, p.secret!) }), status: 200, expect: { two_factor: 'complete' },
      check: async (r, p, h) => {
        expect(r.body.recovery_codes).toBeUndefined()
        expect((await h.call('GET', '/account', asCookie(p.cookie))).status).toBe(200)
      } },
    { name: 'accepts a code from the step before (clock drift)', method: 'POST', path: '/auth/mfa/verify', as: 'none', setup: pending, headers: (p: Person) => ({ cookie: p.cookie }),
      body: (p: Person, h: Harness) => ({ code: totp(h, p.secret!, -30_000) }), status: 200 },
    { name: 'refuses a code from two steps ago', method: 'POST', path: '/auth/mfa/verify', as: 'none', setup: pending, headers: (p: Person) => ({ cookie: p.cookie }),
      body: (p: Person, h: Harness) => ({ code: totp(h, p.secret!, -60_000) }), status: 401, code: 'invalid_credentials' },
    { name: 'refuses a code already used once', method: 'POST', path: '/auth/mfa/verify', as: 'none', setup: async (h) => {
      const p = await pending(h)
      const code = totp(h, p.secret!)
      expect((await h.call('POST', '/auth/mfa/verify', { ...asCookie(p.cookie), body: { code } })).status).toBe(200)
      return { p, other: await anotherSession(h, p), code }
    }, headers: (c: any) => ({ cookie: c.other }), body: (c: any) => ({ code: c.code }), status: 401, code: 'invalid_credentials' },
    { name: 'refuses a wrong code and leaves the session pending', method: 'POST', path: '/auth/mfa/verify', as: 'none', setup: pending, headers: (p: Person) => ({ cookie: p.cookie }),
      body: { code: '000000' }, status: 401, code: 'invalid_credentials', check: async (_r, p, h) => expectError(await h.call('GET', '/account', asCookie(p.cookie)), 'mfa_required', 401) },
    { name: 'makes a check due after 5 wrong codes, even for a right one', method: 'POST', path: '/auth/mfa/verify', as: 'none', setup: async (h) => {
      const p = await pending(h)
      for (let i = 0; i < 5; i++) expectError(await h.call('POST', '/auth/mfa/verify', { ...asCookie(p.cookie), body: { code: `12345${i}` } }), 'invalid_credentials', 401)
      return p
    }, headers: (p: Person) => ({ cookie: p.cookie }), body: (p: Person, h: Harness) => ({ code: totp(h, p.secret!) }), status: 400, code: 'sign_in_check_required', expect: { retry_after_seconds: 30 } },
    { name: 'refuses a code when nothing awaits confirmation', method: 'POST', path: '/auth/mfa/verify', as: { mfa: 'none' }, body: { code: '123456' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a code too short to be one', method: 'POST', path: '/auth/mfa/verify', as: { mfa: 'none' }, body: { code: '123' }, status: 400, code: 'validation_error' },
    { name: 'refuses an API key', method: 'POST', path: '/auth/mfa/verify', body: { code: '123456' }, status: 401, code: 'session_required' },
  ])
})

describe('Sessions: the sign-in check', () => {
  test('waits 30 s after the fifth failure, doubles with each further one, and forgets after success', withHarness(async (h) => {
    await failedTimes(h, 5)
    const attempt = (password: string) => h.call('POST', '/auth/sign-in', { key: null, body: { email: ada, password } })
    expect((await attempt(PASSWORD)).body.retry_after_seconds).toBe(30)
    h.clock.advance(20_000)
    expect((await attempt(PASSWORD)).body.retry_after_seconds).toBe(10)
    h.clock.advance(10_000)
    expectError(await attempt('still wrong!'), 'invalid_credentials', 401)
    expect((await attempt(PASSWORD)).body.retry_after_seconds).toBe(60)
    h.clock.advance(60_000)
    expect((await attempt(PASSWORD)).status).toBe(200)
    // A success clears the address's count: the next failure is free again.
    expectError(await attempt('wrong again!'), 'invalid_credentials', 401)
    expect((await attempt(PASSWORD)).status).toBe(200)
  }))

  test('an hour without failures forgets them', withHarness(async (h) => {
    await failedTimes(h, 5)
    h.clock.advance(3_600_001)
    expect((await h.call('POST', '/auth/sign-in', { key: null, body: { email: ada, password: PASSWORD } })).status).toBe(200)
  }))

  test('a recovery code passes the second factor once', withHarness(async (h) => {
    const { cookie, secret } = await enrolling(h)
    const codes = (await h.call('POST', '/auth/mfa/verify', { ...asCookie(cookie), body: { code: totp(h, secret) } })).body.recovery_codes as string[]
    const { cookie: again, session } = await signIn(h, ada)
    expect(session.two_factor).toBe('pending')
    expect((await h.call('POST', '/auth/mfa/verify', { ...asCookie(again), body: { code: codes[3].toUpperCase() } })).body.two_factor).toBe('complete')
    const third = await signIn(h, ada)
    expectError(await h.call('POST', '/auth/mfa/verify', { ...asCookie(third.cookie), body: { code: codes[3] } }), 'invalid_credentials', 401)
    expect((await h.call('POST', '/auth/mfa/verify', { ...asCookie(third.cookie), body: { code: codes[4].replace('-', '') } })).status).toBe(200)
  }))

  test('a new authenticator replaces the old one only once confirmed', withHarness(async (h) => {
    const p = await person(h)
    const fresh = (await h.call('POST', '/auth/mfa/enroll', asCookie(p.cookie))).body.secret as string
    // Unconfirmed: the old authenticator still signs in.
    const s1 = await anotherSession(h, p)
    expect((await h.call('POST', '/auth/mfa/verify', { ...asCookie(s1), body: { code: totp(h, p.secret!) } })).status).toBe(200)
    h.clock.advance(30_000)
    const confirmed = await h.call('POST', '/auth/mfa/verify', { ...asCookie(p.cookie), body: { code: totp(h, fresh) } })
    expect(confirmed.body.recovery_codes).toHaveLength(10)
    h.clock.advance(30_000)
    const s2 = await anotherSession(h, p)
    expectError(await h.call('POST', '/auth/mfa/verify', { ...asCookie(s2), body: { code: totp(h, p.secret!) } }), 'invalid_credentials', 401)
    expect((await h.call('POST', '/auth/mfa/verify', { ...asCookie(s2), body: { code: totp(h, fresh) } })).status).toBe(200)
  }))
})

describe('Sessions as credentials', () => {
  test('a full route takes a session as it takes a full_access key', withHarness(async (h) => {
    const p = await person(h, { role: 'developer' })
    const made = await h.call('POST', '/topics', { ...asCookie(p.cookie, ORIGIN), body: { name: 'News', default_subscription: 'opt_in' } })
    expect(made.status).toBe(201)
    expect(made.headers.get('ratelimit-limit')).toBe('600')
    expect((await h.call('GET', `/topics/${made.body.id}`)).status).toBe(200)
    // A send route takes it too.
    expect((await h.call('POST', '/emails', { ...asCookie(p.cookie), body: { from: 'a@unverified.dev', to: 'delivered@simulator.test', subject: 'Hi', text: 'Hi' } })).status).toBe(200)
  }))

  test('a bearer key wins over a cookie sent beside it', withHarness(async (h) => {
    const p = await person(h, { role: 'viewer' })
    const r = await h.call('POST', '/topics', { headers: { cookie: p.cookie }, body: { name: 'News', default_subscription: 'opt_in' } })
    expect(r.status).toBe(201)
    expectError(await h.call('POST', '/auth/sign-out', { headers: { cookie: p.cookie } }), 'session_required', 401)
  }))

  test('viewers read but change nothing; developers change all but keys and settings', withHarness(async (h) => {
    const viewer = await person(h, { role: 'viewer' })
    expect((await h.call('GET', '/topics', asCookie(viewer.cookie))).status).toBe(200)
    expectError(await h.call('POST', '/topics', { ...asCookie(viewer.cookie), body: { name: 'News', default_subscription: 'opt_in' } }), 'insufficient_role', 403)
    const dev = await person(h, { role: 'developer' })
    expectError(await h.call('POST', '/api-keys', { ...asCookie(dev.cookie), body: { name: 'agent' } }), 'insufficient_role', 403)
    expectError(await h.call('PATCH', '/account', { ...asCookie(dev.cookie), body: { name: 'Mine now' } }), 'insufficient_role', 403)
    expect((await h.call('GET', '/api-keys', asCookie(dev.cookie))).status).toBe(200)
    const admin = await person(h, { role: 'admin' })
    const key = await h.call('POST', '/api-keys', { ...asCookie(admin.cookie), body: { name: 'agent' } })
    expect(key.status).toBe(201)
    expect(key.body.token).toMatch(/^mr_/)
  }))

  test('a state change carrying the cookie from another origin is refused; reads and same-origin changes are not', withHarness(async (h) => {
    const p = await person(h)
    const topic = (origin: Record<string, string>) => h.call('POST', '/topics', { ...asCookie(p.cookie, origin), body: { name: `T${Math.random()}`, default_subscription: 'opt_in' } })
    expectError(await topic({ origin: 'https://evil.example' }), 'csrf_origin_rejected', 403)
    expectError(await topic({ origin: 'http://mailroom.test:8080' }), 'csrf_origin_rejected', 403)
    expectError(await topic({ origin: 'null' }), 'csrf_origin_rejected', 403)
    expectError(await topic({ 'sec-fetch-site': 'cross-site' }), 'csrf_origin_rejected', 403)
    expectError(await topic({ 'sec-fetch-site': 'same-site' }), 'csrf_origin_rejected', 403)
    expect((await h.call('GET', '/topics')).body.data).toEqual([])
    expect((await topic(ORIGIN)).status).toBe(201)
    expect((await topic({ 'sec-fetch-site': 'same-origin' })).status).toBe(201)
    expect((await topic({})).status).toBe(201)
    expect((await h.call('GET', '/topics', asCookie(p.cookie, { origin: 'https://evil.example' }))).status).toBe(200)
  }))

  test('a session ends when it expires, and the hourly job deletes it then', withHarness(async (h) => {
    const p = await person(h)
    h.clock.advance(12 * 3_600_000 - 1)
    expect((await h.call('GET', '/account', asCookie(p.cookie))).status).toBe(200)
    await h.scheduler.runNow('purge-console-sessions')
    expect(await sessionCount(h)).toBe(1)
    h.clock.advance(1)
    expectError(await h.call('GET', '/account', asCookie(p.cookie)), 'session_required', 401)
    await h.scheduler.runNow('purge-console-sessions')
    expect(await sessionCount(h)).toBe(0)
  }))

  test('MAILROOM_SESSION_HOURS sets how long a session lasts', withHarness(async (h) => {
    await signUp(h, ada)
    const { cookie, session } = await signIn(h, ada)
    expect(session.expires_at).toBe('2026-03-02T12:00:00.000Z')
    h.clock.advance(2 * 3_600_000)
    expectError(await h.call('GET', '/account', asCookie(cookie)), 'session_required', 401)
  }, { MAILROOM_SESSION_HOURS: '2' }))

  test('a pending second factor blocks everything but its own step', withHarness(async (h) => {
    const p = await pending(h)
    expectError(await h.call('GET', '/account', asCookie(p.cookie)), 'mfa_required', 401)
    expectError(await h.call('GET', '/topics', asCookie(p.cookie)), 'mfa_required', 401)
    expectError(await h.call('POST', '/invite/sometoken/accept', asCookie(p.cookie)), 'mfa_required', 401)
    expect((await h.call('POST', '/auth/mfa/verify', { ...asCookie(p.cookie), body: { code: totp(h, p.secret!) } })).status).toBe(200)
    expect((await h.call('GET', '/account', asCookie(p.cookie))).status).toBe(200)
  }))

  test('an account that requires two-factor sends members without it to enrol first', withHarness(async (h) => {
    const p = await person(h, { mfa: 'none' })
    await h.root.db.write((tx) => tx.update(accounts).set({ requireMfa: true }).where(eq(accounts.id, h.accountId)))
    expectError(await h.call('GET', '/team', asCookie(p.cookie)), 'mfa_required', 401)
    const secret = (await h.call('POST', '/auth/mfa/enroll', asCookie(p.cookie))).body.secret
    expect((await h.call('POST', '/auth/mfa/verify', { ...asCookie(p.cookie), body: { code: totp(h, secret) } })).status).toBe(200)
    expect((await h.call('GET', '/team', asCookie(p.cookie))).status).toBe(200)
  }))

  test('enrolling ends password-only access for the person’s other sessions', withHarness(async (h) => {
    const p = await person(h, { mfa: 'none' })
    const other = await anotherSession(h, p)
    const secret = (await h.call('POST', '/auth/mfa/enroll', asCookie(p.cookie))).body.secret
    expect((await h.call('GET', '/account', asCookie(other))).status).toBe(200)
    await h.call('POST', '/auth/mfa/verify', { ...asCookie(p.cookie), body: { code: totp(h, secret) } })
    expectError(await h.call('GET', '/account', asCookie(other)), 'mfa_required', 401)
  }))

  test('the request log keeps neither TOTP secrets, recovery codes, passwords nor invitation tokens', withHarness(async (h) => {
    const p = await person(h, { mfa: 'none' })
    const enrol = await h.call('POST', '/auth/mfa/enroll', asCookie(p.cookie))
    const verified = await h.call('POST', '/auth/mfa/verify', { ...asCookie(p.cookie), body: { code: totp(h, enrol.body.secret) } })
    const invite = await h.call('POST', '/team/invites', { ...asCookie(p.cookie), body: { email: 'bob@people.test' } })
    // The log takes a reply after it has left.
    await new Promise((resolve) => setImmediate(resolve))
    await h.scheduler.runNow('flush-request-logs')
    const logs = JSON.stringify(await h.root.db.q.select().from(requestLogs))
    for (const path of ['/auth/mfa/enroll', '/auth/mfa/verify', '/team/invites']) expect(logs).toContain(path)
    for (const secret of [enrol.body.secret, ...verified.body.recovery_codes, invite.body.token, p.cookie.split('=')[1]]) expect(logs).not.toContain(secret)
  }))

  test('a person-level decision needs a session that passed two-factor, and refuses a key', withHarness(async (h) => {
    const key = await h.key({ name: 'runaway' })
    await pauseKey(h.root, key.id, 'sent too fast')
    expectError(await h.call('POST', `/api-keys/${key.id}/resume`), 'human_action_required', 403)
    const password = await person(h, { mfa: 'none' })
    expectError(await h.call('POST', `/api-keys/${key.id}/resume`, asCookie(password.cookie)), 'mfa_required', 401)
    const dev = await person(h, { role: 'developer' })
    expectError(await h.call('POST', `/api-keys/${key.id}/resume`, asCookie(dev.cookie)), 'insufficient_role', 403)
    const admin = await person(h, { role: 'admin' })
    const resumed = await h.call('POST', `/api-keys/${key.id}/resume`, asCookie(admin.cookie, ORIGIN))
    expect(resumed.status).toBe(200)
    expect(resumed.body.paused_at).toBeNull()
  }))
})
