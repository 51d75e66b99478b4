import { describe, expect, test } from 'bun:test'
import { createHash, randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { apiKeys, oauthGrants } from '../src/db/tables'
import { buildTools } from '../src/mcp/tools'
import { expectError, harness, type Harness } from './support/harness'
import { asCookie, person, type Person } from './support/people'
import { scenarios } from './support/scenarios'

const ORIGIN = { origin: 'http://mailroom.test' }
const REDIRECT = 'http://127.0.0.1:7777/callback'
const missing = '01890000-0000-7000-8000-000000000000'

const form = (fields: Record<string, string | undefined>) => new URLSearchParams(Object.entries(fields).filter(([, v]) => v !== undefined) as [string, string][]).toString()
const FORM_HEADERS = { 'content-type': 'application/x-www-form-urlencoded' }
const post = (h: Harness, path: string, fields: Record<string, string | undefined>) => h.call('POST', path, { key: null, raw: form(fields), headers: FORM_HEADERS })

function pkce() {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

async function register(h: Harness, body: Record<string, unknown> = {}) {
  const r = await h.call('POST', '/oauth/register', { key: null, body: { client_name: 'Claude Desktop', redirect_uris: [REDIRECT], ...body } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { client_id: string }
}

const authorizeQuery = (clientId: string, challenge: string, extra: Record<string, string> = {}) => ({
  response_type: 'code',
  client_id: clientId,
  redirect_uri: REDIRECT,
  code_challenge: challenge,
  code_challenge_method: 'S256',
  state: 'st-123',
  ...extra,
})

/** The person opens the consent page, reads its form and answers it, as a browser would. */
async function consent(h: Harness, p: Person, query: Record<string, string>, decision = 'approve', extra: Record<string, string> = {}) {
  const page = await h.call('GET', '/oauth/authorize', { ...asCookie(p.cookie), query })
  expect(page.status, JSON.stringify(page.body)).toBe(200)
  const fields: Record<string, string> = {}
  for (const m of (page.body as string).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[m[1]] = m[2].replace(/&amp;/g, '&')
  return h.call('POST', '/oauth/authorize', { ...asCookie(p.cookie, { ...ORIGIN, ...FORM_HEADERS }), raw: form({ ...fields, decision, ...extra }) })
}

/** Register, consent and exchange: what a tool client does to get its first tokens. */
async function connected(h: Harness, opts: { scope?: string; budget?: string } = {}) {
  const client = await register(h)
  const p = await person(h)
  const { verifier, challenge } = pkce()
  const r = await consent(h, p, authorizeQuery(client.client_id, challenge, opts.scope ? { scope: opts.scope } : {}), 'approve', opts.budget ? { budget_per_period: opts.budget } : {})
  const code = new URL(r.headers.get('location')!).searchParams.get('code')!
  const t = await post(h, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: REDIRECT })
  expect(t.status, JSON.stringify(t.body)).toBe(200)
  return { client, person: p, code, verifier, tokens: t.body as { access_token: string; refresh_token: string } }
}

const rpc = (method: string, params: unknown = {}, id = 1) => ({ jsonrpc: '2.0', id, method, params })
const initialize = rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } })
const MCP_HEADERS = { accept: 'application/json, text/event-stream' }

describe('OAuth for tool clients: the whole flow', () => {
  test('register, consent with two-factor done, exchange with PKCE, call /mcp with the token, refresh with rotation, revoke', async () => {
    const h = await harness()
    try {
      const meta = await h.call('GET', '/.well-known/oauth-authorization-server', { key: null })
      expect(meta.body).toMatchObject({ issuer: 'http://mailroom.test', code_challenge_methods_supported: ['S256'], token_endpoint: 'http://mailroom.test/oauth/token' })
      const unauth = await h.call('POST', '/mcp', { key: null, body: initialize })
      expectError(unauth, 'missing_api_key', 401)
      expect(unauth.headers.get('www-authenticate')).toBe('Bearer resource_metadata="http://mailroom.test/.well-known/oauth-protected-resource"')

      const client = await register(h)
      const owner = await person(h, { mfa: 'complete' })
      const { verifier, challenge } = pkce()
      const page = await h.call('GET', '/oauth/authorize', { ...asCookie(owner.cookie), query: authorizeQuery(client.client_id, challenge) })
      expect(page.headers.get('content-type')).toContain('text/html')
      expect(page.body).toContain('Give Claude Desktop access?')
      expect(page.headers.get('content-security-policy')).toContain("form-action 'self' http://127.0.0.1:7777")

      const answer = await consent(h, owner, authorizeQuery(client.client_id, challenge), 'approve', { budget_per_period: '5' })
      expect(answer.status).toBe(303)
      const back = new URL(answer.headers.get('location')!)
      expect(back.origin + back.pathname).toBe(REDIRECT)
      expect(back.searchParams.get('state')).toBe('st-123')
      expect(back.searchParams.get('iss')).toBe('http://mailroom.test')
      const code = back.searchParams.get('code')!

      const t = await post(h, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: REDIRECT })
      expect(t.status).toBe(200)
      expect(t.headers.get('cache-control')).toBe('no-store')
      expect(t.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'sending_access' })

      // The grant is a key of its own: its budget is the one the person set.
      const grants = await h.call('GET', '/oauth/grants')
      expect(grants.body.data).toHaveLength(1)
      expect(grants.body.data[0]).toMatchObject({ client_id: client.client_id, client_name: 'Claude Desktop', scope: 'sending_access', person_id: owner.id })
      const keyId = grants.body.data[0].key_id
      expect((await h.call('GET', `/limits/keys/${keyId}`)).body).toMatchObject({ budget_per_period: 5 })

      // The access token opens an MCP session and calls a tool as the grant's key.
      const init = await h.call('POST', '/mcp', { key: t.body.access_token, body: initialize, headers: MCP_HEADERS })
      expect(init.status, JSON.stringify(init.body)).toBe(200)
      const session = init.headers.get('mcp-session-id')!
      expect(init.body.result.serverInfo.name).toBe('mailroom')
      const limits = await h.call('POST', '/mcp', { key: t.body.access_token, body: rpc('tools/call', { name: 'get_key_limits', arguments: {} }, 2), headers: { ...MCP_HEADERS, 'mcp-session-id': session } })
      expect(limits.body.result.structuredContent).toMatchObject({ key_id: keyId, budget_per_period: 5 })

      // Refresh rotates: the new pair works, the old refresh token is spent.
      const r2 = await post(h, '/oauth/token', { grant_type: 'refresh_token', refresh_token: t.body.refresh_token, client_id: client.client_id })
      expect(r2.status).toBe(200)
      expect(r2.body.refresh_token).not.toBe(t.body.refresh_token)
      expect((await h.call('GET', `/limits/keys/${keyId}`, { key: r2.body.access_token })).status).toBe(200)

      // Revoking the refresh token ends the grant: every token and its key stop working.
      expect((await post(h, '/oauth/revoke', { token: r2.body.refresh_token, client_id: client.client_id })).status).toBe(200)
      const after = await h.call('GET', `/limits/keys/${keyId}`, { key: r2.body.access_token })
      expectError(after, 'oauth_token_invalid', 401)
      expect(after.headers.get('www-authenticate')).toContain('error="invalid_token"')
      expect((await h.call('GET', '/oauth/grants')).body.data).toEqual([])
      const [key] = await h.root.db.q.select().from(apiKeys).where(eq(apiKeys.id, keyId))
      expect(key.revokedAt).not.toBeNull()
    } finally {
      await h.close()
    }
  })

  test('refuses a wrong verifier, a reused code (and ends what it gave) and a foreign redirect URI', async () => {
    const h = await harness()
    try {
      const client = await register(h)
      const p = await person(h)
      const { verifier, challenge } = pkce()
      const r = await consent(h, p, authorizeQuery(client.client_id, challenge))
      const code = new URL(r.headers.get('location')!).searchParams.get('code')!
      const wrong = await post(h, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: pkce().verifier, client_id: client.client_id })
      expectError(wrong, 'invalid_grant', 400)
      expect(wrong.body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('code_verifier') })

      const ok = await post(h, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id })
      expect(ok.status).toBe(200)
      const reused = await post(h, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id })
      expectError(reused, 'invalid_grant', 400)
      expect(reused.body.error_description).toContain('already used')
      expectError(await h.call('GET', '/usage', { key: ok.body.access_token }), 'oauth_token_invalid', 401)

      const foreign = await h.call('GET', '/oauth/authorize', { ...asCookie(p.cookie), query: authorizeQuery(client.client_id, challenge, { redirect_uri: 'https://attacker.example/cb' }) })
      expectError(foreign, 'invalid_redirect_uri', 400)
      expect(foreign.headers.get('location')).toBeNull()
    } finally {
      await h.close()
    }
  })

  test('refuses a code presented by another client or with another redirect URI', async () => {
    const h = await harness()
    try {
      const client = await register(h)
      const other = await register(h)
      const { verifier, challenge } = pkce()
      const r = await consent(h, await person(h), authorizeQuery(client.client_id, challenge))
      const code = new URL(r.headers.get('location')!).searchParams.get('code')!
      expectError(await post(h, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: other.client_id }), 'invalid_grant', 400)
      expectError(await post(h, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: 'http://127.0.0.1:7777/elsewhere' }), 'invalid_grant', 400)
      h.clock.advance(11 * 60_000)
      const late = await post(h, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id })
      expectError(late, 'invalid_grant', 400)
      expect(late.body.error_description).toContain('expired')
    } finally {
      await h.close()
    }
  })

  test('a spent refresh token presented again ends the grant', async () => {
    const h = await harness()
    try {
      const { client, tokens } = await connected(h)
      const next = await post(h, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id })
      expect(next.status).toBe(200)
      expectError(await post(h, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }), 'invalid_grant', 400)
      expectError(await h.call('GET', '/usage', { key: next.body.access_token }), 'oauth_token_invalid', 401)
      expectError(await post(h, '/oauth/token', { grant_type: 'refresh_token', refresh_token: next.body.refresh_token }), 'invalid_grant', 400)
    } finally {
      await h.close()
    }
  })

  test('an access token expires after an hour and the refresh token gets a new one', async () => {
    const h = await harness()
    try {
      const { tokens } = await connected(h)
      h.clock.advance(3600_000)
      expectError(await h.call('GET', '/emails', { key: tokens.access_token }), 'oauth_token_invalid', 401)
      const next = await post(h, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token })
      expect(next.status).toBe(200)
      // A sending_access grant is a sending key: management routes refuse it as they refuse any sending key.
      expectError(await h.call('GET', '/emails', { key: next.body.access_token }), 'restricted_api_key', 403)
    } finally {
      await h.close()
    }
  })

  test('denying redirects with access_denied and makes no grant', async () => {
    const h = await harness()
    try {
      const client = await register(h)
      const p = await person(h)
      const r = await consent(h, p, authorizeQuery(client.client_id, pkce().challenge), 'deny')
      const back = new URL(r.headers.get('location')!)
      expect(back.searchParams.get('error')).toBe('access_denied')
      expect(back.searchParams.get('code')).toBeNull()
      expect(await h.root.db.q.select().from(oauthGrants)).toEqual([])
    } finally {
      await h.close()
    }
  })

  test('the consent form is CSRF-safe: another site’s post, a forged token and a changed field are refused', async () => {
    const h = await harness()
    try {
      const client = await register(h)
      const p = await person(h)
      const q = authorizeQuery(client.client_id, pkce().challenge)
      const crossSite = await h.call('POST', '/oauth/authorize', { ...asCookie(p.cookie, { origin: 'https://evil.example', ...FORM_HEADERS }), raw: form({ ...q, csrf_token: 'x', decision: 'approve' }) })
      expectError(crossSite, 'csrf_origin_rejected', 403)
      const forged = await h.call('POST', '/oauth/authorize', { ...asCookie(p.cookie, { ...ORIGIN, ...FORM_HEADERS }), raw: form({ ...q, csrf_token: 'forged', decision: 'approve' }) })
      expectError(forged, 'csrf_origin_rejected', 403)
      // The token of another person's session does not carry over either.
      const other = await person(h)
      const page = await h.call('GET', '/oauth/authorize', { ...asCookie(other.cookie), query: q })
      const token = page.body.match(/name="csrf_token" value="([^"]+)"/)[1]
      const stolen = await h.call('POST', '/oauth/authorize', { ...asCookie(p.cookie, { ...ORIGIN, ...FORM_HEADERS }), raw: form({ ...q, csrf_token: token, decision: 'approve' }) })
      expectError(stolen, 'csrf_origin_rejected', 403)
      const swapped = await h.call('POST', '/oauth/authorize', { ...asCookie(other.cookie, { ...ORIGIN, ...FORM_HEADERS }), raw: form({ ...q, scope: 'full_access', csrf_token: token, decision: 'approve' }) })
      expectError(swapped, 'csrf_origin_rejected', 403)
      expect(await h.root.db.q.select().from(oauthGrants)).toEqual([])
    } finally {
      await h.close()
    }
  })

  test('a developer cannot give a tool client access (keys belong to admins); a key cannot answer the consent form', async () => {
    const h = await harness()
    try {
      const client = await register(h)
      const dev = await person(h, { role: 'developer' })
      const r = await consent(h, dev, authorizeQuery(client.client_id, pkce().challenge))
      expectError(r, 'insufficient_role', 403)
      const byKey = await h.call('POST', '/oauth/authorize', { raw: form({ ...authorizeQuery(client.client_id, pkce().challenge), csrf_token: 'x', decision: 'approve' }), headers: FORM_HEADERS })
      expectError(byKey, 'session_required', 401)
    } finally {
      await h.close()
    }
  })
})

