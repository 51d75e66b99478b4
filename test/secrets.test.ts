// Secrets are shown once, in the reply that makes them, and never again. Every
// kind is made through the API (API keys and their rotation, webhook signing
// secrets and their rotation, DKIM private keys, OAuth codes and tokens, a
// password, console sessions, a TOTP secret and recovery codes, invitation
// tokens, the billing provider's keys); then every GET operation of
// /openapi.json is walked with real ids, and the request log, the audit record,
// the process log, webhook deliveries to a real receiver and MCP tool replies are
// searched for each secret, in each form it is stored in.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { eq } from 'drizzle-orm'
import { domains } from '../src/db/tables'
import { WEBHOOK_EVENT_KINDS } from '../src/webhooks/kinds'
import { SECRET_KEY, WEBHOOK_SECRET, billingEnv, fakeStripe, subscribe } from './support/billing'
import type { FakeStripe } from './support/fake-stripe'
import { expectError, harness, silentLog, type Harness } from './support/harness'
import { connectTool, postForm } from './support/oauth-client'
import { operationsOf, type Operation } from './support/openapi-fuzz'
import { PASSWORD, asCookie, cookieFrom, person, totp, type Person } from './support/people'
import { tableNames } from './support/tables'
import { startReceiver, type Receiver } from './support/webhook-receiver'

const ORIGIN = 'http://mailroom.test'

/** A secret by what it is, with every form it may be found in. */
const secrets: { what: string; forms: string[] }[] = []
const keep = (what: string, value: string, ...more: string[]) => secrets.push({ what, forms: [value, ...more].filter((f) => f.length >= 10) })
const cookieValue = (cookie: string) => cookie.slice(cookie.indexOf('=') + 1)

/** A PEM private key: its text, its base64 body in one piece, and each line of the body. */
function pemForms(pem: string) {
  const body = pem.split('\n').filter((l) => l && !l.startsWith('-----'))
  return [pem, body.join(''), ...body]
}

/** whsec_ and its base64 part, and the key's bytes as hex. */
const whsecForms = (s: string) => [s.slice('whsec_'.length), Buffer.from(s.slice('whsec_'.length), 'base64').toString('hex')]

/** Where each secret was seen: `where` is the place searched. */
function leaks(where: string, text: string) {
  const found: string[] = []
  for (const s of secrets) if (s.forms.some((f) => text.includes(f))) found.push(`${s.what} in ${where}`)
  return found
}

let h: Harness
let fake: FakeStripe
let rx: Receiver
let owner: Person
let otherKey: string
const lines: string[] = []
const quiet = { info: silentLog.info, error: silentLog.error }

