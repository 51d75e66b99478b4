// The dispatcher under trouble, end to end: 1,000 emails to simulator addresses,
// a real HTTP receiver that fails the first attempt of every event and then goes
// down for a stretch, a dispatcher restart and a dispatcher that dies holding
// leases. Every event must arrive, signed (checked with the standardwebhooks and
// svix libraries), in order per email, never again once it succeeded, and the
// delivery log must say exactly what the receiver saw.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import { webhookAttempts, webhookDeliveries } from '../src/db/tables'
import { iso } from '../src/lib/clock'
import { WebhookDispatcher } from '../src/webhooks/dispatcher'
import { EMAIL_EVENT_KINDS } from '../src/webhooks/kinds'
import { simulated } from './support/emails'
import { harness, type Harness } from './support/harness'
import { startReceiver, verifyDelivery, type Receiver, type ReceivedRequest } from './support/webhook-receiver'
import { advanceToNextDue, makeEndpoint, rowsByState, type Endpoint } from './support/webhooks'

const BEHAVIOURS = ['delivered', 'bounced', 'complained', 'suppressed', 'delayed'] as const
const EXPECTED: Record<(typeof BEHAVIOURS)[number], string[]> = {
  delivered: ['email.sent', 'email.delivered'],
  bounced: ['email.sent', 'email.bounced'],
  complained: ['email.sent', 'email.delivered', 'email.complained'],
  suppressed: ['email.suppressed'],
  delayed: ['email.sent', 'email.delivery_delayed', 'email.delivered'],
}
const EMAILS = 1000

let h: Harness
let rx: Receiver
let hook: Endpoint
/** email id → its number and simulator behaviour */
const sentEmails = new Map<string, { n: number; behaviour: (typeof BEHAVIOURS)[number] }>()
let refusedWhileDown = 0
/** Rows a dead dispatcher held, and when its lease ended. */
let crashed: string[] = []
let leaseEnd = 0

