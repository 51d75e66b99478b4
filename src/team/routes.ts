import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'team'

export const teamRoutes = (platform: Platform) =>
  new Elysia({ name: 'team', prefix: '/team' })
    .use(platform)
    .get('', ({ deps, actor }) => svc.getTeam(deps, actor), {
      ...op({ id: 'getTeam', summary: 'The team: members, pending invitations and seats', tag, auth: 'full', method: 'GET' }),
      response: { 200: s.Team },
    })
    .get('/members', ({ deps, actor, query }) => svc.listMembers(deps, actor, query), {
      ...op({ id: 'listMembers', summary: 'List members and their roles, oldest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListQuery,
      response: { 200: s.MemberList },
    })
    .patch('/members/:id', ({ deps, actor, params, body }) => svc.updateMember(deps, actor, params.id, body), {
      ...op({
        id: 'updateMember',
        summary: 'Change a member’s role',
        description: 'Owners and admins change roles; only an owner grants or takes away `owner`, and the last owner keeps it (`last_owner_required`).',
        tag,
        auth: 'session',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'insufficient_role', 'last_owner_required'],
      }),
      params: s.IdParams,
      body: s.UpdateMember,
      response: { 200: s.Member },
    })
    .delete('/members/:id', ({ deps, actor, params }) => svc.removeMember(deps, actor, params.id), {
      ...op({
        id: 'removeMember',
        summary: 'Remove a member (or leave)',
        description: 'Ends the member’s sessions in this account. Anyone may remove themselves; removing others takes an owner or admin, removing an owner takes an owner, and the last owner stays. A person left in no account loses their login.',
        tag,
        auth: 'session',
        method: 'DELETE',
        errors: ['not_found', 'insufficient_role', 'last_owner_required'],
      }),
      params: s.IdParams,
      response: { 200: Deleted('member') },
    })
    .get('/invites', ({ deps, actor, query }) => svc.listInvites(deps, actor, query), {
      ...op({ id: 'listInvites', summary: 'List pending invitations, newest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListQuery,
      response: { 200: s.InviteList },
    })
    .post('/invites', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createInvite(deps, actor, body)), {
      ...op({
        id: 'createInvite',
        summary: 'Invite someone by address',
        description:
          'Valid 7 days; a new invitation to the same address replaces the pending one. It is emailed through the sending pipeline from a verified domain of the account that may send (`delivery: email`); without one, or when that send is refused, the reply carries the `token` and `url` for the inviter to pass on (`delivery: link`). Owners and admins invite; only owners invite owners.',
        tag,
        auth: 'session',
        method: 'POST',
        body: true,
        errors: ['insufficient_role', 'already_in_account', 'seat_limit_reached', 'invite_limit_reached'],
      }),
      body: s.CreateInvite,
      response: { 201: s.CreatedInvite },
    })
    .delete('/invites/:id', ({ deps, actor, params }) => svc.cancelInvite(deps, actor, params.id), {
      ...op({ id: 'cancelInvite', summary: 'Cancel a pending invitation', tag, auth: 'session', method: 'DELETE', errors: ['not_found', 'insufficient_role'] }),
      params: s.IdParams,
      response: { 200: Deleted('invite') },
    })

export const inviteRoutes = (platform: Platform) =>
  new Elysia({ name: 'invite', prefix: '/invite' })
    .use(platform)
    .post('/:token/accept', ({ deps, actor, params }) => svc.acceptInvite(deps, actor, params.token), {
      ...op({
        id: 'acceptInvite',
        summary: 'Accept an invitation as the signed-in person',
        description: 'The signed-in address must be the invited one. This session then acts in the account joined. Without a login yet, sign up with POST /accounts and `invite_token` instead.',
        tag,
        auth: 'session',
        method: 'POST',
        errors: ['invite_not_valid', 'invite_email_mismatch', 'already_in_account', 'seat_limit_reached'],
      }),
      params: s.TokenParams,
      response: { 200: s.Member },
    })