async function fill() {
  owner = await person(h)
  keep('the owner’s session token', cookieValue(owner.cookie))
  const asOwner = (o: Record<string, unknown> = {}) => ({ ...asCookie(owner.cookie, { origin: ORIGIN }), ...o })

  const key = await h.call('POST', '/api-keys', { body: { name: 'ci', permission: 'full_access' } })
  keep('an API key token', key.body.token)
  const rotated = await h.call('POST', `/api-keys/${key.body.id}/rotate`, { body: { grace_hours: 24 } })
  keep('a rotated API key token', rotated.body.token)
  // Used once, so its request is in the log with the token in its header.
  expect((await h.call('GET', '/api-keys', { key: rotated.body.token })).status).toBe(200)

  const hook = await h.call('POST', '/webhooks', { body: { url: rx.url, events: [...WEBHOOK_EVENT_KINDS] } })
  expect(hook.status, JSON.stringify(hook.body)).toBe(201)
  keep('a webhook signing secret', hook.body.signing_secret, ...whsecForms(hook.body.signing_secret))
  const hook2 = await h.call('POST', `/webhooks/${hook.body.id}/signing-secret/rotate`, { body: {} })
  keep('a rotated webhook signing secret', hook2.body.signing_secret, ...whsecForms(hook2.body.signing_secret))
  await h.call('POST', `/webhooks/${hook.body.id}/test`, { body: {} })

  const domain = await h.call('POST', '/domains', { body: { name: 'secrets.dev' } })
  expect(domain.status, JSON.stringify(domain.body)).toBe(201)
  expect((await h.call('POST', `/domains/${domain.body.id}/dkim/rotate`, { body: {} })).status).toBe(200)
  const [row] = await h.root.db.q.select().from(domains).where(eq(domains.id, domain.body.id))
  keep('a DKIM private key', row.dkimPrivateKey, ...pemForms(row.dkimPrivateKey).slice(1))
  expect(row.dkimNextPrivateKey).toBeTruthy()
  keep('the next DKIM private key', row.dkimNextPrivateKey!, ...pemForms(row.dkimNextPrivateKey!).slice(1))

  const tool = await connectTool(h, owner)
  keep('an OAuth authorization code', tool.code)
  keep('an OAuth access token', tool.accessToken)
  keep('an OAuth refresh token', tool.refreshToken)
  const refreshed = await postForm(h, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tool.refreshToken, client_id: tool.clientId })
  keep('a refreshed OAuth access token', refreshed.body.access_token)
  keep('a refreshed OAuth refresh token', refreshed.body.refresh_token)
  expect((await h.call('GET', '/usage', { key: refreshed.body.access_token })).status).toBeLessThan(500)
  // A client that pastes its credentials into the wrong field: refused, and its request logged without them.
  const pasted = `${rotated.body.token} ${tool.code} ${refreshed.body.access_token} ${refreshed.body.refresh_token}`
  expectError(await h.call('POST', '/topics', { body: { name: ['not a string'], description: pasted } }), 'validation_error', 400)

  // A new person joins by invitation with a password, signs in and enrols a second factor.
  const invite = await h.call('POST', '/team/invites', asOwner({ body: { email: 'newbie@people.test', role: 'developer' } }))
  expect(invite.status, JSON.stringify(invite.body)).toBe(201)
  keep('an invitation token', invite.body.token)
  const password = 'a password nobody else has, 7f3a9c'
  keep('a password', password)
  const joined = await h.call('POST', '/accounts', { key: null, body: { email: 'newbie@people.test', password, invite_token: invite.body.token } })
  expect(joined.status, JSON.stringify(joined.body)).toBe(201)
  const signedIn = await h.call('POST', '/auth/sign-in', { key: null, body: { email: 'newbie@people.test', password } })
  expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200)
  const cookie = cookieFrom(signedIn.headers)
  keep('a signed-in session token', cookieValue(cookie))
  const enrol = await h.call('POST', '/auth/mfa/enroll', { ...asCookie(cookie, { origin: ORIGIN }), body: {} })
  expect(enrol.status, JSON.stringify(enrol.body)).toBe(200)
  keep('a TOTP secret', enrol.body.secret)
  const verified = await h.call('POST', '/auth/mfa/verify', { ...asCookie(cookie, { origin: ORIGIN }), body: { code: totp(h, enrol.body.secret) } })
  expect(verified.status, JSON.stringify(verified.body)).toBe(200)
  for (const c of verified.body.recovery_codes as string[]) keep('a recovery code', c, c.replace('-', ''))
  expect((await h.call('GET', '/team', asCookie(cookie))).status).toBe(200)
  // A second sign-in, its second factor passed with a recovery code instead of the app.
  const again = cookieFrom((await h.call('POST', '/auth/sign-in', { key: null, body: { email: 'newbie@people.test', password } })).headers)
  keep('a second signed-in session token', cookieValue(again))
  const recovered = await h.call('POST', '/auth/mfa/verify', { ...asCookie(again, { origin: ORIGIN }), body: { code: verified.body.recovery_codes[0] } })
  expect(recovered.status, JSON.stringify(recovered.body)).toBe(200)

  // A person of another account accepts an invitation while signed in there.
  const other = await h.otherAccount()
  otherKey = other.token
  const mover = await person(h, { accountId: other.accountId, email: 'mover@people.test' })
  const invite2 = await h.call('POST', '/team/invites', asOwner({ body: { email: 'mover@people.test', role: 'developer' } }))
  keep('an invitation token accepted in the path', invite2.body.token)
  const accepted = await h.call('POST', `/invite/${invite2.body.token}/accept`, { ...asCookie(mover.cookie, { origin: ORIGIN }), body: {} })
  expect(accepted.status, JSON.stringify(accepted.body)).toBeLessThan(300)

  await subscribe(fake, h)
  keep('the payment provider’s secret key', SECRET_KEY)
  keep('the payment provider’s webhook secret', WEBHOOK_SECRET)
  expect(PASSWORD.length).toBeGreaterThan(12)
  keep('the test people’s password', PASSWORD)

  for (let i = 0; i < 5; i++) await h.dispatcher.runOnce()
}

