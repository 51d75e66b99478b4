import { t, type Static } from 'elysia'
import { Email } from '../contacts/schema'
import { Timestamp } from '../http/schemas'
import { Password } from '../sessions/schema'
import { Member } from '../team/schema'

const AccountName = t.String({ minLength: 1, maxLength: 100 })

export const Account = t.Object({
  object: t.Literal('account'),
  id: t.String(),
  name: t.String(),
  require_mfa: t.Boolean({ description: 'every member’s session must pass two-factor authentication' }),
  created_at: Timestamp,
  updated_at: Timestamp,
  plan: t.Optional(t.Nullable(t.String({ description: 'GET only: the plan in force (`starter`, `pro`, `scale`) when billing is configured; null without one, or with billing off' }))),
  standing: t.Optional(
    t.Object(
      { level: t.String({ description: '`sandbox`, `new`, `established` or `trusted`' }), state: t.String({ description: '`active`, `paused`, `review` or `suspended`' }) },
      { description: 'GET only: the trust standing in short; GET /trust/standing explains it' },
    ),
  ),
})

export const SignUp = t.Object({
  email: Email,
  password: Password,
  name: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'the person’s name' })),
  account_name: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'names the account this sign-up creates (or the first account, for the first person)' })),
  invite_token: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'from an invitation to the same address: joins that account' })),
})
export type SignUp = Static<typeof SignUp>

export const SignedUp = t.Object({
  object: t.Literal('sign_up'),
  account: Account,
  member: Member,
})

export const UpdateAccount = t.Object({
  name: t.Optional(AccountName),
  require_mfa: t.Optional(t.Boolean({ description: 'turning it on from a session needs that session to have passed two-factor itself' })),
})
export type UpdateAccount = Static<typeof UpdateAccount>
