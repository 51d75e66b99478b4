import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { auditEntries, consoleSessions, emails, invites, memberships, people, recoveryCodes, suppressions } from '../src/db/tables'
import { verifiedDomain } from './support/emails'
import { expectError, harness, type Harness } from './support/harness'
import { PASSWORD, anotherSession, asCookie, cookieFrom, person, signIn, signUp, totp, type Person } from './support/people'
import { scenarios } from './support/scenarios'

const ORIGIN = { origin: 'http://mailroom.test' }
const missing = '01890000-0000-7000-8000-000000000000'
const bob = 'bob@people.test'

/** An owner and an admin, each signed in with two-factor done. */
const ownerAndAdmin = async (h: Harness) => ({ owner: await person(h, { role: 'owner' }), admin: await person(h, { role: 'admin' }) })

/** An owner's session and an invitation they sent (by link: the account has no domain). */
const invitation = async (h: Harness, email = bob, role = 'developer') => {
  const owner = await person(h)
  const r = await h.call('POST', '/team/invites', { ...asCookie(owner.cookie), body: { email, role } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return { owner, id: r.body.id as string, token: r.body.token as string }
}

const roleOf = async (h: Harness, memberId: string) => (await h.root.db.q.select().from(memberships).where(eq(memberships.id, memberId)))[0]?.role

describe('Team: scenarios', () => {
  scenarios([
    // GET /team
    { name: 'answers members, pending invitations and seats', method: 'GET', path: '/team', env: { MAILROOM_SEAT_LIMIT: '5' }, setup: async (h) => {
      const c = await invitation(h)
      const viewer = await person(h, { role: 'viewer', mfa: 'none' })
      return { ...c, viewer }
    }, status: 200,
      expect: { object: 'team', seats: { members: 2, pending: 1, limit: 5, available: 2 }, invites: [{ object: 'invite', email: bob, role: 'developer', status: 'pending' }] },
      check: (r, c, h) => {
        expect(r.body.account_id).toBe(h.accountId)
        expect(r.body.members.map((m: { id: string }) => m.id)).toEqual([c.owner.memberId, c.viewer.memberId])
        expect(r.body.members[0]).toMatchObject({ object: 'member', person_id: c.owner.id, email: c.owner.email, role: 'owner', two_factor_enabled: true, name: null })
        expect(r.body.members[1].two_factor_enabled).toBe(false)
      } },
    { name: 'says seats are unlimited without MAILROOM_SEAT_LIMIT', method: 'GET', path: '/team', as: { role: 'viewer' }, status: 200, expect: { seats: { members: 1, pending: 0, limit: null, available: null } } },
    { name: 'shows only this account’s team', method: 'GET', path: '/team', setup: async (h) => {
      const o = await h.otherAccount()
      await person(h, { accountId: o.accountId })
    }, status: 200, expect: { members: [], seats: { members: 0 } } },
    { name: 'refuses a sending-only key', method: 'GET', path: '/team', as: 'sending', status: 403, code: 'restricted_api_key' },

    // GET /team/members
    { name: 'lists members oldest first, in pages', method: 'GET', path: '/team/members', query: { limit: 2 }, setup: async (h) => [await person(h), await person(h, { role: 'viewer' }), await person(h, { role: 'developer' })], status: 200,
      check: async (r, ps: Person[], h) => {
        expect(r.body.data.map((m: { id: string }) => m.id)).toEqual([ps[0].memberId, ps[1].memberId])
        expect(r.body.has_more).toBe(true)
        const next = await h.call('GET', '/team/members', { query: { cursor: r.body.next_cursor } })
        expect(next.body.data.map((m: { id: string }) => m.id)).toEqual([ps[2].memberId])
      } },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/team/members', query: { cursor: 'nope.nope' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a limit over 500', method: 'GET', path: '/team/members', query: { limit: 501 }, status: 400, code: 'validation_error' },

    // PATCH /team/members/{id}
    { name: 'lets an admin change a developer’s role, and audits it', method: 'PATCH', setup: async (h) => ({ ...(await ownerAndAdmin(h)), dev: await person(h, { role: 'developer' }) }),
      as: 'none', headers: (c: any) => ({ cookie: c.admin.cookie, ...ORIGIN }), path: (c: any) => `/team/members/${c.dev.memberId}`, body: { role: 'viewer' }, status: 200, expect: { object: 'member', role: 'viewer' },
      check: async (_r, c, h) => {
        // The member's session acts with the new role from its next request.
        expectError(await h.call('POST', '/topics', { ...asCookie(c.dev.cookie), body: { name: 'x', default_subscription: 'opt_in' } }), 'insufficient_role', 403)
        const [a] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resource, 'member'))
        expect(a).toMatchObject({ action: 'updated', actorKind: 'session', resourceId: c.dev.memberId, before: { role: 'developer' }, after: { role: 'viewer' } })
      } },
    { name: 'lets an owner make another member owner', method: 'PATCH', setup: ownerAndAdmin, as: 'none', headers: (c: any) => ({ cookie: c.owner.cookie }), path: (c: any) => `/team/members/${c.admin.memberId}`, body: { role: 'owner' }, status: 200, expect: { role: 'owner' } },
    { name: 'lets an owner step down while another owner remains', method: 'PATCH', setup: async (h) => ({ a: await person(h), b: await person(h) }), as: 'none', headers: (c: any) => ({ cookie: c.a.cookie }),
      path: (c: any) => `/team/members/${c.a.memberId}`, body: { role: 'admin' }, status: 200, expect: { role: 'admin' } },
    { name: 'refuses to demote the last owner', method: 'PATCH', setup: ownerAndAdmin, as: 'none', headers: (c: any) => ({ cookie: c.owner.cookie }), path: (c: any) => `/team/members/${c.owner.memberId}`, body: { role: 'admin' }, status: 422, code: 'last_owner_required',
      check: async (_r, c, h) => expect(await roleOf(h, c.owner.memberId)).toBe('owner') },
    { name: 'refuses an admin making someone owner', method: 'PATCH', setup: ownerAndAdmin, as: 'none', headers: (c: any) => ({ cookie: c.admin.cookie }), path: (c: any) => `/team/members/${c.admin.memberId}`, body: { role: 'owner' }, status: 403, code: 'insufficient_role',
      check: async (_r, c, h) => expect(await roleOf(h, c.admin.memberId)).toBe('admin') },
    { name: 'refuses an admin demoting an owner', method: 'PATCH', setup: ownerAndAdmin, as: 'none', headers: (c: any) => ({ cookie: c.admin.cookie }), path: (c: any) => `/team/members/${c.owner.memberId}`, body: { role: 'viewer' }, status: 403, code: 'insufficient_role' },
    { name: 'refuses a developer changing roles', method: 'PATCH', setup: async (h) => ({ dev: await person(h, { role: 'developer' }), other: await person(h, { role: 'viewer' }) }), as: 'none', headers: (c: any) => ({ cookie: c.dev.cookie }),
      path: (c: any) => `/team/members/${c.other.memberId}`, body: { role: 'developer' }, status: 403, code: 'insufficient_role' },
    { name: 'answers 404 for a member of another account', method: 'PATCH', setup: async (h) => {
      const o = await h.otherAccount()
      return person(h, { accountId: o.accountId })
    }, as: { role: 'owner' }, path: (p: Person) => `/team/members/${p.memberId}`, body: { role: 'viewer' }, status: 404, code: 'not_found' },
    { name: 'refuses a role that does not exist', method: 'PATCH', as: { role: 'owner' }, path: `/team/members/${missing}`, body: { role: 'superuser' }, status: 400, code: 'validation_error' },
    { name: 'refuses an API key', method: 'PATCH', path: `/team/members/${missing}`, body: { role: 'viewer' }, status: 401, code: 'session_required' },

    // DELETE /team/members/{id}
    { name: 'lets an admin remove a developer: sessions end, a person left in no account loses the login', method: 'DELETE', setup: async (h) => ({ ...(await ownerAndAdmin(h)), dev: await person(h, { role: 'developer' }) }),
      as: 'none', headers: (c: any) => ({ cookie: c.admin.cookie }), path: (c: any) => `/team/members/${c.dev.memberId}`, status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({ object: 'member', id: c.dev.memberId, deleted: true })
        expectError(await h.call('GET', '/account', asCookie(c.dev.cookie)), 'session_required', 401)
        expect(await h.root.db.q.select().from(people).where(eq(people.id, c.dev.id))).toEqual([])
        expect(await h.root.db.q.select().from(consoleSessions).where(eq(consoleSessions.personId, c.dev.id))).toEqual([])
        expect(await h.root.db.q.select().from(recoveryCodes).where(eq(recoveryCodes.personId, c.dev.id))).toEqual([])
        expect((await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'deleted')))[0]).toMatchObject({ resource: 'member', before: { email: c.dev.email }, after: null })
      } },
    { name: 'keeps the login of a person who belongs to another account', method: 'DELETE', setup: async (h) => {
      const owner = await person(h)
      const o = await h.otherAccount()
      const elsewhere = await person(h, { accountId: o.accountId, role: 'owner' })
      const membership = { id: h.root.ids.uuid(), accountId: h.accountId, personId: elsewhere.id, role: 'viewer' as const, createdAt: '2026-03-02T10:00:00.000Z', updatedAt: '2026-03-02T10:00:00.000Z' }
      await h.root.db.write((tx) => tx.insert(memberships).values(membership))
      return { owner, elsewhere, memberId: membership.id }
    }, as: 'none', headers: (c: any) => ({ cookie: c.owner.cookie }), path: (c: any) => `/team/members/${c.memberId}`, status: 200,
      check: async (_r, c, h) => {
        expect(await h.root.db.q.select().from(people).where(eq(people.id, c.elsewhere.id))).toHaveLength(1)
        expect((await h.call('GET', '/account', asCookie(c.elsewhere.cookie))).status).toBe(200)
      } },
    { name: 'lets a viewer leave', method: 'DELETE', setup: async (h) => ({ owner: await person(h), viewer: await person(h, { role: 'viewer' }) }), as: 'none', headers: (c: any) => ({ cookie: c.viewer.cookie }),
      path: (c: any) => `/team/members/${c.viewer.memberId}`, status: 200, check: async (_r, c, h) => expect(await roleOf(h, c.viewer.memberId)).toBeUndefined() },
    { name: 'refuses a developer removing someone else', method: 'DELETE', setup: async (h) => ({ dev: await person(h, { role: 'developer' }), other: await person(h, { role: 'viewer' }) }), as: 'none', headers: (c: any) => ({ cookie: c.dev.cookie }),
      path: (c: any) => `/team/members/${c.other.memberId}`, status: 403, code: 'insufficient_role', check: async (_r, c, h) => expect(await roleOf(h, c.other.memberId)).toBe('viewer') },
    { name: 'refuses an admin removing an owner', method: 'DELETE', setup: async (h) => ({ a: await person(h), b: await person(h), admin: await person(h, { role: 'admin' }) }), as: 'none', headers: (c: any) => ({ cookie: c.admin.cookie }),
      path: (c: any) => `/team/members/${c.a.memberId}`, status: 403, code: 'insufficient_role' },
    { name: 'refuses to remove the last owner, even when they leave', method: 'DELETE', setup: ownerAndAdmin, as: 'none', headers: (c: any) => ({ cookie: c.owner.cookie }), path: (c: any) => `/team/members/${c.owner.memberId}`, status: 422, code: 'last_owner_required',
      check: async (_r, c, h) => expect((await h.call('GET', '/account', asCookie(c.owner.cookie))).status).toBe(200) },
    { name: 'answers 404 for a member that does not exist', method: 'DELETE', as: { role: 'owner' }, path: `/team/members/${missing}`, status: 404, code: 'not_found' },
    { name: 'refuses a path id that is no UUID', method: 'DELETE', as: { role: 'owner' }, path: '/team/members/42', status: 400, code: 'validation_error' },
    { name: 'refuses an API key', method: 'DELETE', path: `/team/members/${missing}`, status: 401, code: 'session_required' },

    // GET /team/invites
    { name: 'lists pending invitations newest first, not expired or used ones', method: 'GET', path: '/team/invites', setup: async (h) => {
      await invitation(h, 'old@people.test')
      h.clock.advance(6 * 24 * 3_600_000)
      // Ada's first session has expired by now: she signs in again.
      const ada = await person(h)
      const fresh = await h.call('POST', '/team/invites', { ...asCookie(ada.cookie), body: { email: 'fresh@people.test' } })
      const used = await h.call('POST', '/team/invites', { ...asCookie(ada.cookie), body: { email: 'used@people.test' } })
      await signUp(h, 'used@people.test', { invite_token: used.body.token })
      h.clock.advance(24 * 3_600_000)
      return { ada, fresh: fresh.body }
    }, status: 200, check: (r, c) => {
      expect(r.body.data.map((i: { id: string }) => i.id)).toEqual([c.fresh.id])
      expect(r.body.data[0]).toEqual({ object: 'invite', id: c.fresh.id, email: 'fresh@people.test', role: 'developer', status: 'pending', invited_by: c.ada.id, expires_at: '2026-03-15T10:00:00.000Z', created_at: '2026-03-08T10:00:00.000Z' })
      expect(JSON.stringify(r.body)).not.toContain('token')
    } },
    { name: 'refuses an after that is no invitation id', method: 'GET', path: '/team/invites', query: { after: 'nope' }, status: 400, code: 'invalid_cursor' },

    // POST /team/invites
    { name: 'hands the link to the inviter when no domain can send it', method: 'POST', path: '/team/invites', as: 'none', setup: (h) => person(h, { role: 'admin' }), headers: (p: Person) => ({ cookie: p.cookie, ...ORIGIN }),
      body: { email: 'Bob@People.test', role: 'viewer' }, status: 201,
      expect: { object: 'invite', email: bob, role: 'viewer', status: 'pending', expires_at: '2026-03-09T10:00:00.000Z', delivery: 'link', email_id: null },
      check: async (r, p, h) => {
        expect(r.body.invited_by).toBe(p.id)
        expect(r.body.token).toMatch(/^[A-Za-z0-9]{32}$/)
        expect(r.body.url).toBe(`http://mailroom.test/invite/${r.body.token}/accept`)
        const [row] = await h.root.db.q.select().from(invites)
        expect(row.tokenHash).not.toBe(r.body.token)
        expect(await h.root.db.q.select().from(emails)).toEqual([])
        const [a] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.resource, 'invite'))
        expect(a).toMatchObject({ action: 'created', after: { email: bob } })
        expect(JSON.stringify(a)).not.toContain(r.body.token)
      } },
    { name: 'emails the invitation through the sending pipeline from a verified domain', method: 'POST', path: '/team/invites', as: 'none', setup: async (h) => {
      await verifiedDomain(h, 'acme.dev')
      return person(h)
    }, headers: (p: Person) => ({ cookie: p.cookie }), body: { email: bob }, status: 201, expect: { delivery: 'email' },
      check: async (r, p, h) => {
        expect(r.body.token).toBeUndefined()
        expect(r.body.url).toBeUndefined()
        const [mail] = await h.root.db.q.select().from(emails)
        expect(mail).toMatchObject({ id: r.body.email_id, accountId: h.accountId, fromEmail: 'no-reply@acme.dev', to: [bob], subject: 'Join Default account on Mailroom' })
        expect(mail.text).toContain(`${p.email} invited you to join Default account on Mailroom as developer.`)
        // The token in the email is the real one: Bob signs up with it.
        const token = mail.text!.match(/"invite_token": "([A-Za-z0-9]+)"/)![1]
        expect((await signUp(h, bob, { invite_token: token })).member.role).toBe('developer')
      } },
    { name: 'falls back to the link when the send is refused, saying why', method: 'POST', path: '/team/invites', as: 'none', setup: async (h) => {
      await verifiedDomain(h, 'acme.dev')
      await h.call('POST', '/suppressions', { body: { email: bob } })
      const [s] = await h.root.db.q.select().from(suppressions)
      expect(s?.email).toBe(bob)
      return person(h)
    }, headers: (p: Person) => ({ cookie: p.cookie }), body: { email: bob }, status: 201, expect: { delivery: 'link', email_id: null, email_error: 'suppressed_recipient' },
      check: async (r, _p, h) => {
        expect(r.body.url).toContain(r.body.token)
        expect(await h.root.db.q.select().from(emails)).toEqual([])
      } },
    { name: 'replaces a pending invitation to the same address', method: 'POST', path: '/team/invites', as: 'none', setup: invitation, headers: (c: any) => ({ cookie: c.owner.cookie }), body: { email: bob, role: 'admin' }, status: 201,
      check: async (r, c, h) => {
        expect((await h.call('GET', '/team/invites')).body.data.map((i: { id: string }) => i.id)).toEqual([r.body.id])
        expect((await h.root.db.q.select().from(invites).where(eq(invites.id, c.id)))[0].status).toBe('cancelled')
        expectError(await h.call('POST', '/accounts', { key: null, body: { email: bob, password: PASSWORD, invite_token: c.token } }), 'invite_not_valid', 422)
      } },
    { name: 'refuses an address already in the account', method: 'POST', path: '/team/invites', as: 'none', setup: async (h) => ({ owner: await person(h), viewer: await person(h, { role: 'viewer', email: 'vic@people.test' }) }),
      headers: (c: any) => ({ cookie: c.owner.cookie }), body: { email: 'VIC@people.test' }, status: 409, code: 'already_in_account', check: async (_r, _c, h) => expect(await h.root.db.q.select().from(invites)).toEqual([]) },
    { name: 'refuses past the seat limit, counting pending invitations', method: 'POST', path: '/team/invites', as: 'none', env: { MAILROOM_SEAT_LIMIT: '2' }, setup: (h) => invitation(h),
      headers: (c: any) => ({ cookie: c.owner.cookie }), body: { email: 'carol@people.test' }, status: 422, code: 'seat_limit_reached',
      expect: { message: 'This account has 2 seats: 1 members and 1 pending invitations hold them all.' } },
    { name: 'lets an invitation be sent again at the seat limit (it replaces the pending one)', method: 'POST', path: '/team/invites', as: 'none', env: { MAILROOM_SEAT_LIMIT: '2' }, setup: (h) => invitation(h),
      headers: (c: any) => ({ cookie: c.owner.cookie }), body: { email: bob }, status: 201 },
    { name: 'refuses past the daily invitation limit, saying when the next may go', method: 'POST', path: '/team/invites', as: 'none', env: { MAILROOM_INVITE_LIMIT: '2' }, setup: async (h) => {
      const c = await invitation(h, 'one@people.test')
      h.clock.advance(3_600_000)
      await h.call('POST', '/team/invites', { ...asCookie(c.owner.cookie), body: { email: 'two@people.test' } })
      return c
    }, headers: (c: any) => ({ cookie: c.owner.cookie }), body: { email: 'three@people.test' }, status: 429, code: 'invite_limit_reached', expect: { retry_after_seconds: 23 * 3600 },
      check: (r) => expect(r.headers.get('retry-after')).toBe(String(23 * 3600)) },
    { name: 'refuses an admin inviting an owner', method: 'POST', path: '/team/invites', as: { role: 'admin' }, body: { email: bob, role: 'owner' }, status: 403, code: 'insufficient_role' },
    { name: 'lets an owner invite an owner', method: 'POST', path: '/team/invites', as: { role: 'owner' }, body: { email: bob, role: 'owner' }, status: 201, expect: { role: 'owner' } },
    { name: 'refuses a developer', method: 'POST', path: '/team/invites', as: { role: 'developer' }, body: { email: bob }, status: 403, code: 'insufficient_role' },
    { name: 'refuses an address that is no address', method: 'POST', path: '/team/invites', as: { role: 'owner' }, body: { email: 'bob' }, status: 400, code: 'validation_error' },
    { name: 'refuses a session whose second factor is due', method: 'POST', path: '/team/invites', as: { role: 'owner', mfa: 'pending' }, body: { email: bob }, status: 401, code: 'mfa_required' },
    { name: 'refuses an API key', method: 'POST', path: '/team/invites', body: { email: bob }, status: 401, code: 'session_required' },

    // DELETE /team/invites/{id}
    { name: 'cancels a pending invitation', method: 'DELETE', as: 'none', setup: invitation, headers: (c: any) => ({ cookie: c.owner.cookie }), path: (c: any) => `/team/invites/${c.id}`, status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({ object: 'invite', id: c.id, deleted: true })
        expect((await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'cancelled')))[0]).toMatchObject({ resource: 'invite', resourceId: c.id, before: { status: 'pending' }, after: { status: 'cancelled' } })
        expectError(await h.call('POST', '/accounts', { key: null, body: { email: bob, password: PASSWORD, invite_token: c.token } }), 'invite_not_valid', 422)
        expect((await h.call('GET', '/team/invites')).body.data).toEqual([])
      } },
    { name: 'answers 404 for an invitation already used', method: 'DELETE', as: 'none', setup: async (h) => {
      const c = await invitation(h)
      await signUp(h, bob, { invite_token: c.token })
      return c
    }, headers: (c: any) => ({ cookie: c.owner.cookie }), path: (c: any) => `/team/invites/${c.id}`, status: 404, code: 'not_found' },
    { name: 'refuses a developer', method: 'DELETE', as: 'none', setup: async (h) => ({ ...(await invitation(h)), dev: await person(h, { role: 'developer' }) }), headers: (c: any) => ({ cookie: c.dev.cookie }),
      path: (c: any) => `/team/invites/${c.id}`, status: 403, code: 'insufficient_role' },
    { name: 'refuses an API key', method: 'DELETE', path: `/team/invites/${missing}`, status: 401, code: 'session_required' },

    // POST /invite/{token}/accept
    { name: 'joins as the signed-in person, and this session moves to the account', method: 'POST', as: 'none', setup: async (h) => {
      const c = await invitation(h, bob, 'admin')
      const o = await h.otherAccount()
      const b = await person(h, { email: bob, accountId: o.accountId })
      return { ...c, b, other: o.accountId }
    }, headers: (c: any) => ({ cookie: c.b.cookie, ...ORIGIN }), path: (c: any) => `/invite/${c.token}/accept`, status: 200, expect: { object: 'member', email: bob, role: 'admin' },
      check: async (r, c, h) => {
        expect(r.body.account_id).toBe(h.accountId)
        expect(r.body.person_id).toBe(c.b.id)
        expect((await h.call('GET', '/account', asCookie(c.b.cookie))).body.id).toBe(h.accountId)
        expect((await signIn(h, bob)).session.accounts.map((a: { id: string; role: string }) => [a.id, a.role])).toEqual([[c.other, 'owner'], [h.accountId, 'admin']])
        const audit = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.accountId, h.accountId))
        expect(audit.map((a) => `${a.resource}.${a.action}:${a.actorKind}`)).toEqual(['account.created:system', 'api_key.created:system', 'invite.created:session', 'invite.accepted:session', 'member.created:session'])
      } },
    { name: 'refuses a person signed in with another address', method: 'POST', as: 'none', setup: async (h) => {
      const c = await invitation(h)
      const o = await h.otherAccount()
      return { ...c, carol: await person(h, { accountId: o.accountId }) }
    }, headers: (c: any) => ({ cookie: c.carol.cookie }), path: (c: any) => `/invite/${c.token}/accept`, status: 403, code: 'invite_email_mismatch',
      check: async (_r, _c, h) => expect(await h.root.db.q.select().from(memberships).where(eq(memberships.accountId, h.accountId))).toHaveLength(1) },
    { name: 'refuses an invitation already used', method: 'POST', as: 'none', setup: async (h) => {
      const c = await invitation(h)
      const o = await h.otherAccount()
      const b = await person(h, { email: bob, accountId: o.accountId })
      expect((await h.call('POST', `/invite/${c.token}/accept`, asCookie(b.cookie))).status).toBe(200)
      return { ...c, again: await anotherSession(h, { ...b, accountId: o.accountId }, true) }
    }, headers: (c: any) => ({ cookie: c.again }), path: (c: any) => `/invite/${c.token}/accept`, status: 422, code: 'invite_not_valid', expect: { message: 'This invitation was already used.' } },
    { name: 'refuses a token no invitation has', method: 'POST', as: { role: 'owner' }, path: '/invite/madeup/accept', status: 422, code: 'invite_not_valid' },
    { name: 'refuses a member of the account (an invitation that outlived a join by another way)', method: 'POST', as: 'none', setup: async (h) => {
      const c = await invitation(h)
      // Invitations to members are refused, so this one is written in directly.
      await h.root.db.write((tx) => tx.update(invites).set({ email: 'vic@people.test' }).where(eq(invites.id, c.id)))
      return { b: await person(h, { email: 'vic@people.test', role: 'viewer' }), token: c.token }
    }, headers: (c: any) => ({ cookie: c.b.cookie }), path: (c: any) => `/invite/${c.token}/accept`, status: 409, code: 'already_in_account',
      check: async (_r, c, h) => expect(await roleOf(h, c.b.memberId)).toBe('viewer') },
    { name: 'refuses when the seats filled up meanwhile', method: 'POST', as: 'none', env: { MAILROOM_SEAT_LIMIT: '2' }, setup: async (h) => {
      const c = await invitation(h)
      await person(h, { role: 'viewer' })
      const o = await h.otherAccount()
      return { ...c, b: await person(h, { email: bob, accountId: o.accountId }) }
    }, headers: (c: any) => ({ cookie: c.b.cookie }), path: (c: any) => `/invite/${c.token}/accept`, status: 422, code: 'seat_limit_reached' },
    { name: 'refuses an API key', method: 'POST', path: '/invite/sometoken/accept', status: 401, code: 'session_required' },
  ])
})

