import { expect } from 'bun:test'
import { accountUsage, apiKeyBudgetUsage, deliveries, emailAttachments, emailEvents, emails, suppressions } from '../../src/db/tables'
import { iso } from '../../src/lib/clock'
import { insertDomain } from './delivery-fixtures'
import type { Harness } from './harness'

/**
 * A sending domain inserted directly (the domains module verifies real ones):
 * `verified` with sending on unless told otherwise.
 */
export async function verifiedDomain(h: Harness, name = 'acme.dev', o: { status?: 'verified' | 'pending' | 'failed'; sendingEnabled?: boolean; accountId?: string; clickTracking?: boolean } = {}) {
  const status = o.status ?? 'verified'
  const row = await insertDomain(h.root, o.accountId ?? h.accountId, name, {
    status,
    sendingEnabled: o.sendingEnabled ?? true,
    clickTracking: o.clickTracking ?? false,
    dkimSelector: 'mailroom1',
    verifiedAt: status === 'verified' ? iso(h.clock.now()) : null,
  })
  return { id: row.id, name }
}

/** A minimal valid send from the verified `acme.dev`. */
export const message = (over: Record<string, unknown> = {}) => ({
  from: 'Acme <hello@acme.dev>',
  to: 'ada@customer.io',
  subject: 'Your receipt',
  html: '<p>Thanks!</p>',
  text: 'Thanks!',
  ...over,
})

/** A send to simulator addresses only: works from any from address. */
export const simulated = (over: Record<string, unknown> = {}) => message({ from: 'bot@unverified.dev', to: 'delivered@simulator.test', ...over })

export async function sent(h: Harness, body: unknown, key?: string, headers?: Record<string, string>) {
  const r = await h.call('POST', '/emails', { body, key, headers })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.id as string
}

/** Everything a send wrote, for checking that a refusal wrote nothing. */
export async function written(h: Harness) {
  const db = h.root.db.q
  return {
    emails: await db.select().from(emails),
    deliveries: await db.select().from(deliveries),
    attachments: await db.select().from(emailAttachments),
    events: await db.select().from(emailEvents),
    budget: await db.select().from(apiKeyBudgetUsage),
    usage: await db.select().from(accountUsage),
  }
}

/** A refused send spent nothing and wrote nothing. */
export async function nothingWritten(h: Harness) {
  const w = await written(h)
  expect({ emails: w.emails.length, deliveries: w.deliveries.length, events: w.events.length, budget: w.budget, usage: w.usage }).toEqual({
    emails: 0,
    deliveries: 0,
    events: 0,
    budget: [],
    usage: [],
  })
}

export async function suppress(h: Harness, email: string, reason: 'bounce' | 'complaint' | 'unsubscribe' | 'manual' = 'bounce', accountId = h.accountId) {
  await h.root.db.write((tx) => tx.insert(suppressions).values({ id: h.root.ids.uuid(), accountId, email, reason, sourceEmailId: null, detail: '550 5.1.1 no such user', createdAt: iso(h.clock.now()) }))
}