beforeAll(async () => {
  // The process log, info lines and errors both, as the harness's logger sees them.
  silentLog.info = (msg, fields) => lines.push(`${msg} ${JSON.stringify(fields)}`)
  silentLog.error = (msg, fields) => lines.push(`${msg} ${JSON.stringify(fields)}`)
  fake = fakeStripe()
  rx = await startReceiver()
  h = await harness({ ...billingEnv(fake), MAILROOM_RATE_LIMIT: '1000000', MAILROOM_PUBLIC_RATE_LIMIT: '1000000', MAILROOM_DNS_SERVERS: '127.0.0.1:9', MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' })
  await fill()
}, 60_000)
afterAll(async () => {
  Object.assign(silentLog, quiet)
  await h?.close()
  await rx?.close()
  await fake?.stop()
})

/** One id of every table that has rows: what the path positions are filled with. */
async function allIds() {
  const ids: string[] = []
  for (const t of await tableNames(h)) {
    const rows = await h.root.db.q.all<{ id: unknown }>(sql.raw(`SELECT * FROM "${t}" WHERE EXISTS (SELECT 1 FROM pragma_table_info('${t}') WHERE name = 'id') ORDER BY rowid DESC LIMIT 2`))
    for (const r of rows) if (typeof r.id === 'string') ids.push(r.id)
  }
  return ids
}

function pathsOf(op: Operation, ids: string[]) {
  const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])
  const fill = (a: string, b = '') => op.path.replace(`{${names[0]}}`, a).replace(names[1] ? `{${names[1]}}` : '', b)
  if (!names.length) return [op.path]
  return names.length === 1 ? ids.map((a) => fill(a)) : ids.flatMap((a) => ids.map((b) => fill(a, b)))
}

/** Every item of a paged list, following `next_cursor`. */
async function everyPage(path: string, key?: string) {
  const items: { id: string }[] = []
  let cursor: string | undefined
  do {
    const r = await h.call('GET', path, { key, query: { limit: 100, cursor } })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    items.push(...r.body.data)
    cursor = r.body.has_more ? r.body.next_cursor : undefined
  } while (cursor)
  return items
}

