import { createHmac } from 'node:crypto'

/**
 * A local stand-in for the payment provider: a real HTTP server on 127.0.0.1
 * speaking the few Stripe endpoints billing calls (form-encoded, Bearer secret
 * key), with in-memory state, and able to send signed events to a webhook the
 * way Stripe does. It signs on its own (not with our verifier's code), so a
 * mistake in ours cannot hide behind a matching one here.
 */
export interface FakeStripeOptions {
  secretKey: string
  webhookSecret: string
  /** The clock events are stamped and signed with (the app's, so both agree). */
  now: () => number
  /** Price ids the fake sells; others are refused like Stripe's `resource_missing`. */
  prices: string[]
}

type Form = Record<string, string>
export interface FakeEvent {
  id: string
  object: 'event'
  type: string
  created: number
  livemode: false
  data: { object: Record<string, unknown> }
}

export const signature = (secret: string, body: string, at: number) => {
  const t = Math.floor(at / 1000)
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`
}

export type Target = string | ((r: Request) => Promise<Response>)

export function startFakeStripe(o: FakeStripeOptions) {
  let seq = 0
  const next = (prefix: string) => `${prefix}_fake${String(++seq).padStart(6, '0')}`
  const customers = new Map<string, { id: string; email: string | null; metadata: Form }>()
  const byIdempotencyKey = new Map<string, string>()
  const checkouts = new Map<string, { id: string; customer: string; price: string; clientReferenceId: string; metadata: Form; url: string }>()
  const portals: { id: string; customer: string; flow: Form }[] = []
  const subscriptions = new Map<string, { id: string; customer: string; itemId: string; price: string; status: string; start: number; end: number }>()
  const requests: { method: string; path: string; form: Form; authorized: boolean }[] = []
  let failing = false

  const error = (status: number, message: string, type = 'invalid_request_error') => Response.json({ error: { type, message } }, { status })

  /** The server's own address, for the links it answers (set once it listens). */
  let base = ''
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req): Promise<Response> {
      const url = new URL(req.url)
      const form = Object.fromEntries(new URLSearchParams(req.method === 'POST' ? await req.text() : url.search))
      const authorized = req.headers.get('authorization') === `Bearer ${o.secretKey}`
      requests.push({ method: req.method, path: url.pathname, form, authorized })
      if (failing) return error(500, 'An error occurred with our connection to Stripe.', 'api_error')
      if (!authorized) return error(401, 'Invalid API Key provided.')
      const route = `${req.method} ${url.pathname}`
      if (route === 'POST /v1/customers') {
        const key = req.headers.get('idempotency-key')
        const known = key ? byIdempotencyKey.get(key) : undefined
        if (known) return Response.json(customers.get(known))
        const c = { id: next('cus'), object: 'customer', email: form.email ?? null, metadata: { account_id: form['metadata[account_id]'] } }
        customers.set(c.id, c)
        if (key) byIdempotencyKey.set(key, c.id)
        return Response.json(c)
      }
      if (route === 'POST /v1/checkout/sessions') {
        if (form.mode !== 'subscription') return error(400, 'mode must be subscription here')
        if (!customers.has(form.customer)) return error(400, `No such customer: '${form.customer}'`)
        const price = form['line_items[0][price]']
        if (!o.prices.includes(price)) return error(400, `No such price: '${price}'`)
        const id = next('cs')
        const s = {
          id,
          customer: form.customer,
          price,
          clientReferenceId: form.client_reference_id,
          metadata: { plan: form['metadata[plan]'], term: form['metadata[term]'], account_id: form['metadata[account_id]'] },
          url: `${base}c/pay/${id}`,
        }
        checkouts.set(id, s)
        return Response.json({ id, object: 'checkout.session', url: s.url, customer: s.customer, mode: 'subscription' })
      }
      if (route === 'POST /v1/billing_portal/sessions') {
        if (!customers.has(form.customer)) return error(400, `No such customer: '${form.customer}'`)
        const flow = Object.fromEntries(Object.entries(form).filter(([k]) => k.startsWith('flow_data')))
        const sub = flow['flow_data[subscription_update_confirm][subscription]']
        if (sub && !subscriptions.has(sub)) return error(400, `No such subscription: '${sub}'`)
        const p = { id: next('bps'), customer: form.customer, flow }
        portals.push(p)
        return Response.json({ id: p.id, object: 'billing_portal.session', url: `${base}p/session/${p.id}`, return_url: form.return_url })
      }
      return error(404, `Unrecognized request URL (${req.method}: ${url.pathname}).`)
    },
  })
  base = server.url.href

  const event = (type: string, object: Record<string, unknown>): FakeEvent => ({ id: next('evt'), object: 'event', type, created: Math.floor(o.now() / 1000), livemode: false, data: { object } })

  const subscriptionObject = (s: { id: string; customer: string; itemId: string; price: string; status: string; start: number; end: number }) => ({
    id: s.id,
    object: 'subscription',
    customer: s.customer,
    status: s.status,
    current_period_start: s.start,
    current_period_end: s.end,
    items: { object: 'list', data: [{ id: s.itemId, object: 'subscription_item', price: { id: s.price, object: 'price' }, quantity: 1 }] },
  })

  return {
    url: server.url.origin,
    requests,
    customers,
    checkouts,
    portals,
    subscriptions,
    /** Where events go: a URL (over HTTP) or an app's handler. */
    target: '' as Target,
    /** Answer every call with a 500, as Stripe does when it is down. */
    fail(on = true) {
      failing = on
    },
    event,
    subscriptionObject,
    /** Delivers an event signed as Stripe signs it (or with `sign` to forge). */
    async deliver(e: FakeEvent, sign: (body: string) => string = (body) => signature(o.webhookSecret, body, o.now())) {
      const body = JSON.stringify(e)
      const req = new Request(typeof this.target === 'string' ? this.target : 'http://localhost/billing/webhook', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': sign(body) },
        body,
      })
      const res = typeof this.target === 'string' ? await fetch(req) : await this.target(req)
      return { status: res.status, body: (await res.json()) as any }
    },
    /**
     * The person paid: Stripe makes the subscription and its first invoice, and
     * sends checkout.session.completed, customer.subscription.created and invoice.paid.
     */
    async completeCheckout(sessionId: string, amount = 2000) {
      const cs = checkouts.get(sessionId)
      if (!cs) throw new Error(`no checkout session ${sessionId}`)
      const start = Math.floor(o.now() / 1000)
      const renews = new Date(start * 1000)
      renews.setUTCMonth(renews.getUTCMonth() + 1)
      const sub = { id: next('sub'), customer: cs.customer, itemId: next('si'), price: cs.price, status: 'active', start, end: renews.getTime() / 1000 }
      subscriptions.set(sub.id, sub)
      const invoice = this.invoiceObject(cs.customer, sub.id, amount, 'paid', start, sub.end)
      const events = [
        event('checkout.session.completed', { id: cs.id, object: 'checkout.session', customer: cs.customer, subscription: sub.id, client_reference_id: cs.clientReferenceId, metadata: cs.metadata, mode: 'subscription', payment_status: 'paid' }),
        event('customer.subscription.created', subscriptionObject(sub)),
        event('invoice.paid', invoice),
      ]
      const replies = []
      for (const e of events) replies.push(await this.deliver(e))
      return { subscription: sub, invoice, events, replies }
    },
    invoiceObject(customer: string, subscription: string | null, amount: number, status: 'paid' | 'open', start: number, end: number) {
      const id = next('in')
      return {
        id,
        object: 'invoice',
        customer,
        subscription,
        number: `FAKE-${id.slice(-4)}`,
        status,
        amount_due: amount,
        amount_paid: status === 'paid' ? amount : 0,
        currency: 'usd',
        hosted_invoice_url: `${base}i/${id}`,
        invoice_pdf: `${base}i/${id}/pdf`,
        period_start: start,
        period_end: end,
        created: start,
      }
    },
    stop: () => server.stop(true),
    reset() {
      failing = false
      requests.length = 0
      portals.length = 0
      customers.clear()
      byIdempotencyKey.clear()
      checkouts.clear()
      subscriptions.clear()
    },
  }
}

export type FakeStripe = ReturnType<typeof startFakeStripe>
