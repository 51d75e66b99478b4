import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, like } from 'drizzle-orm'
import { loadConfig, ConfigError } from '../src/config'
import { accountUsage, auditEntries, billingAccounts, billingEvents, billingInvoices, broadcasts } from '../src/db/tables'
import { DAY } from '../src/lib/clock'
import { audience, draft } from './support/broadcasts'
import { BILLING_OFF, WEBHOOK_SECRET, as, billingEnv, checkout, fakeStripe, setCycleUsage, startTrial, subscribe, use } from './support/billing'
import { nothingWritten, message, simulated, verifiedDomain } from './support/emails'
import { signature, type FakeStripe } from './support/fake-stripe'
import { expectError, harness, type Harness } from './support/harness'
import { person } from './support/people'
import { scenarios } from './support/scenarios'

let fake: FakeStripe
beforeAll(() => {
  fake = fakeStripe()
})
afterAll(() => fake.stop())
const opts = { env: () => billingEnv(fake), reset: () => fake.reset() }

const owner = { role: 'owner' as const }
const missing = '01890000-0000-7000-8000-000000000000'
const row = async (h: Harness, accountId = h.accountId) => (await h.root.db.q.select().from(billingAccounts).where(eq(billingAccounts.accountId, accountId)))[0]

/** A provider event as raw JSON, and the header Stripe would sign it with at the harness's time (or another). */
const event = (type: string, object: Record<string, unknown>, id = 'evt_scenario_1', created = Date.parse('2026-03-02T10:00:00Z') / 1000) => JSON.stringify({ id, object: 'event', type, created, livemode: false, data: { object } })
const signed = (raw: string, secret = WEBHOOK_SECRET, shiftMs = 0) => (_c: unknown, h: Harness) => ({ 'content-type': 'application/json', 'stripe-signature': signature(secret, raw, h.clock.now() + shiftMs) })
const ping = event('customer.created', { id: 'cus_x', object: 'customer' })

/** A trial started, then a checkout begun (so a customer exists) but not paid. */
const trialWithCustomer = async (h: Harness) => {
  const p = await startTrial(h)
  await checkout(h, p)
}

/** Another account with a subscription and its invoice; answers that invoice's id. */
const othersInvoice = async (h: Harness) => {
  const o = await h.otherAccount()
  use(fake, h)
  const p = await person(h, { role: 'owner', accountId: o.accountId })
  const session = await checkout(h, p)
  await fake.completeCheckout(session.id)
  const [inv] = await h.root.db.q.select().from(billingInvoices).where(eq(billingInvoices.accountId, o.accountId))
  return { other: o, invoiceId: inv.id, customer: (await row(h, o.accountId)).customerId! }
}

