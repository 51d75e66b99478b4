// The list's `to`, `from` and `tag` filters over emails from every writer (a send,
// a batch, a broadcast), across pages, in the export, and led by their indexes.
import { describe, expect, test } from 'bun:test'
import { desc } from 'drizzle-orm'
import { emailTags } from '../src/db/tables'
import { filtered } from '../src/emails/records'
import { harness, type Harness } from './support/harness'
import { sentBroadcast, SIM } from './support/broadcasts'
import { message, sent, verifiedDomain } from './support/emails'

/** A send, a batch of three and a broadcast to two, each newer than the one before; another account's look-alike. */
async function world(h: Harness) {
  await verifiedDomain(h)
  await verifiedDomain(h, 'shop.dev')
  const ids: Record<string, string> = {}
  ids.send = await sent(h, message({ cc: 'bob@customer.io', tags: [{ name: 'kind', value: 'receipt' }, { name: 'kind', value: 'order' }, { name: 'kind', value: 'order' }, { name: 'test', value: 'yes' }] }))
  h.clock.advance(1000)
  const batch = await h.call('POST', '/emails/batch', {
    body: [
      message({ from: 'Orders <orders@shop.dev>', tags: [{ name: 'kind', value: 'receipt' }] }),
      message({ from: 'ORDERS@Shop.dev', to: 'carol@other.org', tags: [{ name: 'kind', value: 'order' }] }),
      message({ to: 'Ada <ADA@customer.io>' }),
    ],
  })
  expect(batch.status, JSON.stringify(batch.body)).toBe(200)
  ;[ids.b1, ids.b2, ids.b3] = batch.body.data.map((d: { id: string }) => d.id)
  h.clock.advance(1000)
  await sentBroadcast(h, { from: 'Acme News <news@acme.dev>' })
  // One fan-out statement's emails share their ids' time, so they are named by recipient, not order.
  const broadcast = await h.call('GET', '/emails', { query: { from: 'news@acme.dev' } })
  for (const e of broadcast.body.data as { id: string; to: string[] }[]) ids[e.to[0] === SIM[0] ? 'bcAda' : 'bcBob'] = e.id
  const other = await h.otherAccount()
  await verifiedDomain(h, 'acme.dev', { accountId: other.accountId })
  await sent(h, message({ tags: [{ name: 'kind', value: 'receipt' }] }), other.token)
  return ids
}

const name = (ids: Record<string, string>) => (id: string) => Object.entries(ids).find(([, v]) => v === id)?.[0] ?? id

/** Every page of the list at `limit` a page, joined; checks each page but the last says there is more. */
async function walk(h: Harness, query: Record<string, string>, limit: number) {
  const out: string[] = []
  let cursor: string | undefined
  for (;;) {
    const r = await h.call('GET', '/emails', { query: { ...query, limit: String(limit), ...(cursor ? { cursor } : {}) } })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    out.push(...r.body.data.map((e: { id: string }) => e.id))
    if (!r.body.has_more) return out
    cursor = r.body.next_cursor
  }
}

/** Filters and the emails they find, newest first; `broadcast` stands for its two emails in id order. */
const CASES: [Record<string, string>, string[]][] = [
  [{ to: 'ada@customer.io' }, ['b3', 'b1', 'send']],
  [{ to: ' Ada@Customer.IO ' }, ['b3', 'b1', 'send']],
  [{ to: 'bob@customer.io' }, ['send']],
  [{ to: 'delivered+bob@resend.dev' }, ['bcBob']],
  [{ to: 'nobody@nowhere.test' }, []],
  [{ from: 'orders@shop.dev' }, ['b2', 'b1']],
  [{ from: 'shop.dev' }, ['b2', 'b1']],
  [{ from: '@ACME.dev', to: 'delivered+ada@resend.dev' }, ['bcAda']],
  [{ from: '@ACME.dev', since: '2026-03-02T10:00:01Z' }, ['broadcast', 'b3']],
  [{ from: 'news@acme.dev' }, ['broadcast']],
  [{ from: 'acme' }, []],
  [{ from: 'nobody@nowhere.test' }, []],
  [{ tag: 'kind' }, ['b2', 'b1', 'send']],
  [{ tag: 'kind:order' }, ['b2', 'send']],
  [{ tag: 'kind:receipt' }, ['b1', 'send']],
  [{ tag: 'test' }, ['send']],
  [{ tag: 'kind:' }, []],
  [{ tag: 'kind:none' }, []],
  [{ tag: 'kind', to: 'ada@customer.io' }, ['b1', 'send']],
  [{ tag: 'kind', from: '@acme.dev' }, ['send']],
  [{ tag: 'kind:order', to: 'carol@other.org', from: 'shop.dev' }, ['b2']],
  [{ to: 'ada@customer.io', from: '@acme.dev' }, ['b3', 'send']],
  [{ to: 'delivered+ada@resend.dev', status: 'delivered' }, ['bcAda']],
  [{ to: 'ada@customer.io', since: '2026-03-02T10:00:01Z' }, ['b3', 'b1']],
]

