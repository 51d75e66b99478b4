import { t, type Static } from 'elysia'
import { Email } from '../contacts/schema'
import { Paging, Timestamp, Uuid } from '../http/schemas'
import { RoleName } from '../sessions/schema'

export const Member = t.Object({
  object: t.Literal('member'),
  id: Uuid,
  account_id: t.String(),
  person_id: Uuid,
  email: t.String(),
  name: t.Nullable(t.String()),
  role: RoleName,
  two_factor_enabled: t.Boolean(),
  joined_at: Timestamp,
  updated_at: Timestamp,
})

export const InviteStatus = t.Union([t.Literal('pending'), t.Literal('accepted'), t.Literal('cancelled'), t.Literal('expired')])

export const Invite = t.Object({
  object: t.Literal('invite'),
  id: Uuid,
  email: t.String(),
  role: RoleName,
  status: InviteStatus,
  invited_by: t.Nullable(t.String({ description: 'the person who sent it' })),
  expires_at: Timestamp,
  created_at: Timestamp,
})

export const CreatedInvite = t.Composite([
  Invite,
  t.Object({
    delivery: t.Union([t.Literal('email'), t.Literal('link')], {
      description: '`email`: sent through the sending pipeline from a verified domain of the account; `link`: no domain could send it, so `url` and `token` are here for the inviter to pass on',
    }),
    email_id: t.Nullable(t.String({ description: 'the invitation email, when one was sent' })),
    email_error: t.Optional(t.String({ description: 'why the email could not be sent (an error code), when a domain was there but the send was refused' })),
    token: t.Optional(t.String({ description: 'only with `delivery: link`: the invitation token, for POST /accounts (`invite_token`) or POST /invite/{token}/accept' })),
    url: t.Optional(t.String({ description: 'only with `delivery: link`: the accept address on this server' })),
  }),
])

export const CreateInvite = t.Object({
  email: Email,
  role: t.Optional(RoleName),
})
export type CreateInvite = Static<typeof CreateInvite>

export const UpdateMember = t.Object({ role: RoleName })
export type UpdateMember = Static<typeof UpdateMember>

export const Team = t.Object({
  object: t.Literal('team'),
  account_id: t.String(),
  members: t.Array(Member, { description: 'the first 500, oldest first; GET /team/members pages through all' }),
  invites: t.Array(Invite, { description: 'pending invitations, the first 500, newest first' }),
  seats: t.Object({
    members: t.Integer(),
    pending: t.Integer({ description: 'seats held by pending invitations' }),
    limit: t.Nullable(t.Integer({ description: 'MAILROOM_SEAT_LIMIT; null when unlimited' })),
    available: t.Nullable(t.Integer()),
  }),
})

export const MemberList = t.Object({ object: t.Literal('list'), data: t.Array(Member), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const InviteList = t.Object({ object: t.Literal('list'), data: t.Array(Invite), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListQuery = Paging
export const IdParams = t.Object({ id: Uuid })
export const TokenParams = t.Object({ token: t.String({ minLength: 1, maxLength: 200 }) })
