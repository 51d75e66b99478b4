// Contacts, segments, properties and suppressions for contact tests. Segments have no
// API of their own yet, so they are written the way a segment create will write them.
import { expect } from 'bun:test'
import { segments, suppressions } from '../../src/db/tables'
import { iso } from '../../src/lib/clock'
import type { Harness } from './harness'

export const missing = '01890000-0000-7000-8000-000000000000'

export async function makeSegment(h: Harness, name = 'Customers', accountId = h.accountId) {
  const now = iso(h.clock.now())
  const row = { id: h.root.ids.uuid(), accountId, name, createdAt: now, updatedAt: now }
  await h.root.db.write((tx) => tx.insert(segments).values(row))
  return row
}

export async function makeContact(h: Harness, body: Record<string, unknown> = {}, key?: string) {
  const r = await h.call('POST', '/contacts', { key, body: { email: 'ada@example.com', ...body } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; email: string; unsubscribed: boolean; properties: Record<string, unknown> }
}

export async function makeProperty(h: Harness, key: string, type: 'string' | 'number' | 'boolean' | 'date', fallback_value?: unknown, token?: string) {
  const r = await h.call('POST', '/contact-properties', { key: token, body: { key, type, fallback_value } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; key: string; type: string }
}

/** The suppression a recipient's own unsubscribe or complaint leaves on an address. */
export async function suppress(h: Harness, email: string, reason: 'unsubscribe' | 'complaint' | 'bounce' = 'unsubscribe') {
  await h.root.db.write((tx) =>
    tx.insert(suppressions).values({ id: h.root.ids.uuid(), accountId: h.accountId, email, reason, sourceEmailId: null, detail: 'test', createdAt: iso(h.clock.now()) }),
  )
}

/** A contact who unsubscribed themselves: the flag and the suppression, as the one-click unsubscribe leaves them. */
export async function optedOutContact(h: Harness, email = 'ada@example.com', body: Record<string, unknown> = {}) {
  const c = await makeContact(h, { email, unsubscribed: true, ...body })
  await suppress(h, email)
  return c
}
