// What a tool client does to get its first OAuth tokens, through the API:
// register, a person consents in the console, the code is exchanged with PKCE.
import { createHash, randomBytes } from 'node:crypto'
import type { Harness } from './harness'
import { asCookie, person, type Person } from './people'

export const REDIRECT = 'http://127.0.0.1:7777/callback'
export const FORM_HEADERS = { 'content-type': 'application/x-www-form-urlencoded' }
export const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
export const postForm = (h: Harness, path: string, fields: Record<string, string>) => h.call('POST', path, { key: null, raw: form(fields), headers: FORM_HEADERS })

export interface Connected {
  clientId: string
  person: Person
  /** The authorization code, spent by the exchange. */
  code: string
  accessToken: string
  refreshToken: string
}

export async function connectTool(h: Harness, p?: Person): Promise<Connected> {
  const reg = await h.call('POST', '/oauth/register', { key: null, body: { client_name: 'Tool', redirect_uris: [REDIRECT] } })
  if (reg.status !== 201) throw new Error(`register answered ${reg.status}: ${JSON.stringify(reg.body)}`)
  const clientId = reg.body.client_id as string
  const who = p ?? (await person(h))
  const verifier = randomBytes(32).toString('base64url')
  const query = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'st',
  }
  const page = await h.call('GET', '/oauth/authorize', { ...asCookie(who.cookie), query })
  const fields: Record<string, string> = {}
  for (const m of String(page.body).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[m[1]] = m[2].replace(/&amp;/g, '&')
  const answer = await h.call('POST', '/oauth/authorize', { ...asCookie(who.cookie, { origin: h.config.baseUrl, ...FORM_HEADERS }), raw: form({ ...fields, decision: 'approve' }) })
  const code = new URL(answer.headers.get('location') ?? 'http://x/').searchParams.get('code')
  if (!code) throw new Error(`consent answered ${answer.status}: ${JSON.stringify(answer.body)}`)
  const t = await postForm(h, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: REDIRECT })
  if (t.status !== 200) throw new Error(`token exchange answered ${t.status}: ${JSON.stringify(t.body)}`)
  return { clientId, person: who, code, accessToken: t.body.access_token, refreshToken: t.body.refresh_token }
}
