import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { accounts, auditEntries, invites, memberships, people } from '../src/db/tables'
import { expectError, harness, type Harness } from './support/harness'
import { PASSWORD, asCookie, person, signIn, signUp } from './support/people'
import { scenarios } from './support/scenarios'

const ada = 'ada@people.test'
const bob = 'bob@people.test'

/** Ada is the first person (owner); she invites `email` and passes the token on. */
const invited = async (h: Harness, email = bob, role = 'developer') => {
  await signUp(h, ada)
  const { cookie } = await signIn(h, ada)
  const r = await h.call('POST', '/team/invites', { ...asCookie(cookie), body: { email, role } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return { token: r.body.token as string, inviteId: r.body.id as string, cookie }
}

const nothingWritten = async (h: Harness, people_: number) => {
  expect(await h.root.db.q.select().from(people)).toHaveLength(people_)
}

describe('Accounts: scenarios', () => {
  scenarios([
    // POST /accounts
    { name: 'makes the first person owner of the account the first start made', method: 'POST', path: '/accounts', as: 'none',
      body: { email: 'Ada@People.test', password: PASSWORD, name: 'Ada Lovelace', account_name: 'Analytical Engines' }, status: 201,
      expect: { object: 'sign_up', account: { object: 'account', name: 'Analytical Engines', require_mfa: false }, member: { object: 'member', email: ada, name: 'Ada Lovelace', role: 'owner', two_factor_enabled: false } },
      check: async (r, _c, h) => {
        expect(r.body.account.id).toBe(h.accountId)
        expect(r.body.member.account_id).toBe(h.accountId)
        const [row] = await h.root.db.q.select().from(people)
        expect(row.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
        expect(JSON.stringify(row)).not.toContain(PASSWORD)
        expect(await Bun.password.verify(PASSWORD, row.passwordHash)).toBe(true)
        // The boot key keeps working beside the new owner.
        expect((await h.call('GET', '/account')).body.name).toBe('Analytical Engines')
        const audit = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resource, 'member'))
        expect(audit).toHaveLength(1)
        expect(JSON.stringify(audit)).not.toContain('argon2')
      } },
    { name: 'keeps the first account’s name when none is given', method: 'POST', path: '/accounts', as: 'none', body: { email: ada, password: PASSWORD }, status: 201,
      expect: { account: { name: 'Default account' }, member: { name: null, role: 'owner' } } },
    { name: 'refuses a second person without an invitation', method: 'POST', path: '/accounts', as: 'none', setup: (h) => signUp(h, ada), body: { email: bob, password: PASSWORD }, status: 422, code: 'invite_not_valid',
      check: (_r, _c, h) => nothingWritten(h, 1) },
    { name: 'gives each sign-up an account of its own when the operator opened sign-up', method: 'POST', path: '/accounts', as: 'none', env: { MAILROOM_OPEN_SIGNUP: 'true' }, setup: (h) => signUp(h, ada),
      body: { email: bob, password: PASSWORD, name: 'Bob' }, status: 201, expect: { account: { name: 'Bob' }, member: { role: 'owner', email: bob } },
      check: async (r, _c, h) => {
        expect(r.body.account.id).not.toBe(h.accountId)
        expect(await h.root.db.q.select().from(accounts)).toHaveLength(2)
        const audit = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.accountId, r.body.account.id))
        expect(audit.map((a) => `${a.resource}.${a.action}:${a.actorKind}`).sort()).toEqual(['account.created:system', 'member.created:system', 'trust_standing.changed:system'])
      } },
    { name: 'joins the invitation’s account with its role', method: 'POST', path: '/accounts', as: 'none', setup: (h) => invited(h, bob, 'viewer'),
      body: (c: any) => ({ email: 'BOB@people.test', password: PASSWORD, invite_token: c.token }), status: 201, expect: { member: { email: bob, role: 'viewer' } },
      check: async (r, c, h) => {
        expect(r.body.account.id).toBe(h.accountId)
        const [row] = await h.root.db.q.select().from(invites).where(eq(invites.id, c.inviteId))
        expect(row).toMatchObject({ status: 'accepted', acceptedBy: r.body.member.person_id })
        expect((await signIn(h, bob)).session.role).toBe('viewer')
      } },
    { name: 'joins by invitation even when sign-up is open', method: 'POST', path: '/accounts', as: 'none', env: { MAILROOM_OPEN_SIGNUP: 'true' }, setup: (h) => invited(h),
      body: (c: any) => ({ email: bob, password: PASSWORD, invite_token: c.token }), status: 201, check: async (r, _c, h) => {
        expect(r.body.account.id).toBe(h.accountId)
        expect(await h.root.db.q.select().from(accounts)).toHaveLength(1)
      } },
    { name: 'refuses an invitation to another address and keeps nothing', method: 'POST', path: '/accounts', as: 'none', setup: (h) => invited(h),
      body: (c: any) => ({ email: 'carol@people.test', password: PASSWORD, invite_token: c.token }), status: 403, code: 'invite_email_mismatch',
      check: async (_r, c, h) => {
        await nothingWritten(h, 1)
        expect((await h.root.db.q.select().from(invites).where(eq(invites.id, c.inviteId)))[0].status).toBe('pending')
      } },
    { name: 'refuses an expired invitation', method: 'POST', path: '/accounts', as: 'none', setup: async (h) => {
      const c = await invited(h)
      h.clock.advance(7 * 24 * 3_600_000)
      return c
    }, body: (c: any) => ({ email: bob, password: PASSWORD, invite_token: c.token }), status: 422, code: 'invite_not_valid', expect: { message: 'This invitation expired at 2026-03-09T10:00:00.000Z.' } },
    { name: 'refuses a token no invitation has', method: 'POST', path: '/accounts', as: 'none', setup: (h) => invited(h), body: { email: bob, password: PASSWORD, invite_token: 'made-up' }, status: 422, code: 'invite_not_valid',
      check: (_r, _c, h) => nothingWritten(h, 1) },
    { name: 'refuses an invitation when the seats are taken meanwhile', method: 'POST', path: '/accounts', as: 'none', env: { MAILROOM_SEAT_LIMIT: '2' }, setup: async (h) => {
      const c = await invited(h)
      await person(h, { role: 'viewer' })
      return c
    }, body: (c: any) => ({ email: bob, password: PASSWORD, invite_token: c.token }), status: 422, code: 'seat_limit_reached', check: (_r, _c, h) => nothingWritten(h, 2) },
    { name: 'refuses an address that has a login already', method: 'POST', path: '/accounts', as: 'none', setup: (h) => signUp(h, ada), body: { email: 'ADA@people.test', password: 'another password' }, status: 409, code: 'already_in_account',
      check: (_r, _c, h) => nothingWritten(h, 1) },
    { name: 'refuses a password under 10 characters', method: 'POST', path: '/accounts', as: 'none', body: { email: ada, password: 'short' }, status: 400, code: 'validation_error',
      check: (r) => expect(r.body.details[0].field).toBe('password') },
    { name: 'refuses an address that is no address', method: 'POST', path: '/accounts', as: 'none', body: { email: 'ada@', password: PASSWORD }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown field', method: 'POST', path: '/accounts', as: 'none', body: { email: ada, password: PASSWORD, role: 'owner' }, status: 400, code: 'validation_error' },

    // GET /account
    { name: 'answers the account to a full_access key, with no plan (billing off) and the operator’s trusted standing', method: 'GET', path: '/account', status: 200, expect: { object: 'account', name: 'Default account', require_mfa: false, created_at: '2026-03-02T10:00:00.000Z', plan: null, standing: { level: 'trusted', state: 'active' } },
      check: (r, _c, h) => expect(r.body.id).toBe(h.accountId) },
    { name: 'answers the account to a viewer’s session', method: 'GET', path: '/account', as: { role: 'viewer' }, status: 200, expect: { object: 'account' } },
    { name: 'answers each key its own account', method: 'GET', path: '/account', as: 'none', setup: (h) => h.otherAccount(), headers: (o: any) => ({ authorization: `Bearer ${o.token}` }), status: 200, expect: { name: 'Other' } },
    { name: 'refuses a sending-only key', method: 'GET', path: '/account', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no credential', method: 'GET', path: '/account', as: 'none', status: 401, code: 'missing_api_key' },

    // PATCH /account
    { name: 'renames the account with a full_access key, and audits it', method: 'PATCH', path: '/account', setup: async (h) => h.clock.advance(60_000), body: { name: 'Acme' }, status: 200,
      expect: { name: 'Acme', updated_at: '2026-03-02T10:01:00.000Z', created_at: '2026-03-02T10:00:00.000Z' },
      check: async (_r, _c, h) => {
        expect((await h.call('GET', '/account')).body.name).toBe('Acme')
        const [a] = await h.root.db.q.select().from(auditEntries).where(and(eq(auditEntries.resource, 'account'), eq(auditEntries.action, 'updated')))
        expect(a).toMatchObject({ action: 'updated', actorKind: 'key', before: { name: 'Default account' }, after: { name: 'Acme' } })
      } },
    { name: 'lets an admin require two-factor of every member', method: 'PATCH', path: '/account', as: { role: 'admin' }, body: { require_mfa: true }, status: 200, expect: { require_mfa: true },
      check: async (_r, _c, h) => {
        const lax = await person(h, { role: 'developer', mfa: 'none' })
        expectError(await h.call('GET', '/topics', asCookie(lax.cookie)), 'mfa_required', 401)
        // Keys are not people: the requirement does not touch them.
        expect((await h.call('GET', '/topics')).status).toBe(200)
      } },
    { name: 'refuses to require two-factor from a session that has not passed it', method: 'PATCH', path: '/account', as: { role: 'owner', mfa: 'none' }, body: { require_mfa: true }, status: 401, code: 'mfa_required',
      check: async (_r, _c, h) => expect((await h.call('GET', '/account')).body.require_mfa).toBe(false) },
    { name: 'refuses a developer', method: 'PATCH', path: '/account', as: { role: 'developer' }, body: { name: 'Mine' }, status: 403, code: 'insufficient_role',
      check: async (_r, _c, h) => expect((await h.call('GET', '/account')).body.name).toBe('Default account') },
    { name: 'refuses an empty name', method: 'PATCH', path: '/account', body: { name: '' }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'PATCH', path: '/account', as: 'sending', body: { name: 'x' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses a change from another site with the cookie', method: 'PATCH', path: '/account', as: 'none', setup: (h) => person(h), headers: (p: any) => ({ cookie: p.cookie, origin: 'https://evil.example' }), body: { name: 'Pwned' }, status: 403, code: 'csrf_origin_rejected' },
  ])
})

describe('Accounts: rules', () => {
  test('two first sign-ups at once make one owner', async () => {
    const h = await harness()
    try {
      const both = await Promise.all([ada, bob].map((email) => h.call('POST', '/accounts', { key: null, body: { email, password: PASSWORD } })))
      expect(both.map((r) => r.status).sort()).toEqual([201, 422])
      expect(await h.root.db.q.select().from(memberships)).toHaveLength(1)
      expect(await h.root.db.q.select().from(people)).toHaveLength(1)
    } finally {
      await h.close()
    }
  })
})