describe('GET /emails filters over every writer', () => {
  test('to, from and tag find each email once, newest first, one page or many, and the export agrees', async () => {
    const h = await harness()
    try {
      const ids = await world(h)
      const n = name(ids)
      const broadcast = [ids.bcAda, ids.bcBob].sort().reverse().map(n)
      for (const [query, names] of CASES) {
        const want = names.flatMap((w) => (w === 'broadcast' ? broadcast : [w]))
        const label = JSON.stringify(query)
        const one = await h.call('GET', '/emails', { query })
        expect(one.status, label).toBe(200)
        expect(one.body.data.map((e: { id: string }) => n(e.id)), label).toEqual(want)
        expect((await walk(h, query, 1)).map(n), label).toEqual(want)
        expect((await walk(h, query, 2)).map(n), label).toEqual(want)
        const csv = await h.call('GET', '/emails/export.csv', { query })
        expect((csv.body as string).trimEnd().split('\r\n').slice(1).map((line) => n(line.split(',')[0])), label).toEqual(want)
      }
    } finally {
      await h.close()
    }
  })

  test('the export pages a filter led by its index past its 500-row chunk, each email once, newest first', async () => {
    const h = await harness({ MAILROOM_RATE_LIMIT: '100000' })
    try {
      await verifiedDomain(h)
      const ids: string[] = []
      for (let i = 0; i < 6; i++) {
        const body = Array.from({ length: 100 }, (_, j) => message({ to: j % 10 ? 'many@customer.io' : 'few@customer.io', tags: [{ name: 'run', value: 'bulk' }] }))
        const r = await h.call('POST', '/emails/batch', { body })
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        ids.push(...r.body.data.map((d: { id: string }) => d.id))
      }
      const want = ids.filter((_, i) => i % 10).sort().reverse()
      for (const query of [{ tag: 'run:bulk', to: 'many@customer.io' }, { to: 'many@customer.io' }]) {
        const csv = await h.call('GET', '/emails/export.csv', { query })
        expect((csv.body as string).trimEnd().split('\r\n').slice(1).map((line) => line.split(',')[0])).toEqual(want)
      }
      const tagged = await h.call('GET', '/emails/export.csv', { query: { tag: 'run' } })
      expect((tagged.body as string).trimEnd().split('\r\n').slice(1).map((line) => line.split(',')[0])).toEqual([...ids].sort().reverse())
    } finally {
      await h.close()
    }
  })

  test('a send writes each distinct name:value and name once; a broadcast email carries none', async () => {
    const h = await harness()
    try {
      const ids = await world(h)
      const rows = await h.root.db.q.select().from(emailTags).orderBy(desc(emailTags.emailId))
      const mine = rows.filter((r) => r.accountId === h.accountId).map((r) => `${name(ids)(r.emailId)} ${r.name}:${r.value}`)
      expect(mine.sort()).toEqual(['b1 kind:', 'b1 kind:receipt', 'b2 kind:', 'b2 kind:order', 'send kind:', 'send kind:order', 'send kind:receipt', 'send test:', 'send test:yes'])
    } finally {
      await h.close()
    }
  })

  test('each filter leads its query through an index, newest first, with no sort and no walk of the emails', async () => {
    const h = await harness()
    try {
      const plans: [Record<string, string>, string][] = [
        [{ to: 'ada@customer.io' }, 'deliveries_account_recipient'],
        [{ from: 'orders@shop.dev' }, 'emails_account_from '],
        [{ from: 'shop.dev' }, 'emails_account_from_domain'],
        [{ tag: 'kind:order' }, 'email_tags'],
        [{ tag: 'kind' }, 'email_tags'],
      ]
      for (const [f, index] of plans) {
        const list = filtered(h.root.db.q, h.accountId, f)
        const page = list.rows({ where: undefined, orderBy: desc(list.id), limit: 21 }).toSQL()
        const plan = (await h.root.db.execute({ sql: `explain query plan ${page.sql}`, args: page.params as string[] })).map((r) => String(r.detail))
        const label = `${JSON.stringify(f)}: ${plan.join(' | ')}`
        expect(plan[0], label).toContain(`SEARCH ${index.startsWith('email_tags') ? 'email_tags' : index.startsWith('deliveries') ? 'deliveries' : 'emails'} USING `)
        expect(plan[0], label).toContain(index)
        expect(plan.some((p) => p.includes('TEMP B-TREE') || p.startsWith('SCAN')), label).toBe(false)
      }
    } finally {
      await h.close()
    }
  })
})
