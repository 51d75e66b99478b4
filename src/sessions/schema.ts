import { t, type Static } from 'elysia'
import { Email } from '../contacts/schema'
import { Timestamp, Uuid } from '../http/schemas'

export const RoleName = t.Union([t.Literal('owner'), t.Literal('admin'), t.Literal('developer'), t.Literal('viewer')], {
  description: '`owner`: everything, including owners; `admin`: the team, keys and settings; `developer`: every other change; `viewer`: reads only',
})

export const Password = t.String({ minLength: 10, maxLength: 200, description: '10 to 200 characters' })

export const SignIn = t.Object({
  email: Email,
  password: t.String({ minLength: 1, maxLength: 200 }),
  account_id: t.Optional(t.String({ maxLength: 100, description: 'the account to act in, for a person in several; default the first they joined' })),
})
export type SignIn = Static<typeof SignIn>

export const TwoFactor = t.Union([t.Literal('complete'), t.Literal('pending'), t.Literal('not_enrolled'), t.Literal('enrolment_required')], {
  description:
    '`complete`: this session passed the second factor; `pending`: the person enrolled, so POST /auth/mfa/verify comes next and everything else answers `mfa_required`; `not_enrolled`: password only (person-level decisions need two-factor); `enrolment_required`: the account requires two-factor and the person has none yet: enrol first',
})

export const Session = t.Object({
  object: t.Literal('session'),
  id: Uuid,
  account_id: t.String(),
  role: RoleName,
  two_factor: TwoFactor,
  person: t.Object({ id: Uuid, email: t.String(), name: t.Nullable(t.String()) }),
  accounts: t.Array(t.Object({ id: t.String(), name: t.String(), role: RoleName }), { description: 'every account the person belongs to; sign in with `account_id` to act in another' }),
  expires_at: Timestamp,
})

export const VerifiedSession = t.Composite([
  Session,
  t.Object({
    recovery_codes: t.Optional(t.Array(t.String(), { description: 'only when this call completed enrolment: ten one-time codes for when the authenticator is lost, shown this once' })),
  }),
])

export const MfaEnrollment = t.Object({
  object: t.Literal('mfa_enrollment'),
  secret: t.String({ description: 'the TOTP secret, base32; shown this once' }),
  otpauth_uri: t.String({ description: 'the same secret as an otpauth:// URI for a QR code' }),
  algorithm: t.Literal('SHA1'),
  digits: t.Literal(6),
  period: t.Literal(30),
})

export const VerifyMfa = t.Object({
  code: t.String({ minLength: 6, maxLength: 20, description: 'six digits from the authenticator app, or one recovery code' }),
})
export type VerifyMfa = Static<typeof VerifyMfa>

export const SignedOut = t.Object({ object: t.Literal('session'), id: Uuid, deleted: t.Boolean() })
