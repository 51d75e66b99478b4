import { Secret, TOTP } from 'otpauth'
import { consoleSessions, memberships, people } from '../../src/db/tables'
import type { Role } from '../../src/lib/actor'
import { iso } from '../../src/lib/clock'
import { SESSION_COOKIE } from '../../src/sessions/cookie'
import { hashPassword, startSession } from '../../src/sessions/service'
import type { CallOptions, Harness } from './harness'

export const PASSWORD = 'correct horse battery staple'
/** One argon2id hash for every person the tests make: hashing is slow on purpose. */
let hashed: Promise<string> | undefined

export interface PersonSpec {
  role?: Role
  /** `none`: never enrolled; `pending`: enrolled, this session has not passed the second factor; `complete`: it has. */
  mfa?: 'none' | 'pending' | 'complete'
  email?: string
  accountId?: string
}

export interface Person {
  id: string
  email: string
  memberId: string
  accountId: string
  sessionId: string
  secret: string | null
  cookie: string
}

/** A member made directly in the database, with a session of their own (as sign-in would start it). */
export async function person(h: Harness, spec: PersonSpec = {}): Promise<Person> {
  const id = h.root.ids.uuid()
  const role = spec.role ?? 'owner'
  const mfa = spec.mfa ?? 'complete'
  const email = spec.email ?? `${role}-${id.slice(-8)}@people.test`
  const accountId = spec.accountId ?? h.accountId
  const now = iso(h.clock.now())
  const secret = mfa === 'none' ? null : new Secret({ size: 20 }).base32
  const memberId = h.root.ids.uuid()
  await h.root.db.write(async (tx) => {
    await tx.insert(people).values({
      id,
      email,
      name: null,
      passwordHash: await (hashed ??= hashPassword(PASSWORD)),
      totpSecret: secret,
      totpPendingSecret: null,
      totpLastCounter: null,
      mfaEnabledAt: secret ? now : null,
      createdAt: now,
      updatedAt: now,
    })
    await tx.insert(memberships).values({ id: memberId, accountId, personId: id, role, createdAt: now, updatedAt: now })
  })
  const { row, token } = await startSession(h.root, id, accountId, mfa === 'complete')
  return { id, email, memberId, accountId, sessionId: row.id, secret, cookie: `${SESSION_COOKIE}=${token}` }
}

/** Another session for a person already made (a second browser). */
export async function anotherSession(h: Harness, p: Person, mfaVerified = false) {
  const { token } = await startSession(h.root, p.id, p.accountId, mfaVerified)
  return `${SESSION_COOKIE}=${token}`
}

/** Call options that authenticate with a session cookie and no key. */
export const asCookie = (cookie: string, headers: Record<string, string> = {}): CallOptions => ({ key: null, headers: { cookie, ...headers } })

/** The code an authenticator app shows now (by the harness clock). */
export const totp = (h: Harness, secret: string, offsetMs = 0) => TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: h.clock.now() + offsetMs })

/** The session cookie a reply sets, as a request's Cookie header. */
export function cookieFrom(headers: Headers) {
  const set = headers.get('set-cookie') ?? ''
  return set.split(';')[0]
}

export const sessionCount = async (h: Harness) => (await h.root.db.q.select().from(consoleSessions)).length

/** Signs a person up through the API (the first one becomes owner of the boot account). */
export async function signUp(h: Harness, email: string, extra: Record<string, unknown> = {}) {
  const r = await h.call('POST', '/accounts', { key: null, body: { email, password: PASSWORD, ...extra } })
  if (r.status !== 201) throw new Error(`sign-up of ${email} answered ${r.status}: ${JSON.stringify(r.body)}`)
  return r.body as { account: { id: string; name: string }; member: { id: string; person_id: string; role: Role } }
}

/** Signs in through the API and answers the session and its cookie. */
export async function signIn(h: Harness, email: string, extra: Record<string, unknown> = {}) {
  const r = await h.call('POST', '/auth/sign-in', { key: null, body: { email, password: PASSWORD, ...extra } })
  if (r.status !== 200) throw new Error(`sign-in of ${email} answered ${r.status}: ${JSON.stringify(r.body)}`)
  return { session: r.body, cookie: cookieFrom(r.headers) }
}
