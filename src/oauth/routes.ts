import { Elysia, t } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { errorResponse } from '../http/errors'
import { Deleted } from '../http/schemas'
import { consentHeaders, consentPage } from './consent'
import * as s from './schema'
import * as svc from './service'

const tag = 'oauth'
/** RFC 6749 5.1: token replies are never cached. */
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' }

export const oauthRoutes = (platform: Platform) =>
  new Elysia({ name: 'oauth' })
    .use(platform)
    .get('/.well-known/oauth-authorization-server', ({ deps }) => svc.authorizationServerMetadata(deps.config.baseUrl), {
      ...op({ id: 'getOAuthServerMetadata', summary: 'OAuth authorization server metadata (RFC 8414)', tag, auth: 'public', method: 'GET' }),
      response: { 200: s.AuthorizationServerMetadata },
    })
    .get('/.well-known/oauth-protected-resource', ({ deps }) => svc.protectedResourceMetadata(deps.config.baseUrl), {
      ...op({
        id: 'getOAuthProtectedResourceMetadata',
        summary: 'Protected resource metadata for the API and /mcp (RFC 9728)',
        description: 'A request without a credential is answered 401 with `WWW-Authenticate: Bearer resource_metadata="…"` pointing here.',
        tag,
        auth: 'public',
        method: 'GET',
      }),
      response: { 200: s.ProtectedResourceMetadata },
    })
    .post('/oauth/register', async ({ deps, body, set }) => ((set.status = 201), svc.registerClient(deps, body)), {
      ...op({
        id: 'registerOAuthClient',
        summary: 'Register a tool client (RFC 7591 dynamic client registration)',
        description: 'Public clients only (`token_endpoint_auth_method: none`): every authorization uses PKCE with S256. Redirect URIs are https, http on a loopback host, or a private-use scheme.',
        tag,
        auth: 'public',
        method: 'POST',
        body: true,
        errors: ['invalid_client_metadata', 'invalid_redirect_uri'],
      }),
      body: s.RegisterClient,
      response: { 201: s.RegisteredClient },
    })
    .get(
      '/oauth/authorize',
      async ({ deps, actor, query }) => {
        const view = await svc.consentView(deps, actor, query)
        return new Response(consentPage(view, query), { headers: consentHeaders(view.redirectUri) })
      },
      {
        ...op({
          id: 'authorizeOAuthClient',
          summary: 'Consent page: a signed-in person allows or denies a tool client (authorization code with PKCE)',
          description:
            'Answers an HTML page with Allow and Deny. Allowing makes a grant whose access is an API key of its own (budget, rate ceiling and loop guard apply) and redirects to the client with a single-use code; denying redirects with `error=access_denied`. A bad client or redirect URI is answered here, never redirected to. Scopes: `sending_access` (default) or `full_access`.',
          tag,
          auth: 'session',
          method: 'GET',
          errors: ['invalid_client', 'invalid_redirect_uri', 'invalid_parameter'],
        }),
        query: s.AuthorizeQuery,
        response: { 200: t.String({ description: 'the consent page, as text/html' }) },
      },
    )
    // The consent form's answer: a console page's action, not an API operation.
    .post('/oauth/authorize', async ({ deps, actor, body }) => new Response(null, { status: 303, headers: { location: await svc.decideConsent(deps, actor, body), ...NO_STORE } }), {
      auth: 'session',
      body: s.ConsentForm,
      detail: { hide: true },
    })
    .post('/oauth/token', async ({ deps, body, set }) => {
      Object.assign(set.headers, NO_STORE)
      const out = await svc.exchangeToken(deps, body)
      if ('tokens' in out) return out.tokens
      // Answered rather than thrown: the request's transaction commits, so a grant ended by a replayed code or refresh token stays ended.
      return errorResponse(deps.config.baseUrl, out.refused, set.headers as Record<string, string>) as never
    }, {
      ...op({
        id: 'getOAuthToken',
        summary: 'Exchange an authorization code, or a refresh token, for an access token',
        description:
          'Form-encoded (RFC 6749). `authorization_code` needs `code`, `code_verifier` and `client_id` (and `redirect_uri` when the authorization named it); `refresh_token` needs `refresh_token`. Access tokens last an hour; refresh tokens are replaced at each use, and a spent one presented again ends the grant. Errors carry `error` and `error_description` beside the usual fields.',
        tag,
        auth: 'public',
        method: 'POST',
        body: true,
        errors: ['invalid_grant', 'unsupported_grant_type'],
      }),
      body: s.TokenRequest,
      response: { 200: s.TokenResponse },
    })
    .post('/oauth/revoke', ({ deps, body }) => svc.revokeToken(deps, body), {
      ...op({
        id: 'revokeOAuthToken',
        summary: 'Revoke an access or refresh token (RFC 7009)',
        description: 'Form-encoded. A refresh token ends its whole grant (and the grant’s key); an access token only itself. Unknown tokens are answered 200 as well.',
        tag,
        auth: 'public',
        method: 'POST',
        body: true,
      }),
      body: s.RevokeRequest,
      response: { 200: s.RevokeResult },
    })
    .get('/oauth/grants', ({ deps, actor, query }) => svc.listGrants(deps, actor, query), {
      ...op({ id: 'listOAuthGrants', summary: 'List the tool clients that hold access to the account, newest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListGrantsQuery,
      response: { 200: s.GrantList },
    })
    .delete('/oauth/grants/:id', ({ deps, actor, params }) => svc.revokeGrant(deps, actor, params.id), {
      ...op({ id: 'revokeOAuthGrant', summary: 'Revoke a tool client’s access: its key and every token, at once', tag, auth: 'full', method: 'DELETE', errors: ['not_found'] }),
      params: s.GrantIdParams,
      response: { 200: Deleted('oauth_grant') },
    })