describe('Billing: scenarios', () => {
  scenarios(
    [
      // GET /billing/plan
      { name: 'billing off: 503 billing_not_configured', method: 'GET', path: '/billing/plan', env: BILLING_OFF, status: 503, code: 'billing_not_configured' },
      { name: 'a new account has no plan, and sees what is on sale', method: 'GET', path: '/billing/plan', status: 200,
        expect: { object: 'billing_plan', plan: null, status: 'none', term: null, customer: false, current_period: null, inclusion: null, limits: null, trial: { used: false, started_at: null, ends_at: null }, overage: { available: false, enabled: false, cap: null, used: 0 } },
        check: (r) => {
          expect(r.body.plans.map((p: any) => [p.id, p.overage, p.terms])).toEqual([['starter', false, ['monthly', 'yearly']], ['pro', true, ['monthly', 'yearly']], ['scale', true, ['monthly', 'yearly']]])
        } },
      { name: 'terms on sale follow MAILROOM_BILLING_TERMS', method: 'GET', path: '/billing/plan', env: { MAILROOM_BILLING_TERMS: 'yearly' }, status: 200,
        check: (r) => expect(r.body.plans.every((p: any) => p.terms.join() === 'yearly')).toBe(true) },
      { name: 'during the trial: Pro, trialing, its 14 days and inclusion', method: 'GET', path: '/billing/plan', setup: (h) => startTrial(h), status: 200,
        expect: { plan: 'pro', status: 'trialing', trial: { used: true, started_at: '2026-03-02T10:00:00.000Z', ends_at: '2026-03-16T10:00:00.000Z' },
          inclusion: { emails: 50_000, used: 0, remaining: 50_000, cycle_start: '2026-03-02T10:00:00.000Z', resets_at: '2026-03-16T10:00:00.000Z' }, limits: { seats: 10, domains: 10 }, overage: { available: false } } },
      { name: 'GET /account names the plan in force (the trial’s Pro)', method: 'GET', path: '/account', setup: (h) => startTrial(h), status: 200, expect: { object: 'account', plan: 'pro' } },
      { name: 'after the trial ended: no plan, the trial used', method: 'GET', path: '/billing/plan', setup: async (h) => {
        await startTrial(h)
        h.clock.advance(14 * DAY + 1)
      }, status: 200, expect: { plan: null, status: 'trialing', trial: { used: true }, inclusion: null } },
      { name: 'after a paid checkout: the subscription’s plan, period and customer', method: 'GET', path: '/billing/plan', setup: (h) => subscribe(fake, h), status: 200,
        expect: { plan: 'pro', status: 'active', term: 'monthly', customer: true, current_period: { start: '2026-03-02T10:00:00.000Z', end: '2026-04-02T10:00:00.000Z' }, overage: { available: true, enabled: false } } },
      { name: 'refuses a sending-only key', method: 'GET', path: '/billing/plan', as: 'sending', status: 403, code: 'restricted_api_key' },
      { name: 'refuses no key', method: 'GET', path: '/billing/plan', as: 'none', status: 401, code: 'missing_api_key' },

      // POST /billing/checkout
      { name: 'billing off: 503', method: 'POST', path: '/billing/checkout', as: owner, body: { plan: 'pro' }, env: BILLING_OFF, status: 503, code: 'billing_not_configured' },
      { name: 'answers the provider’s checkout link, after making the customer', method: 'POST', path: '/billing/checkout', as: owner, body: { plan: 'pro' }, status: 200,
        expect: { object: 'checkout_session', plan: 'pro', term: 'monthly' },
        check: async (r, _c, h) => {
          expect(r.body.url).toStartWith(`${fake.url}/c/pay/cs_`)
          const [customer] = [...fake.customers.values()]
          expect(customer.metadata).toEqual({ account_id: h.accountId })
          expect(fake.requests.every((q) => q.authorized)).toBe(true)
          const cs = fake.checkouts.get(r.body.id)!
          expect(cs).toMatchObject({ customer: customer.id, price: 'price_pro_monthly', clientReferenceId: h.accountId, metadata: { plan: 'pro', term: 'monthly' } })
          expect(await row(h)).toMatchObject({ customerId: customer.id, status: 'none', plan: null })
        } },
      { name: 'sells the yearly term at its own price', method: 'POST', path: '/billing/checkout', as: owner, body: { plan: 'scale', term: 'yearly' }, status: 200,
        check: (r) => expect(fake.checkouts.get(r.body.id)!.price).toBe('price_scale_yearly') },
      { name: 'a second checkout keeps the one customer', method: 'POST', path: '/billing/checkout', as: owner, setup: async (h) => checkout(h, await person(h, owner), 'starter'), body: { plan: 'pro' }, status: 200,
        check: () => expect(fake.customers.size).toBe(1) },
      { name: 'may buy during the trial', method: 'POST', path: '/billing/checkout', as: owner, setup: (h) => startTrial(h), body: { plan: 'pro' }, status: 200 },
      { name: 'refuses a tier that is not sold', method: 'POST', path: '/billing/checkout', as: owner, body: { plan: 'enterprise' }, status: 400, code: 'plan_not_purchasable',
        check: (r) => {
          expect(r.body.message).toContain('starter, pro, scale')
          expect(fake.requests).toHaveLength(0)
        } },
      { name: 'refuses a term that is not sold', method: 'POST', path: '/billing/checkout', as: owner, body: { plan: 'pro', term: 'weekly' }, status: 409, code: 'term_not_on_sale',
        check: (r) => expect(r.body.message).toContain('monthly, yearly') },
      { name: 'refuses a term the deployment took off sale', method: 'POST', path: '/billing/checkout', as: owner, env: { MAILROOM_BILLING_TERMS: 'monthly' }, body: { plan: 'pro', term: 'yearly' }, status: 409, code: 'term_not_on_sale' },
      { name: 'refuses a second subscription: change plans in the portal', method: 'POST', path: '/billing/checkout', as: owner, setup: (h) => subscribe(fake, h), body: { plan: 'scale' }, status: 409, code: 'subscription_active' },
      { name: 'provider down: 503 service_unavailable, nothing kept', method: 'POST', path: '/billing/checkout', as: owner, setup: async () => fake.fail(), body: { plan: 'pro' }, status: 503, code: 'service_unavailable',
        check: async (_r, _c, h) => expect(await row(h)).toBeUndefined() },
      { name: 'refuses a body without a plan', method: 'POST', path: '/billing/checkout', as: owner, body: { term: 'monthly' }, status: 400, code: 'validation_error' },
      { name: 'refuses an API key: a person decides', method: 'POST', path: '/billing/checkout', as: 'full', body: { plan: 'pro' }, status: 403, code: 'human_action_required' },
      { name: 'refuses a developer: owners and admins buy', method: 'POST', path: '/billing/checkout', as: { role: 'developer' }, body: { plan: 'pro' }, status: 403, code: 'insufficient_role' },

      // POST /billing/portal
      { name: 'billing off: 503', method: 'POST', path: '/billing/portal', as: owner, body: {}, env: BILLING_OFF, status: 503, code: 'billing_not_configured' },
      { name: 'refuses before any customer exists', method: 'POST', path: '/billing/portal', as: owner, body: {}, status: 404, code: 'billing_customer_missing' },
      { name: 'answers the portal link to manage the subscription', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: {}, status: 200,
        expect: { object: 'billing_portal_session', flow: 'manage', overage: { enabled: false, cap: null } },
        check: (r) => {
          expect(r.body.url).toStartWith(`${fake.url}/p/session/`)
          expect(fake.portals.at(-1)!.flow).toEqual({})
        } },
      { name: 'opens the portal on a plan change', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: { plan: 'scale' }, status: 200, expect: { flow: 'change_plan' },
        check: (_r, c) => expect(fake.portals.at(-1)!.flow).toMatchObject({
          'flow_data[type]': 'subscription_update_confirm',
          'flow_data[subscription_update_confirm][subscription]': c.subscription.id,
          'flow_data[subscription_update_confirm][items][0][id]': c.subscription.itemId,
          'flow_data[subscription_update_confirm][items][0][price]': 'price_scale_monthly',
        }) },
      { name: 'refuses a change to the plan already in force', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: { plan: 'pro', term: 'monthly' }, status: 409, code: 'plan_already_active' },
      { name: 'refuses a plan change during the trial', method: 'POST', path: '/billing/portal', as: owner, setup: trialWithCustomer, body: { plan: 'scale' }, status: 409, code: 'portal_change_unavailable',
        check: (r) => expect(r.body.message).toContain('trial') },
      { name: 'refuses a tier that is not sold', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: { plan: 'gold' }, status: 400, code: 'plan_not_purchasable' },
      { name: 'refuses a term that is not sold', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: { term: 'weekly' }, status: 409, code: 'term_not_on_sale' },
      { name: 'turns overage on with a cap', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: { overage: { enabled: true, cap: 5000 } }, status: 200,
        expect: { flow: 'manage', overage: { enabled: true, cap: 5000 } },
        check: async (_r, _c, h) => {
          expect((await h.call('GET', '/billing/plan')).body.overage).toEqual({ available: true, enabled: true, cap: 5000, used: 0 })
          const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'overage_updated'))
          expect(audit.after).toEqual({ overage: { enabled: true, cap: 5000 } })
        } },
      { name: 'overage without a cap takes the plan’s largest', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: { overage: { enabled: true } }, status: 200, expect: { overage: { enabled: true, cap: 100_000 } } },
      { name: 'refuses overage on starter', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h, 'starter'), body: { overage: { enabled: true } }, status: 409, code: 'overage_not_on_plan',
        check: async (_r, _c, h) => expect((await row(h)).overageEnabled).toBe(false) },
      { name: 'refuses overage during the trial', method: 'POST', path: '/billing/portal', as: owner, setup: trialWithCustomer, body: { overage: { enabled: true } }, status: 409, code: 'overage_not_on_plan' },
      { name: 'refuses a cap above the plan’s largest', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: { overage: { enabled: true, cap: 100_001 } }, status: 422, code: 'invalid_parameter' },
      { name: 'answers an own invoice’s payment page', method: 'POST', path: '/billing/portal', as: owner, setup: async (h) => {
        await subscribe(fake, h)
        return (await h.call('GET', '/billing/invoices')).body.data[0]
      }, body: (inv: any) => ({ invoice_id: inv.id }), status: 200,
        check: (r, inv) => expect(r.body).toMatchObject({ flow: 'pay_invoice', id: null, url: inv.hosted_invoice_url }) },
      { name: 'refuses another account’s invoice', method: 'POST', path: '/billing/portal', as: owner, setup: async (h) => {
        const theirs = await othersInvoice(h)
        await subscribe(fake, h)
        return theirs
      }, body: (c: any) => ({ invoice_id: c.invoiceId }), status: 403, code: 'charge_not_this_account' },
      { name: 'answers 404 for an invoice that does not exist', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: { invoice_id: missing }, status: 404, code: 'not_found' },
      { name: 'refuses an invoice and a plan change at once', method: 'POST', path: '/billing/portal', as: owner, setup: (h) => subscribe(fake, h), body: { invoice_id: missing, plan: 'scale' }, status: 422, code: 'invalid_parameter' },
      { name: 'refuses an API key', method: 'POST', path: '/billing/portal', as: 'full', body: {}, status: 403, code: 'human_action_required' },

      // POST /billing/trial
      { name: 'billing off: 503', method: 'POST', path: '/billing/trial', as: owner, env: BILLING_OFF, status: 503, code: 'billing_not_configured' },
      { name: 'starts the 14-day Pro trial', method: 'POST', path: '/billing/trial', as: owner, status: 200,
        expect: { object: 'billing_plan', plan: 'pro', status: 'trialing', trial: { used: true, started_at: '2026-03-02T10:00:00.000Z', ends_at: '2026-03-16T10:00:00.000Z' } },
        check: async (_r, _c, h) => {
          const [audit] = await h.root.db.q.select().from(auditEntries).where(eq(auditEntries.action, 'trial_started'))
          expect(audit).toMatchObject({ resource: 'billing', resourceId: h.accountId, actorKind: 'session' })
        } },
      { name: 'refuses a second trial', method: 'POST', path: '/billing/trial', as: owner, setup: (h) => startTrial(h), status: 409, code: 'trial_already_used' },
      { name: 'refuses a trial once the first has ended', method: 'POST', path: '/billing/trial', as: owner, setup: async (h) => {
        await startTrial(h)
        h.clock.advance(30 * DAY)
      }, status: 409, code: 'trial_already_used' },
      { name: 'refuses a trial over a paid plan', method: 'POST', path: '/billing/trial', as: owner, setup: (h) => subscribe(fake, h), status: 409, code: 'plan_already_active' },
      { name: 'refuses an API key', method: 'POST', path: '/billing/trial', as: 'full', status: 403, code: 'human_action_required' },
      { name: 'refuses a viewer', method: 'POST', path: '/billing/trial', as: { role: 'viewer' }, status: 403, code: 'insufficient_role' },

      // GET /billing/invoices
      { name: 'billing off: 503', method: 'GET', path: '/billing/invoices', env: BILLING_OFF, status: 503, code: 'billing_not_configured' },
      { name: 'lists the invoices the provider reported, with ISO dates and its amounts', method: 'GET', path: '/billing/invoices', setup: (h) => subscribe(fake, h), status: 200,
        check: (r, c) => {
          expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
          expect(r.body.data).toEqual([{
            object: 'invoice', id: expect.any(String), provider_id: c.invoice.id, number: c.invoice.number, status: 'paid', amount_due: 2000, amount_paid: 2000, currency: 'usd',
            hosted_invoice_url: c.invoice.hosted_invoice_url, invoice_pdf: c.invoice.invoice_pdf, period_start: '2026-03-02T10:00:00.000Z', period_end: '2026-04-02T10:00:00.000Z', created_at: '2026-03-02T10:00:00.000Z',
          }])
        } },
      { name: 'lists none of another account’s invoices', method: 'GET', path: '/billing/invoices', setup: othersInvoice, status: 200, expect: { data: [] } },
      { name: 'refuses a tampered cursor', method: 'GET', path: '/billing/invoices', query: { cursor: 'eyJpIjoieCJ9.forged' }, status: 400, code: 'invalid_cursor' },
      { name: 'refuses a sending-only key', method: 'GET', path: '/billing/invoices', as: 'sending', status: 403, code: 'restricted_api_key' },

      // POST /billing/webhook
      { name: 'billing off: 503', method: 'POST', path: '/billing/webhook', as: 'none', env: BILLING_OFF, raw: ping, headers: signed(ping), status: 503, code: 'billing_not_configured' },
      { name: 'takes a signed event it does not act on', method: 'POST', path: '/billing/webhook', as: 'none', raw: ping, headers: signed(ping), status: 200, expect: { received: true, id: 'evt_scenario_1', outcome: 'ignored' },
        check: async (_r, _c, h) => expect(await h.root.db.q.select().from(billingEvents)).toMatchObject([{ id: 'evt_scenario_1', type: 'customer.created', outcome: 'ignored' }]) },
      { name: 'a replayed event id answers 200 and changes nothing', method: 'POST', path: '/billing/webhook', as: 'none', setup: async (h) => {
        await h.call('POST', '/billing/webhook', { key: null, raw: ping, headers: signed(ping)(null, h) })
      }, raw: ping, headers: signed(ping), status: 200, expect: { outcome: 'replayed' },
        check: async (_r, _c, h) => expect(await h.root.db.q.select().from(billingEvents)).toHaveLength(1) },
      { name: 'refuses a missing signature', method: 'POST', path: '/billing/webhook', as: 'none', raw: ping, headers: { 'content-type': 'application/json' }, status: 400, code: 'payment_signature_invalid',
        check: async (_r, _c, h) => expect(await h.root.db.q.select().from(billingEvents)).toHaveLength(0) },
      { name: 'refuses a signature under another secret', method: 'POST', path: '/billing/webhook', as: 'none', raw: ping, headers: signed(ping, 'whsec_someone_else'), status: 400, code: 'payment_signature_invalid' },
      { name: 'refuses a signature older than 5 minutes', method: 'POST', path: '/billing/webhook', as: 'none', raw: ping, headers: signed(ping, WEBHOOK_SECRET, -301_000), status: 400, code: 'payment_signature_invalid',
        check: (r) => expect(r.body.message).toContain('5 minutes') },
      { name: 'takes a signature 4 minutes old', method: 'POST', path: '/billing/webhook', as: 'none', raw: ping, headers: signed(ping, WEBHOOK_SECRET, -240_000), status: 200 },
      { name: 'refuses a body changed after signing', method: 'POST', path: '/billing/webhook', as: 'none', raw: ping.replace('cus_x', 'cus_y'), headers: signed(ping), status: 400, code: 'payment_signature_invalid' },
      { name: 'refuses a body that is no event', method: 'POST', path: '/billing/webhook', as: 'none', raw: '{"hello":1}', headers: signed('{"hello":1}'), status: 400, code: 'validation_error' },
    ],
    opts,
  )
})

