// Segment resolution at scale: contacts with properties, topic answers and opens
// seeded into a fresh database, then the members of a rule segment (a property,
// a topic answer and an engagement window) and of a static segment read through
// segmentFilter, beside a plain scan of the same contacts as the ceiling.
import { count, eq } from 'drizzle-orm'
import { ensureFirstAccount } from '../../src/accounts/service'
import { openRoot } from '../../src/boot'
import { loadConfig } from '../../src/config'
import { contactProperties, contacts, contactTopics, emailEvents, segmentContacts, segments, topics } from '../../src/db/tables'
import { DAY, iso } from '../../src/lib/clock'
import { segmentFilter } from '../../src/segments/rules'
import type { Rule } from '../../src/segments/schema'
import { tempDir } from './lib'

const ROWS_PER_WRITE = 1000

async function timed<T>(fn: () => Promise<T>, runs = 5): Promise<{ value: T; ms: number }> {
  let best = Infinity
  let value!: T
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    value = await fn()
    best = Math.min(best, performance.now() - t)
  }
  return { value, ms: best }
}

export async function segmentResolution(n: number) {
  const root = await openRoot(loadConfig({ MAILROOM_DATA_DIR: tempDir('segments') }), { log: { info() {}, error() {} } })
  const { accountId } = (await ensureFirstAccount(root))!
  const now = Date.parse('2026-03-02T10:00:00Z')
  const at = iso(now)
  const topicId = root.ids.uuid()
  const ruleId = root.ids.uuid()
  const staticId = root.ids.uuid()
  const rules: Rule[] = [
    { field: 'property', key: 'score', op: 'gte', value: 50 },
    { field: 'topic', topic_id: topicId, subscribed: true },
    { field: 'engagement', event: 'opened', within_days: 30 },
  ]
  await root.db.write(async (tx) => {
    await tx.insert(contactProperties).values({ id: root.ids.uuid(), accountId, key: 'score', type: 'number', fallbackValue: null, createdAt: at, updatedAt: at })
    await tx.insert(topics).values({ id: topicId, accountId, name: 'News', description: null, defaultSubscription: 'opt_out', visibility: 'public', createdAt: at, updatedAt: at })
    await tx.insert(segments).values([
      { id: ruleId, accountId, name: 'Engaged fans', match: 'all', rules, createdAt: at, updatedAt: at },
      { id: staticId, accountId, name: 'Half', match: 'all', rules: [], createdAt: at, updatedAt: at },
    ])
  })
  for (let from = 0; from < n; from += ROWS_PER_WRITE) {
    const batch = Array.from({ length: Math.min(ROWS_PER_WRITE, n - from) }, (_, k) => {
      const i = from + k
      return { i, id: root.ids.uuid(), email: `c${i}@load.test` }
    })
    await root.db.write(async (tx) => {
      await tx.insert(contacts).values(batch.map((c) => ({ id: c.id, accountId, email: c.email, firstName: null, lastName: null, unsubscribed: false, properties: { score: c.i % 100 }, createdAt: at, updatedAt: at })))
      const answers = batch.filter((c) => c.i % 10 === 0).map((c) => ({ contactId: c.id, topicId, accountId, subscribed: false, updatedAt: at }))
      if (answers.length) await tx.insert(contactTopics).values(answers)
      // Three opens per contact over the last 90 days, so the window has to be checked.
      const opens = batch.flatMap((c) => [5, 45, 80].map((d) => ({ id: root.ids.uuid(), accountId, emailId: root.ids.uuid(), type: 'opened' as const, recipient: c.email, data: {}, createdAt: iso(now - ((c.i + d) % 90) * DAY) })))
      await tx.insert(emailEvents).values(opens)
      await tx.insert(segmentContacts).values(batch.filter((c) => c.i % 2 === 0).map((c) => ({ segmentId: staticId, contactId: c.id, accountId, createdAt: at })))
    })
  }
  const q = root.db.q
  const scan = await timed(async () => (await q.select({ id: contacts.id }).from(contacts).where(eq(contacts.accountId, accountId))).length)
  const rule = await timed(async () => (await q.select({ id: contacts.id }).from(contacts).where(await segmentFilter(q, accountId, ruleId, new Date(now)))).length)
  const stat = await timed(async () => (await q.select({ id: contacts.id }).from(contacts).where(await segmentFilter(q, accountId, staticId, new Date(now)))).length)
  const [{ events }] = await q.select({ events: count() }).from(emailEvents)
  root.db.close()
  return { contacts: n, events, scan, rule, stat }
}