beforeAll(async () => {
  h = await harness({ MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true', MAILROOM_RATE_LIMIT: '100000' })
  rx = await startReceiver()
  rx.respond = (_req, n) => (n === 1 ? new Response('not yet', { status: 500 }) : new Response('ok'))
  hook = await makeEndpoint(h, { url: rx.url, events: [...EMAIL_EVENT_KINDS], webhook_compat: true })

  for (let b = 0; b < EMAILS / 100; b++) {
    const batch = Array.from({ length: 100 }, (_, i) => {
      const n = b * 100 + i
      return simulated({ to: `${BEHAVIOURS[n % 5]}+n${n}@simulator.test`, subject: `Email ${n}`, tags: [{ name: 'n', value: String(n) }] })
    })
    const r = await h.call('POST', '/emails/batch', { body: batch })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    r.body.data.forEach((d: { id: string }, i: number) => sentEmails.set(d.id, { n: b * 100 + i, behaviour: BEHAVIOURS[(b * 100 + i) % 5] }))
  }
  await h.worker.runOnce()

  // Round one: the receiver answers 500 to every first attempt.
  let dispatcher = h.dispatcher
  expect(await dispatcher.runOnce()).toBeGreaterThan(EMAILS * 0.9)
  expect(rx.received.every((r) => r.status === 500)).toBe(true)

  // Then it is down for a stretch: three steps of the schedule (5 s, 5 min, 30 min) find nothing listening.
  await rx.down()
  for (let i = 0; i < 3; i++) {
    expect(await advanceToNextDue(h)).toBe(true)
    await h.worker.runOnce()
    refusedWhileDown += await dispatcher.runOnce()
  }
  expect(refusedWhileDown).toBeGreaterThan(0)

  // A restart: the stopped dispatcher holds nothing; a new one carries on from the outbox.
  await dispatcher.stop()
  dispatcher = new WebhookDispatcher(h.root)
  rx.up()

  // And a dispatcher that died holding leases: its rows wait for the lease to end, then go out once.
  const pending = await h.root.db.q.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(eq(webhookDeliveries.state, 'pending')).limit(50)
  crashed = pending.map((p) => p.id)
  leaseEnd = h.clock.now() + 60 * 60_000
  await h.root.db.write((tx) => tx.update(webhookDeliveries).set({ leaseOwner: 'crashed-dispatcher', leaseUntil: iso(leaseEnd) }).where(inArray(webhookDeliveries.id, crashed)))

  try {
    for (let i = 0; i < 200; i++) {
      await h.worker.runOnce()
      await dispatcher.runOnce()
      if (!(await advanceToNextDue(h))) break
    }
  } finally {
    await dispatcher.stop()
  }
}, 120_000)

afterAll(async () => {
  await rx?.close()
  await h?.close()
})

const byId = () => {
  const m = new Map<string, ReceivedRequest[]>()
  for (const r of rx.received) m.set(r.headers['webhook-id']!, [...(m.get(r.headers['webhook-id']!) ?? []), r])
  return m
}

describe('1,000 emails through a failing, then absent, receiver', () => {
  test('every event of every email arrived, and nothing is left in the outbox', async () => {
    expect(await rowsByState(h)).toEqual({ delivered: 2200 })
    const delivered = new Map<string, string[]>()
    for (const [, reqs] of byId()) {
      const ok = reqs.find((r) => r.status === 200)!
      const p = JSON.parse(ok.body)
      delivered.set(p.data.email_id, [...(delivered.get(p.data.email_id) ?? []), p.type])
    }
    expect(delivered.size).toBe(EMAILS)
    for (const [emailId, { behaviour }] of sentEmails) expect([...delivered.get(emailId)!].sort()).toEqual([...EXPECTED[behaviour]].sort())
  })

  test('each event succeeded exactly once, and was never sent again after its success', () => {
    const ids = byId()
    expect(ids.size).toBe(2200)
    for (const [id, reqs] of ids) {
      const successes = reqs.filter((r) => r.status === 200)
      expect(successes.length, id).toBe(1)
      expect(reqs[reqs.length - 1], id).toBe(successes[0]!)
      expect(reqs[0]!.status, id).toBe(500)
      // Every attempt of one event sends the same body and id.
      expect(new Set(reqs.map((r) => r.body)).size, id).toBe(1)
    }
  })

  test('every request verifies with standardwebhooks (webhook-*) and with svix (svix-*)', () => {
    for (const r of rx.received) verifyDelivery(hook.signing_secret, r, true)
    // A tampered body does not.
    const r = rx.received[0]!
    expect(() => verifyDelivery(hook.signing_secret, { ...r, body: r.body.replace('email.', 'email_') }, true)).toThrow()
  })

  test('events of one email arrived in the order they happened', () => {
    const firstSuccess = new Map<string, string[]>()
    for (const r of rx.received) {
      if (r.status !== 200) continue
      const p = JSON.parse(r.body)
      firstSuccess.set(p.data.email_id, [...(firstSuccess.get(p.data.email_id) ?? []), p.type])
    }
    for (const [emailId, { behaviour }] of sentEmails) expect(firstSuccess.get(emailId), `${behaviour} ${emailId}`).toEqual(EXPECTED[behaviour])
  })

  test('payloads carry Resend’s shape: the email’s facts, the recipient, tags and the kind’s detail', () => {
    for (const r of rx.received) {
      if (r.status !== 200) continue
      const p = JSON.parse(r.body)
      const sent = sentEmails.get(p.data.email_id)!
      expect(Object.keys(p).sort()).toEqual(['created_at', 'data', 'type'])
      expect(p.data).toMatchObject({ from: 'bot@unverified.dev', to: [`${sent.behaviour}+n${sent.n}@simulator.test`], subject: `Email ${sent.n}`, tags: { n: String(sent.n) } })
      expect(p.data.created_at).toMatch(/^\d{4}-\d\d-\d\dT/)
      if (p.type === 'email.bounced') expect(p.data.bounce).toMatchObject({ type: 'Permanent', subType: 'NoEmail', diagnosticCode: [expect.stringContaining('550 5.1.1')] })
      if (p.type === 'email.suppressed') expect(p.data.suppressed).toMatchObject({ type: 'OnAccountSuppressionList', reason: 'simulated' })
      if (p.type === 'email.delivery_delayed') expect(p.data.delay).toMatchObject({ message: expect.stringContaining('451') })
    }
  })

  test('the delivery log agrees with what the receiver saw, attempt by attempt', async () => {
    const ids = byId()
    const attempts = await h.root.db.q.select().from(webhookAttempts).orderBy(webhookAttempts.id)
    const logged = new Map<string, (typeof attempts)[number][]>()
    for (const a of attempts) logged.set(a.deliveryId, [...(logged.get(a.deliveryId) ?? []), a])
    let refused = 0
    for (const [id, reqs] of ids) {
      const log = logged.get(id)!
      // What reached the receiver, in order, with its answer; the rest found nothing listening.
      expect(log.filter((a) => a.status !== null).map((a) => a.status), id).toEqual(reqs.map((r) => r.status!))
      const down = log.filter((a) => a.status === null)
      for (const a of down) expect(a.response).toStartWith('The request failed')
      refused += down.length
      expect(log.at(-1)!.outcome).toBe('succeeded')
    }
    expect(refused).toBe(refusedWhileDown)

    // The API reads the same: every event `success`, attempt counts as logged, pages through all 2,200.
    const seen: any[] = []
    let cursor: string | undefined
    do {
      const page = await h.call('GET', `/webhooks/${hook.id}/events`, { query: { limit: 500, cursor } })
      expect(page.status).toBe(200)
      seen.push(...page.body.data)
      cursor = page.body.next_cursor ?? undefined
    } while (cursor)
    expect(seen.length).toBe(2200)
    for (const e of seen) {
      expect(e.status).toBe('success')
      expect(e.attempt_count).toBe(logged.get(e.id)!.length)
    }
    const sample = seen.filter((_, i) => i % 100 === 0)
    for (const e of sample) {
      const one = await h.call('GET', `/webhooks/${hook.id}/events/${e.id}`)
      expect(one.body.attempts.map((a: { http_status_code: number | null }) => a.http_status_code)).toEqual(logged.get(e.id)!.map((a) => a.status))
      expect(JSON.stringify(one.body.payload)).toBe(ids.get(e.id)![0]!.body)
    }
  })

  test('rows held by a dispatcher that died went out only once its lease ended, and once', async () => {
    expect(crashed.length).toBe(50)
    const attempts = await h.root.db.q.select().from(webhookAttempts).where(inArray(webhookAttempts.deliveryId, crashed))
    const after = attempts.filter((a) => Date.parse(a.startedAt) > leaseEnd - 60 * 60_000)
    expect(after.length).toBeGreaterThan(0)
    for (const a of after) expect(Date.parse(a.startedAt)).toBeGreaterThan(leaseEnd)
    for (const id of crashed) expect(attempts.filter((a) => a.deliveryId === id && a.outcome === 'succeeded')).toHaveLength(1)
  })
})
