import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { stateOf } from '../http/state'
import { clearedSessionCookie, sessionCookie } from './cookie'
import * as s from './schema'
import * as svc from './service'

const tag = 'accounts'

const clientOf = (request: Request) => stateOf(request)?.address ?? 'local'

export const sessionRoutes = (platform: Platform) =>
  new Elysia({ name: 'sessions', prefix: '/auth' })
    .use(platform)
    .post(
      '/sign-in',
      async ({ deps, body, request, set }) => {
        const r = await svc.signIn(deps, body, clientOf(request))
        set.headers['set-cookie'] = sessionCookie(deps.config.baseUrl, r.token, r.maxAge)
        return r.session
      },
      {
        ...op({
          id: 'signIn',
          summary: 'Sign in with email and password; sets the session cookie',
          description:
            'Sets `mailroom_session` (HttpOnly, SameSite=Lax, Secure except over plain http on a loopback host). When the person enrolled in two-factor authentication, `two_factor` is `pending` and POST /auth/mfa/verify comes next. After 5 failures for one address (or 20 from one client address) a check is due: each attempt then waits `retry_after_seconds` (30 s, doubling with each failure up to 15 minutes; an hour without failures forgets them).',
          tag,
          auth: 'public',
          method: 'POST',
          body: true,
          errors: ['invalid_credentials', 'sign_in_check_required', 'invalid_parameter'],
        }),
        body: s.SignIn,
        response: { 200: s.Session },
      },
    )
    .post(
      '/sign-out',
      async ({ deps, actor, set }) => {
        set.headers['set-cookie'] = clearedSessionCookie(deps.config.baseUrl)
        return svc.signOut(deps, actor)
      },
      {
        ...op({ id: 'signOut', summary: 'End this console session and clear its cookie', tag, auth: 'session', method: 'POST' }),
        response: { 200: s.SignedOut },
      },
    )
    .post('/mfa/enroll', ({ deps, actor }) => svc.enrollMfa(deps, actor), {
      ...op({
        id: 'enrollMfa',
        summary: 'Start TOTP enrolment: a new secret and its otpauth URI',
        description: 'The enrolment completes when POST /auth/mfa/verify gets a code of the new secret. A person already enrolled needs a session that passed two-factor (a new authenticator replaces the old only once confirmed).',
        tag,
        auth: 'session',
        method: 'POST',
        errors: ['mfa_required'],
      }),
      response: { 200: s.MfaEnrollment },
    })
    .post('/mfa/verify', ({ deps, actor, body }) => svc.verifyMfa(deps, actor, body), {
      ...op({
        id: 'verifyMfa',
        summary: 'Confirm a TOTP or recovery code: completes enrolment or sign-in',
        description: 'Completing an enrolment answers ten recovery codes, shown this once. Each code works once; 5 wrong codes make the sign-in check due (`sign_in_check_required`).',
        tag,
        auth: 'session',
        method: 'POST',
        body: true,
        errors: ['invalid_credentials', 'sign_in_check_required', 'invalid_parameter'],
      }),
      body: s.VerifyMfa,
      response: { 200: s.VerifiedSession },
    })