describe('What is reserved to a person stays with a person', () => {
  test('an OAuth token, even full_access, gets human_action_required on person routes and session_required on session routes', async () => {
    const h = await harness()
    try {
      const { tokens } = await connected(h, { scope: 'full_access' })
      const grants = await h.call('GET', '/oauth/grants', { key: tokens.access_token })
      expect(grants.status).toBe(200)
      const keyId = grants.body.data[0].key_id
      expectError(await h.call('POST', `/api-keys/${keyId}/resume`, { key: tokens.access_token }), 'human_action_required', 403)
      expectError(await h.call('POST', '/team/invites', { key: tokens.access_token, body: { email: 'x@y.test', role: 'admin' } }), 'session_required', 401)
    } finally {
      await h.close()
    }
  })

  test('no MCP tool calls a session or person route: building such a tool fails', () => {
    const routes = [{ method: 'POST', path: '/api-keys/:id/resume', hooks: { detail: { 'x-auth': 'person' } } }]
    expect(() => buildTools(routes)).toThrow(/no route|person route/)
  })
})

describe('OAuth and MCP: scenarios', () => {
  scenarios([
    // GET /.well-known/oauth-authorization-server
    { name: 'describes the authorization server', method: 'GET', path: '/.well-known/oauth-authorization-server', as: 'none', status: 200,
      expect: { issuer: 'http://mailroom.test', authorization_endpoint: 'http://mailroom.test/oauth/authorize', registration_endpoint: 'http://mailroom.test/oauth/register', revocation_endpoint: 'http://mailroom.test/oauth/revoke', grant_types_supported: ['authorization_code', 'refresh_token'], token_endpoint_auth_methods_supported: ['none'] } },

    // GET /.well-known/oauth-protected-resource
    { name: 'describes the protected resource', method: 'GET', path: '/.well-known/oauth-protected-resource', as: 'none', status: 200,
      expect: { resource: 'http://mailroom.test', authorization_servers: ['http://mailroom.test'], scopes_supported: ['sending_access', 'full_access'] } },

    // POST /oauth/register
    { name: 'registers a public client', method: 'POST', path: '/oauth/register', as: 'none', body: { client_name: 'Agent', redirect_uris: [REDIRECT, 'https://app.example/cb', 'com.example.app:/cb'] }, status: 201,
      expect: { client_name: 'Agent', token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
      check: (r) => expect(r.body.client_id).toMatch(/^[0-9a-f-]{36}$/) },
    { name: 'refuses a confidential client', method: 'POST', path: '/oauth/register', as: 'none', body: { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' }, status: 400, code: 'invalid_client_metadata',
      expect: { error: 'invalid_client_metadata' } },
    { name: 'refuses another grant type', method: 'POST', path: '/oauth/register', as: 'none', body: { redirect_uris: [REDIRECT], grant_types: ['client_credentials'] }, status: 400, code: 'invalid_client_metadata' },
    { name: 'refuses plain http on a public host', method: 'POST', path: '/oauth/register', as: 'none', body: { redirect_uris: ['http://app.example/cb'] }, status: 400, code: 'invalid_redirect_uri' },
    { name: 'refuses a redirect URI with a fragment', method: 'POST', path: '/oauth/register', as: 'none', body: { redirect_uris: ['https://app.example/cb#x'] }, status: 400, code: 'invalid_redirect_uri' },
    { name: 'refuses a javascript: redirect URI', method: 'POST', path: '/oauth/register', as: 'none', body: { redirect_uris: ['javascript:alert(1)'] }, status: 400, code: 'invalid_redirect_uri' },
    { name: 'refuses a registration without redirect URIs', method: 'POST', path: '/oauth/register', as: 'none', body: { client_name: 'x' }, status: 400, code: 'validation_error' },
    { name: 'refuses a body that is not JSON', method: 'POST', path: '/oauth/register', as: 'none', raw: 'redirect_uris=x', headers: FORM_HEADERS, status: 415, code: 'unsupported_media_type' },

    // GET /oauth/authorize
    { name: 'shows the consent page to a signed-in person', method: 'GET', setup: (h) => register(h), path: (c) => `/oauth/authorize?${form(authorizeQuery(c.client_id, pkce().challenge))}`, as: { role: 'owner' }, status: 200,
      check: (r) => expect(r.body).toContain('<button name="decision" value="approve">') },
    { name: 'refuses an unknown client', method: 'GET', path: `/oauth/authorize?${form(authorizeQuery(missing, pkce().challenge))}`, as: { role: 'owner' }, status: 401, code: 'invalid_client' },
    { name: 'refuses a redirect URI the client did not register', method: 'GET', setup: (h) => register(h), path: (c) => `/oauth/authorize?${form(authorizeQuery(c.client_id, pkce().challenge, { redirect_uri: 'http://127.0.0.1:7777/other' }))}`, as: { role: 'owner' }, status: 400, code: 'invalid_redirect_uri' },
    { name: 'refuses the plain PKCE method', method: 'GET', setup: (h) => register(h), path: (c) => `/oauth/authorize?${form(authorizeQuery(c.client_id, pkce().challenge, { code_challenge_method: 'plain' }))}`, as: { role: 'owner' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses another response type', method: 'GET', setup: (h) => register(h), path: (c) => `/oauth/authorize?${form(authorizeQuery(c.client_id, pkce().challenge, { response_type: 'token' }))}`, as: { role: 'owner' }, status: 422, code: 'invalid_parameter' },
    { name: 'refuses a request without a code challenge', method: 'GET', setup: (h) => register(h), path: (c) => `/oauth/authorize?response_type=code&client_id=${c.client_id}&code_challenge_method=S256`, as: { role: 'owner' }, status: 400, code: 'validation_error' },
    { name: 'refuses a key: consent belongs to a signed-in person', method: 'GET', setup: (h) => register(h), path: (c) => `/oauth/authorize?${form(authorizeQuery(c.client_id, pkce().challenge))}`, status: 401, code: 'session_required' },
    { name: 'refuses no credential', method: 'GET', path: `/oauth/authorize?${form(authorizeQuery(missing, pkce().challenge))}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'sends a browser that is not signed in to the console’s sign-in, which returns here after', method: 'GET', path: `/oauth/authorize?${form(authorizeQuery(missing, pkce().challenge))}`, as: 'none', headers: { accept: 'text/html,application/xhtml+xml' }, status: 303,
      check: (r) => {
        const location = r.headers.get('location')!
        expect(location).toMatch(/^\/console\/\?next=.*#\/sign-in$/)
        const next = new URL(location, 'http://x').searchParams.get('next')!
        expect(next).toStartWith('/oauth/authorize?')
        expect(new URLSearchParams(next.split('?')[1]).get('response_type')).toBe('code')
      } },
    { name: 'refuses a session still owing its second factor', method: 'GET', setup: (h) => register(h), path: (c) => `/oauth/authorize?${form(authorizeQuery(c.client_id, pkce().challenge))}`, as: { role: 'owner', mfa: 'pending' }, status: 401, code: 'mfa_required' },

    // POST /oauth/token
    { name: 'refuses an unknown code', method: 'POST', path: '/oauth/token', as: 'none', raw: form({ grant_type: 'authorization_code', code: 'mrac_nope', code_verifier: 'v'.repeat(43), client_id: missing }), headers: FORM_HEADERS, status: 400, code: 'invalid_grant', expect: { error: 'invalid_grant' } },
    { name: 'refuses an unknown refresh token', method: 'POST', path: '/oauth/token', as: 'none', raw: form({ grant_type: 'refresh_token', refresh_token: 'mrrt_nope' }), headers: FORM_HEADERS, status: 400, code: 'invalid_grant' },
    { name: 'refuses the client credentials grant', method: 'POST', path: '/oauth/token', as: 'none', raw: form({ grant_type: 'client_credentials' }), headers: FORM_HEADERS, status: 400, code: 'unsupported_grant_type', expect: { error: 'unsupported_grant_type' } },
    { name: 'refuses a code exchange without its verifier', method: 'POST', path: '/oauth/token', as: 'none', raw: form({ grant_type: 'authorization_code', code: 'mrac_x', client_id: missing }), headers: FORM_HEADERS, status: 400, code: 'validation_error', expect: { error: 'invalid_request' } },
    { name: 'refuses a request without grant_type', method: 'POST', path: '/oauth/token', as: 'none', raw: form({ code: 'x' }), headers: FORM_HEADERS, status: 400, code: 'validation_error' },
    // POST /oauth/revoke
    { name: 'answers 200 for a token it does not know', method: 'POST', path: '/oauth/revoke', as: 'none', raw: form({ token: 'mrat_unknown' }), headers: FORM_HEADERS, status: 200, expect: {} },
    { name: 'refuses a request without a token', method: 'POST', path: '/oauth/revoke', as: 'none', raw: form({ token_type_hint: 'access_token' }), headers: FORM_HEADERS, status: 400, code: 'validation_error' },

    // GET /oauth/grants
    { name: 'lists grants, newest first', method: 'GET', path: '/oauth/grants', setup: async (h) => ((await connected(h)).client, h.clock.advance(1000), (await connected(h)).client), status: 200,
      check: (r, last) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data).toHaveLength(2)
        expect(r.body.data[0]).toMatchObject({ object: 'oauth_grant', client_id: last.client_id, scope: 'sending_access' })
      } },
    { name: 'lists nothing on a new account', method: 'GET', path: '/oauth/grants', status: 200, expect: { data: [], has_more: false } },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/oauth/grants', query: { cursor: 'eyJpIjoieCJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/oauth/grants', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/oauth/grants', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/oauth/grants', as: 'revoked', status: 403, code: 'invalid_api_key' },

    // DELETE /oauth/grants/{id}
    { name: 'revokes a grant: its tokens and key stop at once', method: 'DELETE', setup: async (h) => {
      const c = await connected(h)
      return { ...c, grant: (await h.call('GET', '/oauth/grants')).body.data[0] }
    }, path: (c) => `/oauth/grants/${c.grant.id}`, status: 200,
      check: async (r, c, h) => {
        expect(r.body).toEqual({ object: 'oauth_grant', id: c.grant.id, deleted: true })
        expectError(await h.call('GET', '/usage', { key: c.tokens.access_token }), 'oauth_token_invalid', 401)
        expectError(await post(h, '/oauth/token', { grant_type: 'refresh_token', refresh_token: c.tokens.refresh_token }), 'invalid_grant', 400)
      } },
    { name: 'answers 404 for a grant that does not exist', method: 'DELETE', path: `/oauth/grants/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers 404 for another account’s grant', method: 'DELETE', setup: async (h) => {
      await connected(h)
      const grant = (await h.call('GET', '/oauth/grants')).body.data[0]
      return { grant, other: await h.otherAccount() }
    }, path: (c) => `/oauth/grants/${c.grant.id}`, as: 'none', headers: (c) => ({ authorization: `Bearer ${c.other.token}` }), status: 404, code: 'not_found' },
    { name: 'refuses a path id that is no UUID', method: 'DELETE', path: '/oauth/grants/nope', status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'DELETE', path: `/oauth/grants/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },

    // POST /mcp
    { name: 'opens a session with initialize', method: 'POST', path: '/mcp', body: initialize, headers: MCP_HEADERS, status: 200,
      expect: { jsonrpc: '2.0', id: 1, result: { serverInfo: { name: 'mailroom' }, capabilities: { tools: {} } } },
      check: (r) => expect(r.headers.get('mcp-session-id')).toMatch(/^[A-Za-z0-9]{32}$/) },
    { name: 'lists tools without a session too (stateless callers)', method: 'POST', path: '/mcp', body: rpc('tools/list'), status: 200,
      check: (r) => expect(r.body.result.tools.map((t: { name: string }) => t.name)).toContain('send_email') },
    { name: 'answers session_expired for a session it does not know', method: 'POST', path: '/mcp', body: rpc('tools/list'), headers: { 'mcp-session-id': 'gone' }, status: 404, code: 'session_expired' },
    { name: 'answers session_expired for a session idle over a day', method: 'POST', path: '/mcp', setup: async (h) => {
      const r = await h.call('POST', '/mcp', { body: initialize })
      h.clock.advance(24 * 3600_000)
      return r.headers.get('mcp-session-id')
    }, body: rpc('tools/list'), headers: (sid) => ({ 'mcp-session-id': sid }), status: 404, code: 'session_expired' },
    { name: 'answers session_expired when another key names the session', method: 'POST', path: '/mcp', setup: async (h) => {
      const r = await h.call('POST', '/mcp', { body: initialize })
      return r.headers.get('mcp-session-id')
    }, as: 'sending', body: rpc('tools/list'), headers: (sid) => ({ 'mcp-session-id': sid }), status: 404, code: 'session_expired' },
    { name: 'keeps a session that is used', method: 'POST', path: '/mcp', setup: async (h) => {
      const sid = (await h.call('POST', '/mcp', { body: initialize })).headers.get('mcp-session-id')!
      h.clock.advance(20 * 3600_000)
      await h.call('POST', '/mcp', { body: rpc('tools/list'), headers: { 'mcp-session-id': sid } })
      h.clock.advance(20 * 3600_000)
      return sid
    }, body: rpc('tools/list'), headers: (sid) => ({ 'mcp-session-id': sid }), status: 200 },
    { name: 'answers a tool call refused by its route as a tool error with the REST envelope', method: 'POST', path: '/mcp', body: rpc('tools/call', { name: 'get_email', arguments: { id: missing } }), status: 200,
      check: (r) => {
        expect(r.body.result.isError).toBe(true)
        expect(JSON.parse(r.body.result.content[0].text)).toMatchObject({ code: 'not_found' })
      } },
    { name: 'validates tool input with the route’s own schema', method: 'POST', path: '/mcp', body: rpc('tools/call', { name: 'create_topic', arguments: { name: 42 } }), status: 200,
      check: (r) => expect(r.body.result.structuredContent).toMatchObject({ code: 'validation_error', details: [{ field: 'name' }] }) },
    { name: 'answers a tool call without its path id as a validation error', method: 'POST', path: '/mcp', body: rpc('tools/call', { name: 'get_email', arguments: {} }), status: 200,
      check: (r) => expect(r.body.result.structuredContent).toMatchObject({ code: 'validation_error', details: [{ field: 'id' }] }) },
    { name: 'answers an unknown tool with a JSON-RPC error', method: 'POST', path: '/mcp', body: rpc('tools/call', { name: 'drop_database', arguments: {} }), status: 200,
      check: (r) => expect(r.body.error).toMatchObject({ code: -32602 }) },
    { name: 'offers no server-to-client stream: GET answers 405', method: 'GET', path: '/mcp', status: 405, code: 'method_not_allowed', check: (r) => expect(r.headers.get('allow')).toBe('POST, DELETE') },
    { name: 'ends a session with DELETE: later calls naming it answer session_expired', method: 'DELETE', path: '/mcp', setup: async (h) => (await h.call('POST', '/mcp', { body: initialize })).headers.get('mcp-session-id'),
      headers: (sid) => ({ 'mcp-session-id': sid }), status: 204,
      check: async (_r, sid, h) => expectError(await h.call('POST', '/mcp', { body: rpc('tools/list'), headers: { 'mcp-session-id': sid } }), 'session_expired', 404) },
    { name: 'refuses to end another key’s session', method: 'DELETE', path: '/mcp', setup: async (h) => (await h.call('POST', '/mcp', { body: initialize })).headers.get('mcp-session-id'),
      as: 'sending', headers: (sid) => ({ 'mcp-session-id': sid }), status: 404, code: 'session_expired' },
    { name: 'refuses DELETE without a session header', method: 'DELETE', path: '/mcp', status: 400, code: 'validation_error' },
    { name: 'refuses a body that is no JSON-RPC message', method: 'POST', path: '/mcp', body: { hello: 'world' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unsupported protocol version header', method: 'POST', path: '/mcp', body: rpc('tools/list'), headers: { 'mcp-protocol-version': '1999-01-01' }, status: 400, code: 'validation_error',
      check: (r) => expect(r.body.jsonrpc).toBe('2.0') },
    { name: 'refuses a call over 1 MB', method: 'POST', path: '/mcp', body: rpc('tools/call', { name: 'send_email', arguments: { text: 'x'.repeat(1024 * 1024) } }), status: 413, code: 'payload_too_large' },
    { name: 'refuses no credential, pointing at the resource metadata', method: 'POST', path: '/mcp', as: 'none', body: initialize, status: 401, code: 'missing_api_key',
      check: (r) => expect(r.headers.get('www-authenticate')).toContain('resource_metadata=') },
    { name: 'refuses an unknown OAuth access token with 401 so the client refreshes', method: 'POST', path: '/mcp', as: 'none', headers: { authorization: 'Bearer mrat_unknown' }, body: initialize, status: 401, code: 'oauth_token_invalid' },
    { name: 'refuses a revoked key', method: 'POST', path: '/mcp', as: 'revoked', body: initialize, status: 403, code: 'invalid_api_key' },
    { name: 'refuses a paused key', method: 'POST', path: '/mcp', setup: async (h) => {
      const k = await h.key({ name: 'paused' })
      await h.root.db.write((tx) => tx.update(apiKeys).set({ pausedAt: '2026-03-02T09:00:00.000Z', pausedReason: 'test' }).where(eq(apiKeys.id, k.id)))
      return k
    }, as: 'none', headers: (k) => ({ authorization: `Bearer ${k.token}` }), body: initialize, status: 403, code: 'kill_switch_active' },
  ])
})
