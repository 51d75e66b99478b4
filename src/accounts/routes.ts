import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import * as s from './schema'
import * as svc from './service'

const tag = 'accounts'

export const signUpRoutes = (platform: Platform) =>
  new Elysia({ name: 'sign-up', prefix: '/accounts' })
    .use(platform)
    .post('', async ({ deps, body, set }) => ((set.status = 201), svc.signUp(deps, body)), {
      ...op({
        id: 'signUp',
        summary: 'Sign up: a login, and a place in an account',
        description:
          'The first person on an install becomes owner of its first account (the one whose API key the first start printed). After that, sign-up takes the `invite_token` of an invitation to the same address and joins its account, unless the operator set MAILROOM_OPEN_SIGNUP, which gives each sign-up an account of its own. Then sign in with POST /auth/sign-in.',
        tag,
        auth: 'public',
        method: 'POST',
        body: true,
        errors: ['already_in_account', 'invite_not_valid', 'invite_email_mismatch', 'seat_limit_reached'],
      }),
      body: s.SignUp,
      response: { 201: s.SignedUp },
    })

export const accountRoutes = (platform: Platform) =>
  new Elysia({ name: 'account', prefix: '/account' })
    .use(platform)
    .get('', ({ deps, actor }) => svc.getAccount(deps, actor), {
      ...op({ id: 'getAccount', summary: 'The account: name, settings, plan and trust standing', tag, auth: 'full', method: 'GET' }),
      response: { 200: s.Account },
    })
    .patch('', ({ deps, actor, body }) => svc.updateAccount(deps, actor, body), {
      ...op({
        id: 'updateAccount',
        summary: 'Rename the account or require two-factor of every member',
        description: 'With a session, owners and admins only. With `require_mfa`, every member’s session answers `mfa_required` until they enrol and verify.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
      }),
      body: s.UpdateAccount,
      response: { 200: s.Account },
    })