describe('Billing: provider events', () => {
  let h: Harness
  const start = async () => {
    h = await harness(billingEnv(fake))
    use(fake, h)
  }

  test('a forged checkout event is refused with charge_not_this_account (signed over the body sent)', async () => {
    await start()
    try {
      const theirs = await othersInvoice(h)
      const raw = event('checkout.session.completed', { id: 'cs_forged', object: 'checkout.session', customer: theirs.customer, subscription: 'sub_forged', client_reference_id: h.accountId })
      const r = await h.call('POST', '/billing/webhook', { key: null, raw, headers: signed(raw)(null, h) })
      expectError(r, 'charge_not_this_account', 403)
      expect((await row(h, theirs.other.accountId)).subscriptionId).not.toBe('sub_forged')
      expect(await row(h)).toBeUndefined()
    } finally {
      await h.close()
    }
  })

  test('subscription events: out-of-order ones change nothing, deletion ends the plan, a failed invoice is kept open', async () => {
    await start()
    try {
      const { subscription: sub, person: p } = await subscribe(fake, h)
      const later = fake.event('customer.subscription.updated', fake.subscriptionObject({ ...sub, price: 'price_scale_yearly' }))
      h.clock.advance(1000)
      const older = { ...fake.event('customer.subscription.updated', fake.subscriptionObject({ ...sub, price: 'price_starter_monthly' })), created: later.created - 60 }
      expect((await fake.deliver(later)).body.outcome).toBe('applied')
      expect((await fake.deliver(older)).body.outcome).toBe('ignored')
      expect(await row(h)).toMatchObject({ plan: 'scale', term: 'yearly', status: 'active' })

      const failed = fake.invoiceObject(sub.customer, sub.id, 9900, 'open', sub.start, sub.end)
      expect((await fake.deliver(fake.event('invoice.payment_failed', failed))).body.outcome).toBe('applied')
      const invoices = (await h.call('GET', '/billing/invoices')).body.data
      expect(invoices.map((i: any) => [i.provider_id, i.status, i.amount_paid])).toEqual([[failed.id, 'open', 0], [expect.any(String), 'paid', 2000]])
      // Paid later: the same invoice, brought up to date.
      expect((await fake.deliver(fake.event('invoice.paid', { ...failed, status: 'paid', amount_paid: 9900 }))).status).toBe(200)
      expect((await h.call('GET', '/billing/invoices')).body.data[0]).toMatchObject({ provider_id: failed.id, status: 'paid', amount_paid: 9900 })

      h.clock.advance(1000)
      expect((await fake.deliver(fake.event('customer.subscription.deleted', fake.subscriptionObject({ ...sub, status: 'canceled' })))).body.outcome).toBe('applied')
      expect((await h.call('GET', '/billing/plan')).body).toMatchObject({ plan: null, status: 'canceled' })
      await verifiedDomain(h)
      expectError(await h.call('POST', '/emails', { body: message() }), 'plan_required', 402)
      // Ended: a new checkout is allowed again.
      expect((await h.call('POST', '/billing/checkout', as(p, { body: { plan: 'starter' } }))).status).toBe(200)
    } finally {
      await h.close()
    }
  })
})

