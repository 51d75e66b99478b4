// Credentials at the end of their life, over every operation /openapi.json
// describes: a revoked key, an expired key, a key rotated with no grace, a key
// rotated with an hour of grace once the hour is over, a revoked and an expired
// OAuth access token, a grant taken back, and a console session signed out or
// expired. Each is refused by every operation that takes a credential, with the
// catalogue's code, and nothing is written by any of those requests. The same
// walk proves the living credentials (the new tokens, the old one inside its
// grace) still open every read.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { CATALOGUE, type ErrorCode } from '../src/errors/catalogue'
import { HOUR, MINUTE, iso } from '../src/lib/clock'
import { harness, type Harness } from './support/harness'
import { encodeBody, fitting, operationsOf, type Operation } from './support/openapi-fuzz'
import { postForm, connectTool } from './support/oauth-client'
import { person } from './support/people'
import { changedTables, tableContents, tableCounts, tableNames } from './support/tables'

const UUID = '01890000-0000-7000-8000-00000000abcd'
const ORIGIN = 'http://mailroom.test'

/** How a credential is presented: a bearer token or a session cookie. */
type Credential = { bearer: string } | { cookie: string }

let h: Harness
let ops: Operation[]
let tables: string[]
/** One id of the account per table, so a request that slipped through would reach a real row. */
let ids: Record<string, string>
const tokens: Record<string, string> = {}
const sessions: Record<string, string> = {}

async function newKey(name: string, extra: Record<string, unknown> = {}) {
  const r = await h.call('POST', '/api-keys', { body: { name, permission: 'full_access', ...extra } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; token: string }
}

async function rotate(id: string, grace_hours: number) {
  const r = await h.call('POST', `/api-keys/${id}/rotate`, { body: { grace_hours } })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.token as string
}

/** The table a path's first segment names (`/api-keys/{id}` → api_keys), when there is one with rows. */
function idFor(path: string) {
  const segment = path.split('/')[1].replace(/-/g, '_')
  const table = tables.find((t) => t === segment) ?? tables.find((t) => t.startsWith(segment.replace(/s$/, '')) && ids[t])
  return (table && ids[table]) ?? UUID
}

/** The operation's path with real ids where its first segment names a table, and a body that fits its schema. */
function requestFor(op: Operation) {
  let first = true
  const path = op.path.replace(/\{[^}]+\}/g, () => {
    const v = first ? idFor(op.path) : UUID
    first = false
    return v
  })
  const [body] = op.body ? fc.sample(fitting(op.body.schema, 0), { seed: 11, numRuns: 1 }) : [undefined]
  return { path, raw: op.body ? encodeBody(op.body.type, body) : undefined, type: op.body?.type }
}

function send(op: Operation, cred: Credential) {
  const { path, raw, type } = requestFor(op)
  const headers: Record<string, string> = { ...(type ? { 'content-type': type } : {}), origin: ORIGIN }
  if ('cookie' in cred) headers.cookie = cred.cookie
  return h.call(op.method, path, { key: 'bearer' in cred ? cred.bearer : null, headers, raw })
}

/**
 * Every operation that takes a credential, with each credential: the refusal it
 * must answer (code, status from the catalogue, the whole envelope), and no table
 * changed by it. Answers what went wrong.
 */
async function walkRefused(creds: Record<string, [Credential, ErrorCode]>) {
  const failures: string[] = []
  await h.root.keyUsage.flush(h.root.db)
  await h.root.requestLog.flush()
  const before = await tableContents(h, tables)
  for (const op of ops) {
    const counts = await tableCounts(h, tables)
    for (const [name, [cred, code]] of Object.entries(creds)) {
      const r = await send(op, cred)
      const got = { status: r.status, code: r.body?.code, fix: typeof r.body?.fix, docs: r.body?.docs_url }
      const want = { status: CATALOGUE[code].status, code, fix: 'string', docs: `${ORIGIN}/docs/errors/${code}` }
      if (JSON.stringify(got) !== JSON.stringify(want)) failures.push(`${name}: ${op.method} ${op.path} answered ${r.status} ${JSON.stringify(r.body).slice(0, 160)}`)
    }
    const changed = changedTables(counts, await tableCounts(h, tables))
    if (changed.length) failures.push(`${op.method} ${op.path}: rows changed in ${changed.join(', ')}`)
  }
  await h.root.keyUsage.flush(h.root.db)
  await h.root.requestLog.flush()
  for (const t of changedTables(before, await tableContents(h, tables))) failures.push(`rows of ${t} changed during the walk`)
  return failures
}

