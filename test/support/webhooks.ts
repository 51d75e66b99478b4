// Helpers for webhook tests: endpoints made through the API, and moving the hand
// clock to whatever the dispatcher (or the delivery worker) has due next.
import { expect } from 'bun:test'
import { and, eq, gt, gte, inArray, min } from 'drizzle-orm'
import { iso } from '../../src/lib/clock'
import { deliveries, webhookDeliveries } from '../../src/db/tables'
import type { Harness } from './harness'

export interface Endpoint {
  id: string
  url: string
  signing_secret: string
  events: string[]
  webhook_compat: boolean
}

export async function makeEndpoint(h: Harness, body: Record<string, unknown>, key?: string): Promise<Endpoint> {
  const r = await h.call('POST', '/webhooks', { body, key })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body
}

/** Webhook rows by state, as the dispatcher sees them. */
export async function rowsByState(h: Harness) {
  const rows = await h.root.db.q.select({ state: webhookDeliveries.state }).from(webhookDeliveries)
  const out: Record<string, number> = {}
  for (const r of rows) out[r.state] = (out[r.state] ?? 0) + 1
  return out
}

/**
 * Sets the clock to the next moment something becomes due: a pending webhook
 * row's next attempt, a lease that ends, or a delivery the worker retries. False
 * when nothing is scheduled later than now.
 */
export async function advanceToNextDue(h: Harness): Promise<boolean> {
  const q = h.root.db.q
  // What is due now was taken by the last run (or waits behind an earlier event): only later times move things.
  const now = iso(h.clock.now())
  const [w] = await q.select({ at: min(webhookDeliveries.nextAttemptAt) }).from(webhookDeliveries).where(and(eq(webhookDeliveries.state, 'pending'), gt(webhookDeliveries.nextAttemptAt, now)))
  const [l] = await q.select({ at: min(webhookDeliveries.leaseUntil) }).from(webhookDeliveries).where(and(eq(webhookDeliveries.state, 'pending'), gte(webhookDeliveries.leaseUntil, now)))
  const [d] = await q.select({ at: min(deliveries.nextAttemptAt) }).from(deliveries).where(and(inArray(deliveries.state, ['queued', 'deferred', 'scheduled']), gt(deliveries.nextAttemptAt, now)))
  const times = [w?.at, l?.at, d?.at].filter((x): x is string => !!x).map((x) => Date.parse(x))
  if (!times.length) return false
  // One past the earliest: a lease is free only once it has passed.
  h.clock.set(Math.min(...times) + 1)
  return true
}
