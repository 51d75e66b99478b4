// Segments, drafts and the fan-out job for broadcast tests.
import { expect } from 'bun:test'
import { BroadcastWorker } from '../../src/broadcasts/fanout'
import type { Harness } from './harness'

export const missing = '01890000-0000-7000-8000-000000000000'

/** Simulator recipients: a broadcast to them needs no verified domain. */
export const SIM = ['delivered+ada@resend.dev', 'delivered+bob@resend.dev']

type Member = string | Record<string, unknown>

/** A static segment and its members, made through the API (contacts join it as they are created). */
export async function audience(h: Harness, members: Member[] = SIM, name = 'Customers', key?: string) {
  const segment = await h.call('POST', '/segments', { key, body: { name } })
  expect(segment.status, JSON.stringify(segment.body)).toBe(201)
  const contacts: { id: string; email: string }[] = []
  for (const m of members) {
    const c = await h.call('POST', '/contacts', { key, body: { ...(typeof m === 'string' ? { email: m } : m), segments: [segment.body.id] } })
    expect(c.status, JSON.stringify(c.body)).toBe(201)
    contacts.push(c.body)
  }
  return { segment: segment.body as { id: string; name: string }, contacts }
}

/** A broadcast request for the segment (from acme.dev, which simulator recipients do not need verified). */
export const draft = (segmentId: string, over: Record<string, unknown> = {}) => ({
  segment_id: segmentId,
  from: 'Acme News <news@acme.dev>',
  subject: 'March news',
  html: '<p>Hello {{{FIRST_NAME|there}}}</p>',
  text: 'Hello {{{FIRST_NAME|there}}}',
  ...over,
})

export async function created(h: Harness, body: Record<string, unknown>, key?: string) {
  const r = await h.call('POST', '/broadcasts', { body, key })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; status: string; recipient_count: number | null }
}

/** A draft for a fresh segment of `members`. */
export async function madeDraft(h: Harness, over: Record<string, unknown> = {}, members: Member[] = SIM) {
  const { segment, contacts } = await audience(h, members)
  return { segment, contacts, broadcast: await created(h, draft(segment.id, over)) }
}

const workers = new WeakMap<Harness, BroadcastWorker>()

/** The harness's broadcast worker (not started: tests drive it), made on first use. */
export function broadcastWorker(h: Harness, chunkSize?: number) {
  let w = workers.get(h)
  if (!w) workers.set(h, (w = new BroadcastWorker(h.root, { chunkSize })))
  return w
}

/** Every step of the fan-out job due now: scheduled starts, chunks, settling. */
export const fanOut = (h: Harness) => broadcastWorker(h).runOnce()

/** A broadcast sent now, fanned out and delivered (simulator recipients play out their events). */
export async function sentBroadcast(h: Harness, over: Record<string, unknown> = {}, members: Member[] = SIM) {
  const made = await madeDraft(h, over, members)
  const r = await h.call('POST', `/broadcasts/${made.broadcast.id}/send`)
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  await fanOut(h)
  await h.worker.runOnce()
  await fanOut(h)
  return made
}
