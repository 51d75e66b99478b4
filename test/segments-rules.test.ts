// Rule segments: every condition kind evaluated against hand-built contacts, at the
// injected clock's now, through GET /segments/{id}/contacts and segmentFilter.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { count } from 'drizzle-orm'
import { contacts, contactTopics, emailEvents, segmentContacts } from '../src/db/tables'
import { DAY, iso } from '../src/lib/clock'
import { segmentFilter } from '../src/segments/rules'
import { clickToken, openToken } from '../src/tracking/links'
import { makeContact, makeProperty } from './support/contact-fixtures'
import { expectError, harness, type Harness } from './support/harness'

let h: Harness
beforeEach(async () => {
  h = await harness()
})
afterEach(() => h.close())

async function ruleSegment(rules: unknown[], match?: 'all' | 'any', key?: string) {
  const r = await h.call('POST', '/segments', { key, body: { name: 'Rules', rules, match } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; type: string }
}

/** The members' addresses as GET /segments/{id}/contacts answers them, sorted. */
async function members(segmentId: string, key?: string): Promise<string[]> {
  const r = await h.call('GET', `/segments/${segmentId}/contacts`, { key, query: { limit: 500 } })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return (r.body.data as { email: string }[]).map((c) => c.email).sort()
}

const matches = async (rules: unknown[], match?: 'all' | 'any') => members((await ruleSegment(rules, match)).id)

async function topic(default_subscription: 'opt_in' | 'opt_out') {
  const r = await h.call('POST', '/topics', { body: { name: `News ${default_subscription}`, default_subscription } })
  expect(r.status).toBe(201)
  return r.body.id as string
}

/** An open or click by an address, `daysAgo` before now, as the tracking pages record it. */
async function engaged(recipient: string, type: 'opened' | 'clicked', daysAgo: number, accountId = h.accountId) {
  await h.root.db.write((tx) =>
    tx.insert(emailEvents).values({ id: h.root.ids.uuid(), accountId, emailId: h.root.ids.uuid(), type, recipient, data: {}, createdAt: iso(h.clock.now() - daysAgo * DAY) }),
  )
}

describe('property rules', () => {
  beforeEach(async () => {
    await makeProperty(h, 'plan', 'string', 'free')
    await makeProperty(h, 'seats', 'number')
    await makeProperty(h, 'vip', 'boolean')
    await makeProperty(h, 'renews', 'date')
    await makeContact(h, { email: 'pro@x.io', properties: { plan: 'Pro annual', seats: 12, vip: true, renews: '2026-04-01' } })
    await makeContact(h, { email: 'team@x.io', properties: { plan: 'team', seats: 5, vip: false, renews: '2026-03-15T12:00:00+02:00' } })
    await makeContact(h, { email: 'bare@x.io' })
  })

  test('strings: eq, ne, contains (case-insensitive), a missing value compares the fallback', async () => {
    expect(await matches([{ field: 'property', key: 'plan', op: 'eq', value: 'team' }])).toEqual(['team@x.io'])
    expect(await matches([{ field: 'property', key: 'plan', op: 'eq', value: 'free' }])).toEqual(['bare@x.io'])
    expect(await matches([{ field: 'property', key: 'plan', op: 'ne', value: 'team' }])).toEqual(['bare@x.io', 'pro@x.io'])
    expect(await matches([{ field: 'property', key: 'plan', op: 'contains', value: 'PRO' }])).toEqual(['pro@x.io'])
  })

  test('exists and not_exists look at the contact’s own value, not the fallback', async () => {
    expect(await matches([{ field: 'property', key: 'plan', op: 'exists' }])).toEqual(['pro@x.io', 'team@x.io'])
    expect(await matches([{ field: 'property', key: 'plan', op: 'not_exists' }])).toEqual(['bare@x.io'])
  })

  test('numbers compare as numbers; a contact without a value (and no fallback) is unequal to everything', async () => {
    expect(await matches([{ field: 'property', key: 'seats', op: 'gt', value: 5 }])).toEqual(['pro@x.io'])
    expect(await matches([{ field: 'property', key: 'seats', op: 'gte', value: 5 }])).toEqual(['pro@x.io', 'team@x.io'])
    expect(await matches([{ field: 'property', key: 'seats', op: 'lt', value: 12 }])).toEqual(['team@x.io'])
    expect(await matches([{ field: 'property', key: 'seats', op: 'lte', value: 12 }])).toEqual(['pro@x.io', 'team@x.io'])
    expect(await matches([{ field: 'property', key: 'seats', op: 'eq', value: 5 }])).toEqual(['team@x.io'])
    expect(await matches([{ field: 'property', key: 'seats', op: 'ne', value: 5 }])).toEqual(['bare@x.io', 'pro@x.io'])
    // 100 > 12 numerically, though "100" < "12" as text.
    expect(await matches([{ field: 'property', key: 'seats', op: 'lt', value: 100 }])).toEqual(['pro@x.io', 'team@x.io'])
  })

  test('booleans', async () => {
    expect(await matches([{ field: 'property', key: 'vip', op: 'eq', value: true }])).toEqual(['pro@x.io'])
    expect(await matches([{ field: 'property', key: 'vip', op: 'ne', value: true }])).toEqual(['bare@x.io', 'team@x.io'])
  })

  test('dates compare as instants, whatever their written form', async () => {
    expect(await matches([{ field: 'property', key: 'renews', op: 'lt', value: '2026-03-20' }])).toEqual(['team@x.io'])
    // 2026-03-15T12:00:00+02:00 is 10:00 UTC.
    expect(await matches([{ field: 'property', key: 'renews', op: 'eq', value: '2026-03-15T10:00:00Z' }])).toEqual(['team@x.io'])
    expect(await matches([{ field: 'property', key: 'renews', op: 'gte', value: '2026-04-01T00:00:00.000Z' }])).toEqual(['pro@x.io'])
  })

  test('a changed fallback changes who matches at the next read', async () => {
    const seg = await ruleSegment([{ field: 'property', key: 'plan', op: 'eq', value: 'free' }])
    expect(await members(seg.id)).toEqual(['bare@x.io'])
    const prop = (await h.call('GET', '/contact-properties')).body.data.find((p: { key: string }) => p.key === 'plan')
    expect((await h.call('PATCH', `/contact-properties/${prop.id}`, { body: { fallback_value: 'starter' } })).status).toBe(200)
    expect(await members(seg.id)).toEqual([])
  })

  test('a property deleted after the rule was saved selects nobody rather than everybody', async () => {
    const seg = await ruleSegment([{ field: 'property', key: 'plan', op: 'ne', value: 'team' }])
    expect(await members(seg.id)).toHaveLength(2)
    const prop = (await h.call('GET', '/contact-properties')).body.data.find((p: { key: string }) => p.key === 'plan')
    expect((await h.call('DELETE', `/contact-properties/${prop.id}`)).status).toBe(200)
    expect(await members(seg.id)).toEqual([])
  })
})

describe('topic rules', () => {
  test('an answer decides; a contact who never answered counts as the topic default', async () => {
    const optIn = await topic('opt_in')
    const optOut = await topic('opt_out')
    const yes = await makeContact(h, { email: 'yes@x.io' })
    const no = await makeContact(h, { email: 'no@x.io' })
    await makeContact(h, { email: 'silent@x.io' })
    for (const [c, subscribed] of [[yes, true], [no, false]] as const) {
      const r = await h.call('PATCH', `/contacts/${c.id}/topics`, { body: { topics: [{ topic_id: optIn, subscribed }, { topic_id: optOut, subscribed }] } })
      expect(r.status, JSON.stringify(r.body)).toBe(200)
    }
    expect(await matches([{ field: 'topic', topic_id: optIn, subscribed: true }])).toEqual(['yes@x.io'])
    expect(await matches([{ field: 'topic', topic_id: optIn, subscribed: false }])).toEqual(['no@x.io', 'silent@x.io'])
    expect(await matches([{ field: 'topic', topic_id: optOut, subscribed: true }])).toEqual(['silent@x.io', 'yes@x.io'])
    expect(await matches([{ field: 'topic', topic_id: optOut, subscribed: false }])).toEqual(['no@x.io'])
  })

  test('a new topic default moves the silent contacts at the next read, and answers stay', async () => {
    const t = await topic('opt_in')
    const yes = await makeContact(h, { email: 'yes@x.io' })
    await makeContact(h, { email: 'silent@x.io' })
    await h.call('PATCH', `/contacts/${yes.id}/topics`, { body: { topics: [{ topic_id: t, subscribed: true }] } })
    const seg = await ruleSegment([{ field: 'topic', topic_id: t, subscribed: true }])
    expect(await members(seg.id)).toEqual(['yes@x.io'])
    expect((await h.call('PATCH', `/topics/${t}`, { body: { default_subscription: 'opt_out' } })).status).toBe(200)
    expect(await members(seg.id)).toEqual(['silent@x.io', 'yes@x.io'])
  })

  test('a deleted topic selects nobody, for either answer', async () => {
    const t = await topic('opt_out')
    await makeContact(h, { email: 'silent@x.io' })
    const yes = await ruleSegment([{ field: 'topic', topic_id: t, subscribed: true }])
    const no = await ruleSegment([{ field: 'topic', topic_id: t, subscribed: false }])
    expect(await members(yes.id)).toEqual(['silent@x.io'])
    expect((await h.call('DELETE', `/topics/${t}`)).status).toBe(200)
    expect(await members(yes.id)).toEqual([])
    expect(await members(no.id)).toEqual([])
    expect((await h.root.db.q.select({ n: count() }).from(contactTopics))[0].n).toBe(0)
  })
})

describe('engagement rules', () => {
  beforeEach(async () => {
    for (const email of ['opener@x.io', 'clicker@x.io', 'old@x.io', 'quiet@x.io']) await makeContact(h, { email })
    await engaged('opener@x.io', 'opened', 2)
    await engaged('clicker@x.io', 'clicked', 6)
    await engaged('old@x.io', 'opened', 40)
    // The same address opening another account's mail counts for nothing here.
    await engaged('quiet@x.io', 'opened', 1, (await h.otherAccount()).accountId)
  })

  test('opened or clicked within the last N days, counted back from now', async () => {
    expect(await matches([{ field: 'engagement', event: 'opened', within_days: 7 }])).toEqual(['opener@x.io'])
    expect(await matches([{ field: 'engagement', event: 'opened', within_days: 60 }])).toEqual(['old@x.io', 'opener@x.io'])
    expect(await matches([{ field: 'engagement', event: 'clicked', within_days: 7 }])).toEqual(['clicker@x.io'])
    expect(await matches([{ field: 'engagement', event: 'clicked', within_days: 5 }])).toEqual([])
  })

  test('an open and a click recorded by the tracking pixel and redirect count, under the address as sent to', async () => {
    await makeContact(h, { email: 'delivered+ada@resend.dev' })
    const sent = await h.call('POST', '/emails', { body: { from: 'Shop <shop@anywhere.dev>', to: 'Delivered+Ada@resend.dev', subject: 'Hi', html: '<p>Hi</p>' } })
    expect(sent.status, JSON.stringify(sent.body)).toBe(200)
    const opened = await ruleSegment([{ field: 'engagement', event: 'opened', within_days: 1 }])
    const clicked = await ruleSegment([{ field: 'engagement', event: 'clicked', within_days: 1 }])
    expect(await members(opened.id)).toEqual([])
    expect((await h.call('GET', `/t/o/${openToken(h.root.secret, sent.body.id, 'delivered+ada@resend.dev')}`, { key: null })).status).toBe(200)
    expect(await members(opened.id)).toEqual(['delivered+ada@resend.dev'])
    expect(await members(clicked.id)).toEqual([])
    expect((await h.call('GET', `/t/c/${clickToken(h.root.secret, sent.body.id, 'delivered+ada@resend.dev', 'https://anywhere.dev/')}`, { key: null })).status).toBe(302)
    expect(await members(clicked.id)).toEqual(['delivered+ada@resend.dev'])
  })

  test('negate selects those who did not', async () => {
    expect(await matches([{ field: 'engagement', event: 'opened', within_days: 30, negate: true }])).toEqual(['clicker@x.io', 'old@x.io', 'quiet@x.io'])
  })

  test('the window moves with the clock: the same segment loses a member as days pass', async () => {
    const seg = await ruleSegment([{ field: 'engagement', event: 'opened', within_days: 3 }])
    expect(await members(seg.id)).toEqual(['opener@x.io'])
    h.clock.advance(1 * DAY + 1)
    expect(await members(seg.id)).toEqual([])
  })
})

describe('contact field rules', () => {
  beforeEach(async () => {
    await makeContact(h, { email: 'first@acme.com' })
    h.clock.advance(10 * DAY)
    await makeContact(h, { email: 'second@Example.org', unsubscribed: true })
    h.clock.advance(10 * DAY)
    await makeContact(h, { email: 'third@acme.com.evil.io' })
  })

  test('created_at before, after, within_days', async () => {
    expect(await matches([{ field: 'created_at', op: 'before', value: '2026-03-05' }])).toEqual(['first@acme.com'])
    expect(await matches([{ field: 'created_at', op: 'after', value: '2026-03-12T09:59:59Z' }])).toEqual(['second@example.org', 'third@acme.com.evil.io'])
    // Strictly after: a contact created at that very instant is not.
    expect(await matches([{ field: 'created_at', op: 'after', value: '2026-03-12T10:00:00Z' }])).toEqual(['third@acme.com.evil.io'])
    expect(await matches([{ field: 'created_at', op: 'within_days', value: 15 }])).toEqual(['second@example.org', 'third@acme.com.evil.io'])
    expect(await matches([{ field: 'created_at', op: 'within_days', value: 5 }])).toEqual(['third@acme.com.evil.io'])
  })

  test('unsubscribed', async () => {
    expect(await matches([{ field: 'unsubscribed', value: true }])).toEqual(['second@example.org'])
    expect(await matches([{ field: 'unsubscribed', value: false }])).toEqual(['first@acme.com', 'third@acme.com.evil.io'])
  })

  test('email eq, ends_with and contains, case-insensitive', async () => {
    expect(await matches([{ field: 'email', op: 'ends_with', value: '@ACME.com' }])).toEqual(['first@acme.com'])
    expect(await matches([{ field: 'email', op: 'eq', value: 'Second@example.org' }])).toEqual(['second@example.org'])
    expect(await matches([{ field: 'email', op: 'contains', value: 'acme' }])).toEqual(['first@acme.com', 'third@acme.com.evil.io'])
  })

  test('match all needs every rule, match any one of them', async () => {
    const rules = [
      { field: 'email', op: 'contains', value: 'acme' },
      { field: 'created_at', op: 'within_days', value: 15 },
    ]
    expect(await matches(rules)).toEqual(['third@acme.com.evil.io'])
    expect(await matches(rules, 'any')).toEqual(['first@acme.com', 'second@example.org', 'third@acme.com.evil.io'])
  })
})

describe('rule segments and membership', () => {
  test('another account’s contacts never match', async () => {
    const o = await h.otherAccount()
    await makeContact(h, { email: 'mine@x.io' })
    await makeContact(h, { email: 'theirs@x.io' }, o.token)
    const seg = await ruleSegment([{ field: 'email', op: 'ends_with', value: 'x.io' }])
    expect(await members(seg.id)).toEqual(['mine@x.io'])
    const theirs = await ruleSegment([{ field: 'email', op: 'ends_with', value: 'x.io' }], 'all', o.token)
    expect(await members(theirs.id, o.token)).toEqual(['theirs@x.io'])
  })

  test('GET /contacts/{id}/segments lists the rule segments a contact matches now, with no added_at', async () => {
    const c = await makeContact(h, { email: 'ada@acme.com' })
    const acme = await ruleSegment([{ field: 'email', op: 'ends_with', value: '@acme.com' }])
    await ruleSegment([{ field: 'email', op: 'ends_with', value: '@other.com' }])
    h.clock.advance(1000)
    const stat = (await h.call('POST', '/segments', { body: { name: 'Hand-picked' } })).body
    expect((await h.call('POST', `/contacts/${c.id}/segments/${stat.id}`)).status).toBe(200)
    const r = await h.call('GET', `/contacts/${c.id}/segments`)
    expect(r.body.data.map((s: { id: string; added_at: string | null }) => [s.id, s.added_at])).toEqual([
      [stat.id, '2026-03-02T10:00:01.000Z'],
      [acme.id, null],
    ])
    await h.call('PATCH', `/contacts/${c.id}`, { body: { email: 'ada@elsewhere.com' } })
    expect((await h.call('GET', `/contacts/${c.id}/segments`)).body.data.map((s: { id: string }) => s.id)).toEqual([stat.id])
  })

  test('members are not added or removed by hand on a rule segment', async () => {
    const c = await makeContact(h, { email: 'ada@acme.com' })
    const seg = await ruleSegment([{ field: 'email', op: 'ends_with', value: '@acme.com' }])
    for (const method of ['POST', 'DELETE']) {
      const r = await h.call(method, `/contacts/${c.id}/segments/${seg.id}`)
      expectError(r, 'invalid_parameter', 422)
      expect(r.body.message).toContain('chosen by rules')
    }
    expectError(await h.call('POST', '/contacts', { body: { email: 'new@acme.com', segments: [seg.id] } }), 'invalid_parameter', 422)
    expectError(await h.call('POST', `/audiences/${seg.id}/contacts`, { body: { email: 'new@acme.com' } }), 'invalid_parameter', 422)
    expect(await h.root.db.q.select().from(segmentContacts)).toEqual([])
    expect(await h.root.db.q.select({ email: contacts.email }).from(contacts)).toEqual([{ email: 'ada@acme.com' }])
  })

  test('the audience-era contact routes find a rule audience’s members by its rules', async () => {
    const c = await makeContact(h, { email: 'ada@acme.com' })
    const out = await makeContact(h, { email: 'bob@other.com' })
    const seg = await ruleSegment([{ field: 'email', op: 'ends_with', value: '@acme.com' }])
    expect((await h.call('GET', `/audiences/${seg.id}/contacts/${c.id}`)).body).toMatchObject({ id: c.id })
    expectError(await h.call('GET', `/audiences/${seg.id}/contacts/${out.id}`), 'not_found', 404)
    expect((await h.call('GET', `/audiences/${seg.id}/contacts`)).body.data.map((x: { id: string }) => x.id)).toEqual([c.id])
  })
})

describe('segmentFilter at scale', () => {
  test('resolves 10,000 contacts: rules over properties, topics and engagement, and a static segment', async () => {
    await makeProperty(h, 'score', 'number')
    const t = await topic('opt_out')
    const now = iso(h.clock.now())
    const N = 10_000
    const rows = Array.from({ length: N }, (_, i) => ({
      id: h.root.ids.uuid(),
      accountId: h.accountId,
      email: `c${i}@load.test`,
      firstName: null,
      lastName: null,
      unsubscribed: false,
      properties: { score: i % 100 },
      createdAt: now,
      updatedAt: now,
    }))
    await h.root.db.write(async (tx) => {
      for (let i = 0; i < N; i += 500) await tx.insert(contacts).values(rows.slice(i, i + 500))
    })
    // Every tenth contact said no to the topic; every fourth opened something two days ago.
    await h.root.db.write(async (tx) => {
      const answers = rows.filter((_, i) => i % 10 === 0).map((r) => ({ contactId: r.id, topicId: t, accountId: h.accountId, subscribed: false, updatedAt: now }))
      for (let i = 0; i < answers.length; i += 500) await tx.insert(contactTopics).values(answers.slice(i, i + 500))
      const opens = rows
        .filter((_, i) => i % 4 === 0)
        .map((r) => ({ id: h.root.ids.uuid(), accountId: h.accountId, emailId: h.root.ids.uuid(), type: 'opened' as const, recipient: r.email, data: {}, createdAt: iso(h.clock.now() - 2 * DAY) }))
      for (let i = 0; i < opens.length; i += 500) await tx.insert(emailEvents).values(opens.slice(i, i + 500))
    })
    const seg = await ruleSegment([
      { field: 'property', key: 'score', op: 'gte', value: 50 },
      { field: 'topic', topic_id: t, subscribed: true },
      { field: 'engagement', event: 'opened', within_days: 7 },
    ])
    const filter = await segmentFilter(h.root.db.q, h.accountId, seg.id, new Date(h.clock.now()))
    const [{ n }] = await h.root.db.q.select({ n: count() }).from(contacts).where(filter)
    // i % 100 >= 50, i % 10 != 0, i % 4 == 0: per hundred, the multiples of 4 in 52..96 not ending in 0 (52, 56, 64, 68, 72, 76, 84, 88, 92, 96).
    expect(n).toBe((N / 100) * 10)
    expect(rows.filter((_, i) => i % 100 >= 50 && i % 10 !== 0 && i % 4 === 0)).toHaveLength(n)

    const stat = (await h.call('POST', '/segments', { body: { name: 'Everyone' } })).body
    await h.root.db.write(async (tx) => {
      const m = rows.map((r) => ({ segmentId: stat.id, contactId: r.id, accountId: h.accountId, createdAt: now }))
      for (let i = 0; i < N; i += 500) await tx.insert(segmentContacts).values(m.slice(i, i + 500))
    })
    const all = await segmentFilter(h.root.db.q, h.accountId, stat.id, new Date(h.clock.now()))
    expect((await h.root.db.q.select({ n: count() }).from(contacts).where(all))[0].n).toBe(N)
    expectError(await h.call('GET', `/segments/${seg.id}/contacts`, { query: { limit: 0 } }), 'validation_error', 400)
    const page = await h.call('GET', `/segments/${seg.id}/contacts`, { query: { limit: 500 } })
    expect(page.body.data).toHaveLength(500)
    expect(page.body.has_more).toBe(true)
  }, 30_000)
})