describe('Billing: sends and key budgets', () => {
  scenarios(
    [
      { name: 'no plan: a real send is refused with plan_required, nothing written', method: 'POST', path: '/emails', setup: (h) => verifiedDomain(h), body: message(), status: 402, code: 'plan_required',
        check: async (r, _c, h) => {
          expect(r.body.name).toBe('application_error')
          await nothingWritten(h)
        } },
      { name: 'no plan: simulator sends still work', method: 'POST', path: '/emails', body: simulated(), status: 200,
        check: async (_r, _c, h) => expect(await h.root.db.q.select().from(accountUsage).where(like(accountUsage.period, 'plan:%'))).toHaveLength(0) },
      { name: 'no plan: a batch with one real recipient is refused', method: 'POST', path: '/emails/batch', setup: (h) => verifiedDomain(h), body: [simulated(), message()], status: 402, code: 'plan_required' },
      { name: 'no plan: a broadcast to real contacts is refused', method: 'POST', path: '/broadcasts', setup: async (h) => {
        await verifiedDomain(h)
        return (await audience(h, ['ada@customer.io'])).segment
      }, body: (segment: { id: string }) => ({ ...draft(segment.id), send: true }), status: 402, code: 'plan_required',
        check: async (_r, _c, h) => expect(await h.root.db.q.select().from(broadcasts)).toEqual([]) },
      { name: 'billing off: a real send needs no plan', method: 'POST', path: '/emails', env: BILLING_OFF, setup: (h) => verifiedDomain(h), body: message(), status: 200 },
      { name: 'the trial sends, and counts real emails against its inclusion', method: 'POST', path: '/emails', setup: async (h) => {
        await verifiedDomain(h)
        await startTrial(h)
      }, body: message({ to: ['a@x.io', 'b@x.io'] }), status: 200,
        check: async (_r, _c, h) => {
          await h.call('POST', '/emails', { body: simulated() })
          expect((await h.call('GET', '/billing/plan')).body.inclusion).toMatchObject({ emails: 50_000, used: 2, remaining: 49_998 })
        } },
      { name: 'the inclusion used up: plan_limit_reached (legacy name monthly_quota_exceeded)', method: 'POST', path: '/emails', setup: async (h) => {
        await verifiedDomain(h)
        await subscribe(fake, h, 'starter')
        await setCycleUsage(h, 9_999)
      }, body: message({ to: ['a@x.io', 'b@x.io'] }), status: 402, code: 'plan_limit_reached',
        check: (r) => expect(r.body.name).toBe('monthly_quota_exceeded') },
      { name: 'with overage on, sends pass the inclusion up to the cap: overage_cap_reached', method: 'POST', path: '/emails', setup: async (h) => {
        await verifiedDomain(h)
        const { person: p } = await subscribe(fake, h, 'pro')
        expect((await h.call('POST', '/billing/portal', as(p, { body: { overage: { enabled: true, cap: 2 } } }))).status).toBe(200)
        await setCycleUsage(h, 49_999)
        expect((await h.call('POST', '/emails', { body: message({ to: ['a@x.io', 'b@x.io'] }) })).status).toBe(200)
      }, body: message({ to: ['c@x.io', 'd@x.io'] }), status: 402, code: 'overage_cap_reached',
        check: async (_r, _c, h) => {
          expect((await h.call('GET', '/billing/plan')).body.overage).toMatchObject({ enabled: true, cap: 2, used: 1 })
          expect((await h.call('POST', '/emails', { body: message({ to: 'e@x.io' }) })).status).toBe(200)
        } },
      { name: 'preflight reports plan_required without sending', method: 'POST', path: '/emails/preflight', setup: (h) => verifiedDomain(h), body: message(), status: 200,
        check: (r) => expect(r.body.findings.map((f: any) => f.code)).toEqual(['plan_required']) },
      { name: 'a key budget above the plan’s inclusion: key_budget_exceeds_plan', method: 'POST', path: '/api-keys', setup: (h) => subscribe(fake, h, 'starter'), body: { name: 'agent', budget_per_period: 10_001 }, status: 422, code: 'key_budget_exceeds_plan',
        check: async (r, _c, h) => {
          expect(r.body.message).toContain('10000')
          expect((await h.call('POST', '/api-keys', { body: { name: 'agent', budget_per_period: 10_000 } })).status).toBe(201)
        } },
      { name: 'an unlimited key budget under a plan: key_budget_exceeds_plan', method: 'POST', path: '/api-keys', setup: (h) => startTrial(h), body: { name: 'agent', budget_per_period: null }, status: 422, code: 'key_budget_exceeds_plan' },
      { name: 'billing off: key budgets meet only the operator’s quota', method: 'POST', path: '/api-keys', env: BILLING_OFF, body: { name: 'agent', budget_per_period: 10_000_000 }, status: 201 },
    ],
    opts,
  )
})