describe('secrets never appear after the reply that made them', () => {
  test('every kind of secret was made', () => {
    expect(new Set(secrets.map((s) => s.what)).size).toBeGreaterThanOrEqual(20)
    expect(rx.received.length).toBeGreaterThan(0)
  })

  test('the request log holds none: GET /logs, GET /logs/{id} and the table', async () => {
    const found: string[] = []
    for (const [key, least] of [[h.token, 10], [otherKey, 1]] as const) {
      const list = await everyPage('/logs', key)
      expect(list.length).toBeGreaterThanOrEqual(least)
      found.push(...leaks('GET /logs', JSON.stringify(list)))
      for (const entry of list) found.push(...leaks(`GET /logs/{id} of ${(entry as { endpoint?: string }).endpoint}`, JSON.stringify((await h.call('GET', `/logs/${entry.id}`, { key })).body)))
    }
    await h.root.requestLog.flush()
    for (const row of await h.root.db.q.all<Record<string, unknown>>(sql`SELECT * FROM request_logs`)) found.push(...leaks(`request_logs row ${row.method} ${row.path}`, JSON.stringify(row)))
    expect(found).toEqual([])
  }, 60_000)

  test('the audit record holds none: GET /audit, GET /audit/{id} and the table', async () => {
    const found: string[] = []
    const list = await everyPage('/audit')
    expect(list.length).toBeGreaterThan(5)
    found.push(...leaks('GET /audit', JSON.stringify(list)))
    for (const entry of list) found.push(...leaks(`GET /audit/${entry.id}`, JSON.stringify((await h.call('GET', `/audit/${entry.id}`)).body)))
    for (const row of await h.root.db.q.all<Record<string, unknown>>(sql`SELECT * FROM audit_entries`)) found.push(...leaks(`audit_entries row ${row.resource} ${row.action}`, JSON.stringify(row)))
    expect(found).toEqual([])
  })

  test('webhook deliveries to a real receiver carry none', () => {
    expect(rx.received.map((r) => leaks(`a webhook delivery (${r.headers['webhook-id']})`, r.body + JSON.stringify(r.headers))).flat()).toEqual([])
  })

  test('MCP tool replies carry none', async () => {
    const rpc = (method: string, params: unknown, id: number) => ({ jsonrpc: '2.0', id, method, params })
    const headers = { accept: 'application/json, text/event-stream' }
    const init = await h.call('POST', '/mcp', { body: rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } }, 1), headers })
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')! }
    const tools = (await h.call('POST', '/mcp', { body: rpc('tools/list', {}, 2), headers: session })).body.result.tools as { name: string; inputSchema: { required?: string[] } }[]
    const reads = tools.filter((t) => /^(list|get)_/.test(t.name) && !t.inputSchema.required?.length)
    expect(reads.length).toBeGreaterThan(5)
    const found: string[] = []
    for (const [i, t] of reads.entries()) {
      const r = await h.call('POST', '/mcp', { body: rpc('tools/call', { name: t.name, arguments: {} }, 10 + i), headers: session })
      found.push(...leaks(`MCP ${t.name}`, JSON.stringify(r.body)))
    }
    expect(found).toEqual([])
  })

  test('no GET operation answers one, with any of the account’s ids in its path', async () => {
    const ops = (await operationsOf(h)).filter((o) => o.method === 'GET' && o.auth !== 'public')
    expect(ops.length).toBeGreaterThan(80)
    const ids = await allIds()
    const found = new Set<string>()
    let calls = 0
    for (const op of ops) {
      const session = op.auth === 'session' || op.auth === 'person'
      for (const path of pathsOf(op, ids)) {
        const r = await h.call('GET', path, session ? asCookie(owner.cookie) : {})
        calls++
        for (const l of leaks(`GET ${op.path} (${r.status})`, typeof r.body === 'string' ? r.body : JSON.stringify(r.body))) found.add(l)
      }
    }
    expect(calls).toBeGreaterThan(1000)
    expect([...found]).toEqual([])
  }, 90_000)

  test('the process log holds none, even of a request that fails while storage is down', async () => {
    const invite = await h.call('POST', '/team/invites', { ...asCookie(owner.cookie, { origin: ORIGIN }), body: { email: 'late@people.test', role: 'viewer' } })
    keep('an invitation token accepted during an outage', invite.body.token)
    const late = await person(h, { accountId: (await h.otherAccount()).accountId, email: 'late@people.test' })
    // A rotation whose write fails: the live secret is a parameter of the failed statement.
    await h.root.db.q.run(sql`CREATE TRIGGER refuse_rotation BEFORE UPDATE ON webhook_endpoints BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)
    const [hook] = (await h.call('GET', '/webhooks')).body.data
    const failed = await h.call('POST', `/webhooks/${hook.id}/signing-secret/rotate`, { body: {} })
    expectError(failed, 'internal_server_error', 500)
    expect(lines.some((l) => l.includes(failed.headers.get('x-request-id')!))).toBe(true)
    h.root.db.close()
    const r = await h.call('POST', `/invite/${invite.body.token}/accept`, { ...asCookie(late.cookie, { origin: ORIGIN }), body: {} })
    expectError(r, 'service_unavailable', 503)
    expect(lines.some((l) => l.includes(r.headers.get('x-request-id')!))).toBe(true)
    expect(leaks('the process log', lines.join('\n'))).toEqual([])
  })
})
