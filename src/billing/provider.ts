import type { BillingSettings } from '../config'
import { AppError } from '../errors/app-error'

type Params = { [k: string]: string | number | boolean | Params | Params[] | undefined }

/** Stripe's form encoding: nested objects and arrays as `a[b][0][c]=v`. */
export function formEncode(params: Params, prefix = '', out = new URLSearchParams()) {
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue
    const name = prefix ? `${prefix}[${k}]` : k
    if (Array.isArray(v)) v.forEach((item, i) => formEncode(item, `${name}[${i}]`, out))
    else if (typeof v === 'object') formEncode(v, name, out)
    else out.append(name, String(v))
  }
  return out
}

const TIMEOUT_MS = 10_000

/**
 * One call to the provider. Unreachable, or failing on its side (5xx, 429), is
 * `service_unavailable`: nothing of ours changed and a retry may work. A refusal
 * of what we asked (4xx) is our own fault, a misconfigured price for instance,
 * so it surfaces as an internal error with the provider's words logged.
 */
async function call<T>(s: BillingSettings, method: 'GET' | 'POST', path: string, params: Params, idempotencyKey?: string): Promise<T> {
  const body = method === 'POST' ? formEncode(params).toString() : undefined
  const url = `${s.apiUrl}${path}${method === 'GET' ? `?${formEncode(params)}` : ''}`
  let res: Response
  try {
    res = await fetch(url, {
      method,
      body,
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: {
        authorization: `Bearer ${s.secretKey}`,
        ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
    })
  } catch (e) {
    throw new AppError('service_unavailable', { message: `The payment provider could not be reached (${(e as Error).message}); nothing was changed.` })
  }
  const text = await res.text()
  if (res.status >= 500 || res.status === 429) throw new AppError('service_unavailable', { message: `The payment provider answered ${res.status}; nothing was changed.` })
  if (!res.ok) throw new Error(`payment provider refused ${method} ${path}: ${res.status} ${text.slice(0, 500)}`)
  return JSON.parse(text) as T
}

export interface Session {
  id: string
  url: string
}

/**
 * The few provider operations billing needs, in Stripe's REST shapes. The
 * customer is created under an idempotency key of the account, so a retried
 * checkout whose first attempt was rolled back here finds the same customer.
 */
export const provider = {
  createCustomer: (s: BillingSettings, accountId: string, email: string | undefined) =>
    call<{ id: string }>(s, 'POST', '/v1/customers', { email, metadata: { account_id: accountId } }, `mailroom-customer-${accountId}`),

  createCheckoutSession: (s: BillingSettings, i: { customer: string; accountId: string; price: string; plan: string; term: string; returnUrl: string }) =>
    call<Session>(s, 'POST', '/v1/checkout/sessions', {
      mode: 'subscription',
      customer: i.customer,
      client_reference_id: i.accountId,
      line_items: [{ price: i.price, quantity: 1 }],
      success_url: `${i.returnUrl}?checkout=success`,
      cancel_url: `${i.returnUrl}?checkout=cancelled`,
      metadata: { account_id: i.accountId, plan: i.plan, term: i.term },
      subscription_data: { metadata: { account_id: i.accountId } },
    }),

  /** The portal; with `change`, opened straight on confirming that subscription's new price. */
  createPortalSession: (s: BillingSettings, i: { customer: string; returnUrl: string; change?: { subscription: string; item: string; price: string } }) =>
    call<Session>(s, 'POST', '/v1/billing_portal/sessions', {
      customer: i.customer,
      return_url: i.returnUrl,
      flow_data: i.change && {
        type: 'subscription_update_confirm',
        subscription_update_confirm: { subscription: i.change.subscription, items: [{ id: i.change.item, price: i.change.price, quantity: 1 }] },
      },
    }),
}
