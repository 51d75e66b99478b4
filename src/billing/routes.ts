import { Elysia } from 'elysia'
import { rawBodyOf } from '../http/body'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import * as s from './schema'
import * as svc from './service'
import { receiveEvent } from './webhook'

const tag = 'billing'
const OFF = 'Billing is off unless the operator configures a payment provider; then every billing route answers 503 `billing_not_configured`.'

export const billingRoutes = (platform: Platform) =>
  new Elysia({ name: 'billing', prefix: '/billing' })
    .use(platform)
    .get('/plan', ({ deps, actor }) => svc.getPlan(deps, actor), {
      ...op({
        id: 'getBillingPlan',
        summary: 'The plan in force, its inclusion used this cycle, the trial and the overage setting',
        description: `${OFF} Without a plan in force, real sends get \`plan_required\` (simulator sends still work); past the inclusion, \`plan_limit_reached\`, or with overage on, \`overage_cap_reached\` past its cap.`,
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['billing_not_configured'],
      }),
      response: { 200: s.BillingPlan },
    })
    .post('/checkout', ({ deps, actor, body }) => svc.startCheckout(deps, actor, body), {
      ...op({
        id: 'startBillingCheckout',
        summary: 'Start buying a plan: a link to the payment provider’s checkout',
        description: `${OFF} \`plan\` is starter, pro or scale; \`term\` monthly (default) or yearly. The plan starts when the provider reports the payment (POST /billing/webhook). With a live subscription, change plans through the portal. Owners and admins only.`,
        tag,
        auth: 'person',
        method: 'POST',
        body: true,
        errors: ['billing_not_configured', 'plan_not_purchasable', 'term_not_on_sale', 'subscription_active', 'service_unavailable'],
      }),
      body: s.Checkout,
      response: { 200: s.CheckoutSession },
    })
    .post('/portal', ({ deps, actor, body }) => svc.openPortal(deps, actor, body), {
      ...op({
        id: 'openBillingPortal',
        summary: 'A link to manage the subscription; also changes the plan, pays an invoice or sets overage',
        description: `${OFF} With \`plan\`/\`term\` the portal opens on confirming that change (not during the trial: \`portal_change_unavailable\`); with \`invoice_id\` the link is that invoice's payment page; \`overage\` turns emails beyond the inclusion on or off (not on starter), up to \`cap\`. Owners and admins only.`,
        tag,
        auth: 'person',
        method: 'POST',
        body: true,
        errors: [
          'billing_not_configured',
          'billing_customer_missing',
          'plan_not_purchasable',
          'term_not_on_sale',
          'plan_already_active',
          'portal_change_unavailable',
          'overage_not_on_plan',
          'invalid_parameter',
          'charge_not_this_account',
          'not_found',
          'service_unavailable',
        ],
      }),
      body: s.Portal,
      response: { 200: s.PortalSession },
    })
    .post('/trial', ({ deps, actor }) => svc.startTrial(deps, actor), {
      ...op({
        id: 'startBillingTrial',
        summary: 'Start the 14-day Pro trial, once per account',
        description: `${OFF} Refused once the trial was used, and while a paid plan is in force. Owners and admins only.`,
        tag,
        auth: 'person',
        method: 'POST',
        errors: ['billing_not_configured', 'trial_already_used', 'plan_already_active'],
      }),
      response: { 200: s.BillingPlan },
    })
    .get('/invoices', ({ deps, actor, query }) => svc.listInvoices(deps, actor, query), {
      ...op({ id: 'listBillingInvoices', summary: 'Invoices, newest first', description: OFF, tag, auth: 'full', method: 'GET', errors: ['billing_not_configured', 'invalid_cursor'] }),
      query: s.ListInvoicesQuery,
      response: { 200: s.InvoiceList },
    })
    .post('/webhook', ({ deps, request, body }) => receiveEvent(deps, request.headers.get('stripe-signature'), rawBodyOf(request), body), {
      ...op({
        id: 'receiveBillingWebhook',
        summary: 'The payment provider’s events, signature-checked and applied once',
        description:
          'Stripe’s shape: `Stripe-Signature: t=<unix>,v1=<HMAC-SHA256 of "t.body">` under MAILROOM_BILLING_WEBHOOK_SECRET, within 5 minutes. Handles checkout.session.completed, customer.subscription.created/updated/deleted, invoice.paid and invoice.payment_failed; a replayed event id answers 200 and changes nothing; a checkout whose customer is another account’s is `charge_not_this_account`.',
        tag,
        auth: 'public',
        method: 'POST',
        body: true,
        errors: ['billing_not_configured', 'payment_signature_invalid', 'charge_not_this_account'],
      }),
      body: s.ProviderEvent,
      response: { 200: s.WebhookReceipt },
    })