describe('Billing: settings', () => {
  test('both secrets or neither; prices as JSON naming plan and term', () => {
    expect(loadConfig({}).billing).toBeUndefined()
    expect(() => loadConfig({ MAILROOM_BILLING_SECRET_KEY: 'sk' })).toThrow(ConfigError)
    const on = loadConfig({ MAILROOM_BILLING_SECRET_KEY: 'sk', MAILROOM_BILLING_WEBHOOK_SECRET: 'wh' }).billing!
    expect(on.apiUrl).toBe('https://api.stripe.com')
    expect(on.prices.pro_yearly).toBe('price_pro_yearly')
    const priced = loadConfig({ MAILROOM_BILLING_SECRET_KEY: 'sk', MAILROOM_BILLING_WEBHOOK_SECRET: 'wh', MAILROOM_BILLING_PRICES: '{"pro_monthly":"price_1"}' }).billing!
    expect(priced.prices).toEqual({ pro_monthly: 'price_1' })
    expect(() => loadConfig({ MAILROOM_BILLING_SECRET_KEY: 'sk', MAILROOM_BILLING_WEBHOOK_SECRET: 'wh', MAILROOM_BILLING_PRICES: '{"gold_monthly":"p"}' })).toThrow(ConfigError)
    expect(() => loadConfig({ MAILROOM_BILLING_SECRET_KEY: 'sk', MAILROOM_BILLING_WEBHOOK_SECRET: 'wh', MAILROOM_BILLING_PRICES: 'nope' })).toThrow(ConfigError)
  })
})
