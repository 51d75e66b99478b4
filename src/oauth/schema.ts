import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

/** The scopes a tool client may ask for: the two permissions a key can have. */
export const SCOPES = ['sending_access', 'full_access'] as const

export const AuthorizationServerMetadata = t.Object({
  issuer: t.String(),
  authorization_endpoint: t.String(),
  token_endpoint: t.String(),
  registration_endpoint: t.String(),
  revocation_endpoint: t.String(),
  response_types_supported: t.Array(t.String()),
  grant_types_supported: t.Array(t.String()),
  code_challenge_methods_supported: t.Array(t.String()),
  token_endpoint_auth_methods_supported: t.Array(t.String()),
  revocation_endpoint_auth_methods_supported: t.Array(t.String()),
  scopes_supported: t.Array(t.String()),
  service_documentation: t.String(),
})

export const ProtectedResourceMetadata = t.Object({
  resource: t.String({ description: 'the whole API: an access token works wherever a key of its permission does, /mcp included' }),
  authorization_servers: t.Array(t.String()),
  scopes_supported: t.Array(t.String()),
  bearer_methods_supported: t.Array(t.String()),
  resource_name: t.String(),
  resource_documentation: t.String(),
})

const RedirectUri = t.String({ minLength: 1, maxLength: 2000, description: 'https, or http on a loopback host (RFC 8252), or a private-use scheme of a native app; no fragment' })

export const RegisterClient = t.Object({
  redirect_uris: t.Array(RedirectUri, { minItems: 1, maxItems: 10 }),
  client_name: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
  client_uri: t.Optional(t.String({ maxLength: 2000 })),
  token_endpoint_auth_method: t.Optional(t.String({ maxLength: 50, description: 'only `none`: clients are public and prove themselves with PKCE' })),
  grant_types: t.Optional(t.Array(t.String({ maxLength: 50 }), { maxItems: 5 })),
  response_types: t.Optional(t.Array(t.String({ maxLength: 50 }), { maxItems: 5 })),
  scope: t.Optional(t.String({ maxLength: 200 })),
  software_id: t.Optional(t.String({ maxLength: 200 })),
  software_version: t.Optional(t.String({ maxLength: 100 })),
  logo_uri: t.Optional(t.String({ maxLength: 2000 })),
  contacts: t.Optional(t.Array(t.String({ maxLength: 320 }), { maxItems: 10 })),
})
export type RegisterClient = Static<typeof RegisterClient>

export const RegisteredClient = t.Object({
  client_id: t.String(),
  client_id_issued_at: t.Integer(),
  client_name: t.String(),
  client_uri: t.Optional(t.String()),
  redirect_uris: t.Array(t.String()),
  token_endpoint_auth_method: t.Literal('none'),
  grant_types: t.Array(t.String()),
  response_types: t.Array(t.String()),
  scope: t.String(),
})

export const AuthorizeQuery = t.Object({
  response_type: t.String({ maxLength: 50, description: 'must be `code`' }),
  client_id: t.String({ maxLength: 100 }),
  redirect_uri: t.Optional(t.String({ maxLength: 2000, description: 'one of the registered URIs; may be left out when the client registered exactly one' })),
  code_challenge: t.String({ minLength: 43, maxLength: 128, description: 'BASE64URL(SHA-256(code_verifier))' }),
  code_challenge_method: t.String({ maxLength: 10, description: 'must be `S256`' }),
  state: t.Optional(t.String({ maxLength: 1000 })),
  scope: t.Optional(t.String({ maxLength: 200, description: '`sending_access` (the default) or `full_access`' })),
  resource: t.Optional(t.String({ maxLength: 2000 })),
})
export type AuthorizeQuery = Static<typeof AuthorizeQuery>

/** The consent form: the authorization request again, its CSRF token and the person's answer. */
export const ConsentForm = t.Object({
  ...AuthorizeQuery.properties,
  csrf_token: t.String({ maxLength: 200 }),
  decision: t.Union([t.Literal('approve'), t.Literal('deny')]),
  budget_per_period: t.Optional(t.String({ maxLength: 12, description: 'emails per month the client may send; empty for none beyond the account’s' })),
})
export type ConsentForm = Static<typeof ConsentForm>

export const TokenRequest = t.Object({
  grant_type: t.String({ maxLength: 100, description: '`authorization_code` or `refresh_token`' }),
  code: t.Optional(t.String({ maxLength: 200 })),
  redirect_uri: t.Optional(t.String({ maxLength: 2000 })),
  code_verifier: t.Optional(t.String({ maxLength: 200 })),
  client_id: t.Optional(t.String({ maxLength: 100 })),
  refresh_token: t.Optional(t.String({ maxLength: 200 })),
  resource: t.Optional(t.String({ maxLength: 2000 })),
  scope: t.Optional(t.String({ maxLength: 200 })),
})
export type TokenRequest = Static<typeof TokenRequest>

export const TokenResponse = t.Object({
  access_token: t.String(),
  token_type: t.Literal('Bearer'),
  expires_in: t.Integer(),
  refresh_token: t.String(),
  scope: t.String(),
})

export const RevokeRequest = t.Object({
  token: t.String({ maxLength: 200 }),
  token_type_hint: t.Optional(t.String({ maxLength: 50 })),
  client_id: t.Optional(t.String({ maxLength: 100 })),
})
export type RevokeRequest = Static<typeof RevokeRequest>

export const Grant = t.Object({
  object: t.Literal('oauth_grant'),
  id: Uuid,
  client_id: t.String(),
  client_name: t.String(),
  scope: t.String(),
  key_id: t.String({ description: 'the API key whose budget, rate ceiling and loop guard bind the grant’s tokens (GET /limits/keys/{id})' }),
  person_id: t.String({ description: 'who consented' }),
  created_at: Timestamp,
})
export const GrantList = t.Object({ object: t.Literal('list'), data: t.Array(Grant), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const GrantIdParams = t.Object({ id: Uuid })
export const ListGrantsQuery = Paging
export const RevokeResult = t.Object({}, { description: 'empty: the token no longer works, or never did' })
