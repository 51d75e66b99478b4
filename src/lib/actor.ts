/** Who is acting: services decide tenancy and permission from this, never from the request. */
export interface Actor {
  accountId: string
  kind: 'key' | 'session' | 'system'
  /** The API key behind the call, when a key made it. */
  keyId: string | null
  permission: 'full_access' | 'sending_access'
  domainScope: string | null
}
