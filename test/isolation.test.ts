// Tenancy, generated from /openapi.json: one account is filled through the API
// with one of most things, then another account walks every operation with each
// of the first account's ids in each path position (with a key, and with a
// signed-in person for the console's routes). No reply may be a success on
// another account's id, no reply may carry one of its ids it was not given, and
// the first account's rows end exactly as they began.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { harness, type Harness } from './support/harness'
import { contact, defineEvent, publishedTemplate } from './support/automations'
import { madeDraft } from './support/broadcasts'
import { makeProperty, makeSegment } from './support/contact-fixtures'
import { sent, simulated, suppress, verifiedDomain } from './support/emails'
import { encodeBody, fitting, operationsOf, type Operation } from './support/openapi-fuzz'
import { asCookie, person, type Person } from './support/people'
import { makeEndpoint } from './support/webhooks'

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

let h: Harness
let ops: Operation[]
/** The first account's ids: rows of tables that name their account, and rows of the tables below them. */
let owned: string[]
let children: string[]
let before: string
let intruder: { token: string; person: Person }

/** Every row of every table that names an account, for the first account, as text to compare. */
async function rowsOf(accountId: string) {
  const tables = await h.root.db.q.all<{ name: string }>(sql`SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'account_id') AND m.name NOT IN ('request_logs', 'audit_entries')`)
  const out: Record<string, unknown[]> = {}
  for (const { name } of tables) out[name] = await h.root.db.q.all(sql.raw(`SELECT * FROM "${name}" WHERE account_id = '${accountId}' ORDER BY rowid`))
  return JSON.stringify(out)
}

/** One id from each table that has rows, split by whether the table names its account. */
async function idsByTable() {
  const tables = await h.root.db.q.all<{ name: string; scoped: number }>(
    sql`SELECT m.name, EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'account_id') AS scoped FROM sqlite_master m WHERE m.type = 'table' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'id') AND m.name NOT IN ('accounts', 'request_logs')`,
  )
  const scoped: string[] = []
  const below: string[] = []
  for (const t of tables) {
    const [row] = await h.root.db.q.all<{ id: string }>(sql.raw(`SELECT id FROM "${t.name}" ORDER BY rowid DESC LIMIT 1`))
    if (row && typeof row.id === 'string') (t.scoped ? scoped : below).push(row.id)
  }
  return { scoped, below }
}

async function fill() {
  const call = h.call
  await verifiedDomain(h, 'acme.dev')
  await call('POST', '/topics', { body: { name: 'Product news', default_subscription: 'opt_in' } })
  await makeProperty(h, 'plan', 'string')
  await makeSegment(h, 'Static')
  await madeDraft(h)
  await contact(call, 'solo@example.com')
  await publishedTemplate(call)
  await defineEvent(call, 'signed_up')
  await sent(h, simulated({ subject: 'Tenant A mail' }))
  await suppress(h, 'gone@example.com')
  await h.key({ name: 'second key' })
  await makeEndpoint(h, { url: 'http://127.0.0.1:9/hook', events: ['email.sent'] })
  await call('POST', '/support/requests', { body: { subject: 'Help', message: 'Tenant A needs help.' } })
  const owner = await person(h)
  const asOwner = asCookie(owner.cookie, { origin: 'http://mailroom.test' })
  await call('POST', '/team/invites', { ...asOwner, body: { email: 'new@example.com', role: 'developer' } })
  await call('POST', '/dedicated-ips', { ...asOwner, body: { ip: '127.0.0.2' } })
}

beforeAll(async () => {
  h = await harness({ MAILROOM_RATE_LIMIT: '1000000', MAILROOM_PUBLIC_RATE_LIMIT: '1000000', MAILROOM_DNS_SERVERS: '127.0.0.1:9', MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' })
  await fill()
  ;({ scoped: owned, below: children } = await idsByTable())
  // Key use is counted in memory and written every few seconds: written now, so the snapshot holds still.
  await h.root.keyUsage.flush(h.root.db)
  before = await rowsOf(h.accountId)
  const other = await h.otherAccount()
  intruder = { token: other.token, person: await person(h, { accountId: other.accountId }) }
  ops = (await operationsOf(h)).filter((o) => o.auth !== 'public')
}, 60_000)
afterAll(() => h?.close())

/** The paths to try: each of the first account's ids in the first position, and the ids below them in a second. */
function pathsOf(op: Operation): string[] {
  const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])
  if (!names.length) return [op.path]
  const fill = (first: string, second?: string) => op.path.replace(`{${names[0]}}`, first).replace(names[1] ? `{${names[1]}}` : '', second ?? '')
  return names.length === 1 ? owned.map((id) => fill(id)) : owned.flatMap((a) => [...children, ...owned].map((b) => fill(a, b)))
}

describe('tenancy across every operation', () => {
  test('the first account has rows in many tables to reach for', () => {
    expect(owned.length).toBeGreaterThan(15)
    expect(children.length).toBeGreaterThan(0)
  })

  test('another account can neither read nor change the first account’s rows, by key or by session', async () => {
    const leaks: string[] = []
    const mine = new Set([...owned, ...children].map((x) => x.toLowerCase()))
    // Ids the intruder has sent itself may come back (its own request log lists the paths it asked for).
    const told = new Set<string>()
    for (const op of ops) {
      const [body] = op.body ? fc.sample(fitting(op.body.schema, 0), { seed: 7, numRuns: 1 }) : [undefined]
      const raw = op.body ? encodeBody(op.body.type, body) : undefined
      const asPerson = op.auth === 'session' || op.auth === 'person'
      for (const path of pathsOf(op)) {
        const headers: Record<string, string> = { ...(op.body ? { 'content-type': op.body.type } : {}), ...(asPerson ? { cookie: intruder.person.cookie, origin: 'http://mailroom.test' } : {}) }
        const r = await h.call(op.method, path, { key: asPerson ? null : intruder.token, headers, raw })
        const given = (path.match(UUID) ?? []).map((x) => x.toLowerCase())
        for (const id of given) told.add(id)
        const seen = (JSON.stringify(r.body).match(UUID) ?? []).map((x) => x.toLowerCase()).filter((x) => mine.has(x) && !told.has(x))
        if (given.length && r.status < 300) leaks.push(`${op.method} ${path} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 200)}`)
        if (seen.length) leaks.push(`${op.method} ${path} (${r.status}) showed ids of the first account: ${seen.join(', ')}`)
      }
    }
    expect(leaks).toEqual([])
    const after = JSON.parse(await rowsOf(h.accountId)) as Record<string, Record<string, unknown>[]>
    const was = JSON.parse(before) as Record<string, Record<string, unknown>[]>
    const changed = Object.keys(was).flatMap((t) =>
      was[t].length !== after[t].length
        ? [`${t}: ${was[t].length} rows became ${after[t].length}`]
        : was[t].flatMap((row, i) => Object.keys(row).filter((c) => JSON.stringify(row[c]) !== JSON.stringify(after[t][i][c])).map((c) => `${t}[${String(row.name ?? row.id)}].${c}: ${JSON.stringify(row[c])} became ${JSON.stringify(after[t][i][c])}`)),
    )
    expect(changed).toEqual([])
  }, 240_000)
})
