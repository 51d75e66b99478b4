import { afterAll, beforeAll, expect, test } from 'bun:test'
import { billingEvents, billingInvoices } from '../src/db/tables'
import { as, billingEnv, checkout, fakeStripe, setCycleUsage, use } from './support/billing'
import { message, simulated, verifiedDomain } from './support/emails'
import type { FakeStripe } from './support/fake-stripe'
import { expectError, harness, type Harness } from './support/harness'
import { person } from './support/people'

/**
 * The whole story against the local fake provider, with the provider's events
 * arriving over HTTP at the app listening on 127.0.0.1: no plan, the trial,
 * checkout, the signed events that start the plan, their replay, and the plan's
 * limit, overage and end.
 */
let fake: FakeStripe
let h: Harness
let server: ReturnType<typeof Bun.serve>
beforeAll(async () => {
  fake = fakeStripe()
  h = await harness(billingEnv(fake))
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (r) => h.app.handle(r) })
  // The fake stamps and signs with this app's clock, and delivers over HTTP rather than into the handler.
  use(fake, h)
  fake.target = `${server.url.origin}/billing/webhook`
})
afterAll(async () => {
  server.stop(true)
  fake.stop()
  await h.close()
})

const plan = async () => (await h.call('GET', '/billing/plan')).body
const send = (body = message()) => h.call('POST', '/emails', { body })

test('trial, checkout, a signed provider webhook, its replay and the plan limit', async () => {
  await verifiedDomain(h)
  const owner = await person(h, { role: 'owner' })

  // No plan: real mail is refused, the simulator still works.
  expectError(await send(), 'plan_required', 402)
  expect((await send(simulated())).status).toBe(200)

  // The trial: Pro for 14 days, once.
  const trial = await h.call('POST', '/billing/trial', as(owner))
  expect(trial.body).toMatchObject({ plan: 'pro', status: 'trialing' })
  expect((await send()).status).toBe(200)
  expectError(await h.call('POST', '/billing/trial', as(owner)), 'trial_already_used', 409)

  // Checkout at the provider, paid: three signed events over HTTP start the plan.
  const session = await checkout(h, owner, 'starter')
  const paid = await fake.completeCheckout(session.id)
  expect(paid.replies.map((r) => [r.status, r.body.outcome])).toEqual([[200, 'applied'], [200, 'applied'], [200, 'applied']])
  expect(await plan()).toMatchObject({ plan: 'starter', status: 'active', term: 'monthly', customer: true, trial: { used: true }, inclusion: { emails: 10_000, used: 0 } })
  expectError(await h.call('POST', '/billing/checkout', as(owner, { body: { plan: 'pro' } })), 'subscription_active', 409)

  // The provider delivers the same events again: each answers 200 and nothing changes.
  const before = { plan: await plan(), events: await h.root.db.q.select().from(billingEvents), invoices: await h.root.db.q.select().from(billingInvoices) }
  for (const e of paid.events) expect(await fake.deliver(e)).toEqual({ status: 200, body: { received: true, id: e.id, outcome: 'replayed' } })
  expect({ plan: await plan(), events: await h.root.db.q.select().from(billingEvents), invoices: await h.root.db.q.select().from(billingInvoices) }).toEqual(before)

  // A forged copy of an event is refused.
  const forged = await fake.deliver(fake.event('customer.subscription.deleted', fake.subscriptionObject(paid.subscription)), () => `t=${Math.floor(h.clock.now() / 1000)},v1=${'0'.repeat(64)}`)
  expect({ status: forged.status, code: forged.body.code }).toEqual({ status: 400, code: 'payment_signature_invalid' })
  expect((await plan()).plan).toBe('starter')

  // The plan's inclusion: the last included email goes, the next is refused; starter has no overage.
  await setCycleUsage(h, 9_999)
  expect((await send()).status).toBe(200)
  expectError(await send(), 'plan_limit_reached', 402)
  expect((await send(simulated())).status).toBe(200)
  expectError(await h.call('POST', '/billing/portal', as(owner, { body: { overage: { enabled: true } } })), 'overage_not_on_plan', 409)

  // An upgrade reported by the provider lifts the limit at once (the cached plan is forgotten).
  h.clock.advance(1000)
  const upgraded = await fake.deliver(fake.event('customer.subscription.updated', fake.subscriptionObject({ ...paid.subscription, price: 'price_pro_monthly' })))
  expect(upgraded.body.outcome).toBe('applied')
  expect((await send()).status).toBe(200)
  expect(await plan()).toMatchObject({ plan: 'pro', inclusion: { emails: 50_000, used: 10_001 } })

  // The next monthly cycle starts from zero.
  h.clock.advance(31 * 24 * 3600_000)
  expect((await plan()).inclusion).toMatchObject({ used: 0, cycle_start: '2026-04-02T10:00:00.000Z', resets_at: '2026-05-02T10:00:00.000Z' })

  // Cancelled at the provider: the plan ends and real mail needs one again.
  const ended = await fake.deliver(fake.event('customer.subscription.deleted', fake.subscriptionObject({ ...paid.subscription, status: 'canceled' })))
  expect(ended.body.outcome).toBe('applied')
  expectError(await send(), 'plan_required', 402)
})