describe('Team: the whole way', () => {
  test('sign-up → sign-in → MFA enrol → verify → invite → accept → role change → last-owner refusal', async () => {
    const h = await harness({ MAILROOM_OPEN_SIGNUP: 'true' })
    try {
      const as = (cookie: string) => asCookie(cookie, { origin: 'http://mailroom.test' })
      // Ada, the first person, owns the account the first start made.
      const ada = await signUp(h, 'ada@people.test', { name: 'Ada', account_name: 'Engines' })
      expect(ada.account.id).toBe(h.accountId)
      const signedIn = await signIn(h, 'ada@people.test')
      expect(signedIn.session.two_factor).toBe('not_enrolled')
      let adaCookie = signedIn.cookie

      // Two-factor: enrol, confirm; a later sign-in owes the second factor.
      const enrol = await h.call('POST', '/auth/mfa/enroll', as(adaCookie))
      expect(enrol.status).toBe(200)
      const verified = await h.call('POST', '/auth/mfa/verify', { ...as(adaCookie), body: { code: totp(h, enrol.body.secret) } })
      expect(verified.body).toMatchObject({ two_factor: 'complete', recovery_codes: expect.any(Array) })
      h.clock.advance(30_000)
      const again = await h.call('POST', '/auth/sign-in', { key: null, body: { email: 'ada@people.test', password: PASSWORD } })
      expect(again.body.two_factor).toBe('pending')
      adaCookie = cookieFrom(again.headers)
      expectError(await h.call('POST', '/team/invites', { ...as(adaCookie), body: { email: 'carol@people.test' } }), 'mfa_required', 401)
      expect((await h.call('POST', '/auth/mfa/verify', { ...as(adaCookie), body: { code: totp(h, enrol.body.secret) } })).status).toBe(200)

      // Carol has a login of her own (open sign-up); Ada invites her as a developer.
      const carol = await signUp(h, 'carol@people.test', { account_name: 'Carol’s' })
      const invite = await h.call('POST', '/team/invites', { ...as(adaCookie), body: { email: 'carol@people.test' } })
      expect(invite.body).toMatchObject({ delivery: 'link', role: 'developer' })
      const carolCookie = (await signIn(h, 'carol@people.test')).cookie
      const accepted = await h.call('POST', invite.body.url.replace('http://mailroom.test', ''), as(carolCookie))
      expect(accepted.body).toMatchObject({ account_id: h.accountId, role: 'developer', email: 'carol@people.test' })
      expect((await h.call('GET', '/account', as(carolCookie))).body.name).toBe('Engines')
      expectError(await h.call('PATCH', `/team/members/${ada.member.id}`, { ...as(carolCookie), body: { role: 'viewer' } }), 'insufficient_role', 403)

      // Role changes; the last owner stays an owner until there is another.
      expect((await h.call('PATCH', `/team/members/${accepted.body.id}`, { ...as(adaCookie), body: { role: 'admin' } })).body.role).toBe('admin')
      expectError(await h.call('PATCH', `/team/members/${ada.member.id}`, { ...as(adaCookie), body: { role: 'admin' } }), 'last_owner_required', 422)
      expectError(await h.call('DELETE', `/team/members/${ada.member.id}`, as(adaCookie)), 'last_owner_required', 422)
      expectError(await h.call('PATCH', `/team/members/${accepted.body.id}`, { ...as(carolCookie), body: { role: 'owner' } }), 'insufficient_role', 403)
      expect((await h.call('PATCH', `/team/members/${accepted.body.id}`, { ...as(adaCookie), body: { role: 'owner' } })).body.role).toBe('owner')
      expect((await h.call('PATCH', `/team/members/${ada.member.id}`, { ...as(adaCookie), body: { role: 'admin' } })).body.role).toBe('admin')
      const team = await h.call('GET', '/team', as(carolCookie))
      expect(team.body.members.map((m: { email: string; role: string }) => `${m.email}:${m.role}`)).toEqual(['ada@people.test:admin', 'carol@people.test:owner'])
      expect(carol.account.id).not.toBe(h.accountId)
    } finally {
      await h.close()
    }
  })
})
