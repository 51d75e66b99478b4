import { expect } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { accountUsage, billingAccounts } from '../../src/db/tables'
import { startFakeStripe, type FakeStripe } from './fake-stripe'
import type { CallOptions, Harness } from './harness'
import { asCookie, person, type Person } from './people'

export const SECRET_KEY = 'sk_test_mailroom_fake'
export const WEBHOOK_SECRET = 'whsec_mailroom_fake'
const PRICES = ['starter', 'pro', 'scale'].flatMap((p) => ['monthly', 'yearly'].map((t) => `price_${p}_${t}`))

/** The harness whose clock the fake stamps events with: the one a test is using now. */
let current: Harness | undefined

export function fakeStripe() {
  return startFakeStripe({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET, prices: PRICES, now: () => current?.clock.now() ?? Date.now() })
}

/** Billing on, against the fake provider. */
export const billingEnv = (fake: FakeStripe) => ({ MAILROOM_BILLING_SECRET_KEY: SECRET_KEY, MAILROOM_BILLING_WEBHOOK_SECRET: WEBHOOK_SECRET, MAILROOM_BILLING_API_URL: fake.url })
export const BILLING_OFF = { MAILROOM_BILLING_SECRET_KEY: '', MAILROOM_BILLING_WEBHOOK_SECRET: '' }

/** Points the fake's events and clock at this harness's app. */
export function use(fake: FakeStripe, h: Harness) {
  current = h
  fake.target = (r) => h.app.handle(r)
}

export const as = (p: Person, o: CallOptions = {}): CallOptions => ({ ...asCookie(p.cookie), ...o })

export async function startTrial(h: Harness, p?: Person) {
  p ??= await person(h, { role: 'owner' })
  const r = await h.call('POST', '/billing/trial', as(p))
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return p
}

export async function checkout(h: Harness, p: Person, plan = 'pro', term = 'monthly') {
  const r = await h.call('POST', '/billing/checkout', as(p, { body: { plan, term } }))
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body as { id: string; url: string }
}

/** A person buys `plan` and the provider reports it paid: a live subscription with one invoice. */
export async function subscribe(fake: FakeStripe, h: Harness, plan = 'pro', term = 'monthly') {
  use(fake, h)
  const p = await person(h, { role: 'owner' })
  const session = await checkout(h, p, plan, term)
  const done = await fake.completeCheckout(session.id)
  for (const r of done.replies) expect(r, JSON.stringify(r.body)).toMatchObject({ status: 200, body: { outcome: 'applied' } })
  return { person: p, session, ...done }
}

/** Sets how many real emails the account's current plan cycle has counted. */
export async function setCycleUsage(h: Harness, sent: number, accountId = h.accountId) {
  const plan = (await h.call('GET', '/billing/plan')).body
  const { subscriptionId } = (await h.root.db.q.select().from(billingAccounts).where(eq(billingAccounts.accountId, accountId)))[0]
  const period = `plan:${subscriptionId ?? 'trial'}:${plan.inclusion.cycle_start}`
  await h.root.db.write((tx) =>
    tx.insert(accountUsage).values({ accountId, period, sent }).onConflictDoUpdate({ target: [accountUsage.accountId, accountUsage.period], set: { sent: sql`excluded.sent` } }),
  )
}