/** Living credentials on every read: never refused for what they are. Answers the refusals. */
async function walkReads(creds: Record<string, Credential>) {
  const refusals = ['missing_api_key', 'invalid_api_key', 'oauth_token_invalid', 'session_required', 'mfa_required', 'kill_switch_active']
  const refused: string[] = []
  for (const op of ops.filter((o) => o.method === 'GET' && o.auth !== 'session' && o.auth !== 'person')) {
    for (const [name, cred] of Object.entries(creds)) {
      const r = await send(op, cred)
      if (refusals.includes(r.body?.code)) refused.push(`${name}: GET ${op.path} answered ${r.body.code}`)
    }
  }
  return refused
}

beforeAll(async () => {
  h = await harness({ MAILROOM_RATE_LIMIT: '1000000', MAILROOM_PUBLIC_RATE_LIMIT: '1000000', MAILROOM_DNS_SERVERS: '127.0.0.1:9', MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' })
  ops = (await operationsOf(h)).filter((o) => o.auth !== 'public')
  // Some of most things, so the ids in the paths are real.
  await h.call('POST', '/topics', { body: { name: 'News' } })
  await h.call('POST', '/contacts', { body: { email: 'ada@example.com' } })
  await h.call('POST', '/segments', { body: { name: 'Static' } })
  await h.call('POST', '/webhooks', { body: { url: 'http://127.0.0.1:9/hook', events: ['email.sent'] } })
  await h.call('POST', '/domains', { body: { name: 'lifecycle.dev' } })

  const revoked = await newKey('revoked')
  expect((await h.call('DELETE', `/api-keys/${revoked.id}`)).status).toBe(200)
  tokens.revoked = revoked.token
  const expiring = await newKey('expiring', { expires_at: iso(h.clock.now() + 30 * MINUTE) })
  tokens.expiring = expiring.token
  const noGrace = await newKey('rotated, no grace')
  tokens.noGraceOld = noGrace.token
  tokens.noGraceNew = await rotate(noGrace.id, 0)
  const hourGrace = await newKey('rotated, an hour of grace')
  tokens.hourGraceOld = hourGrace.token
  tokens.hourGraceNew = await rotate(hourGrace.id, 1)
  const dayGrace = await newKey('rotated, a day of grace')
  tokens.dayGraceOld = dayGrace.token
  tokens.dayGraceNew = await rotate(dayGrace.id, 24)

  const revokedTool = await connectTool(h)
  expect((await postForm(h, '/oauth/revoke', { token: revokedTool.accessToken, client_id: revokedTool.clientId })).status).toBe(200)
  tokens.oauthRevoked = revokedTool.accessToken
  const takenBack = await connectTool(h)
  const grant = (await h.call('GET', '/oauth/grants')).body.data.find((g: { client_id: string }) => g.client_id === takenBack.clientId)
  expect((await h.call('DELETE', `/oauth/grants/${grant.id}`)).status).toBe(200)
  tokens.oauthGrantGone = takenBack.accessToken
  tokens.oauthExpiring = (await connectTool(h)).accessToken
  // Revoking the key behind a grant ends the grant's tokens too, the refresh token included.
  const keyGone = await connectTool(h)
  const keyId = (await h.call('GET', '/oauth/grants')).body.data.find((g: { client_id: string }) => g.client_id === keyGone.clientId).key_id
  expect((await h.call('DELETE', `/api-keys/${keyId}`)).status).toBe(200)
  tokens.oauthKeyRevoked = keyGone.accessToken
  const refreshed = await postForm(h, '/oauth/token', { grant_type: 'refresh_token', refresh_token: keyGone.refreshToken, client_id: keyGone.clientId })
  expect({ status: refreshed.status, error: refreshed.body.error }).toEqual({ status: 400, error: 'invalid_grant' })

  const signedOut = await person(h)
  expect((await h.call('POST', '/auth/sign-out', { key: null, headers: { cookie: signedOut.cookie, origin: ORIGIN } })).status).toBe(200)
  sessions.signedOut = signedOut.cookie
  sessions.expiring = (await person(h)).cookie

  tables = await tableNames(h)
  ids = {}
  for (const t of tables) {
    const [row] = await h.root.db.q.all<{ id: unknown }>(sql.raw(`SELECT * FROM "${t}" WHERE EXISTS (SELECT 1 FROM pragma_table_info('${t}') WHERE name = 'id') ORDER BY rowid DESC LIMIT 1`))
    if (typeof row?.id === 'string') ids[t] = row.id
  }
}, 60_000)
afterAll(() => h?.close())

describe('key lifecycle over every operation', () => {
  test('the walk covers every operation that takes a credential', () => {
    expect(ops.length).toBeGreaterThan(180)
  })

  test('inside the grace hour the old token still opens every read, and so do the new tokens', async () => {
    const refused = await walkReads({
      'old token inside its grace': { bearer: tokens.hourGraceOld },
      'new token after a rotation with grace': { bearer: tokens.hourGraceNew },
      'new token after a rotation without grace': { bearer: tokens.noGraceNew },
      'old token inside a day of grace': { bearer: tokens.dayGraceOld },
      'a key before its expiry': { bearer: tokens.expiring },
      'an OAuth token within its hour': { bearer: tokens.oauthExpiring },
      'a live console session': { cookie: sessions.expiring },
    })
    expect(refused).toEqual([])
  }, 60_000)

  test('revoked, expired and rotated-out keys, ended OAuth access and a signed-out session are refused everywhere and write nothing', async () => {
    h.clock.advance(61 * MINUTE)
    expect(await walkRefused({
      'revoked key': [{ bearer: tokens.revoked }, 'invalid_api_key'],
      'expired key': [{ bearer: tokens.expiring }, 'invalid_api_key'],
      'key rotated without grace, old token': [{ bearer: tokens.noGraceOld }, 'invalid_api_key'],
      'key rotated with an hour of grace, old token after 61 minutes': [{ bearer: tokens.hourGraceOld }, 'invalid_api_key'],
      'revoked OAuth access token': [{ bearer: tokens.oauthRevoked }, 'oauth_token_invalid'],
      'OAuth access token of a grant taken back': [{ bearer: tokens.oauthGrantGone }, 'oauth_token_invalid'],
      'OAuth access token past its hour': [{ bearer: tokens.oauthExpiring }, 'oauth_token_invalid'],
      'OAuth access token whose key was revoked': [{ bearer: tokens.oauthKeyRevoked }, 'oauth_token_invalid'],
      'signed-out console session': [{ cookie: sessions.signedOut }, 'session_required'],
    })).toEqual([])
  }, 90_000)

  test('the new tokens outlive the grace of the old ones', async () => {
    const refused = await walkReads({
      'new token, grace over': { bearer: tokens.hourGraceNew },
      'new token, no grace': { bearer: tokens.noGraceNew },
      'old token after 61 minutes of a day of grace': { bearer: tokens.dayGraceOld },
    })
    expect(refused).toEqual([])
  }, 60_000)

  test('an expired console session is refused everywhere and writes nothing', async () => {
    h.clock.advance(h.config.sessionHours * HOUR)
    expect(await walkRefused({ 'expired console session': [{ cookie: sessions.expiring }, 'session_required'] })).toEqual([])
  }, 60_000)

  test('a day of grace ends: the old token is refused everywhere, the new one still works', async () => {
    h.clock.advance(24 * HOUR)
    expect(await walkRefused({ 'key rotated with a day of grace, old token after 25 hours': [{ bearer: tokens.dayGraceOld }, 'invalid_api_key'] })).toEqual([])
    expect(await walkReads({ 'new token after a day of grace': { bearer: tokens.dayGraceNew } })).toEqual([])
  }, 60_000)
})
