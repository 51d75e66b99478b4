/** Who is acting: services decide tenancy and permission from this, never from the request. */
export interface Actor {
  accountId: string
  kind: 'key' | 'session' | 'system'
  /** The API key behind the call, when a key made it. */
  keyId: string | null
  permission: 'full_access' | 'sending_access'
  domainScope: string | null
  /** The person behind a console session (kind 'session'), with their role in the account. */
  person?: SessionPerson
  /** The agent action a person approved, which this call carries out: its holds do not apply again. */
  approvedAction?: string
}

export type Role = 'owner' | 'admin' | 'developer' | 'viewer'

export interface SessionPerson {
  id: string
  email: string
  role: Role
  sessionId: string
  /** The session passed the second factor. */
  mfaVerified: boolean
}

/** The service itself acting for an account: jobs, bounce and complaint processing, recipients' unsubscribes. */
export const systemActor = (accountId: string): Actor => ({ accountId, kind: 'system', keyId: null, permission: 'full_access', domainScope: null })
