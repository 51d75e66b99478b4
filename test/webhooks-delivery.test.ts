// The dispatcher's rules one at a time, against real receivers on 127.0.0.1: what
// is sent and how it is signed, the retry schedule, Retry-After, ordering and
// concurrency per endpoint, the address rules at delivery, the 5-day disable,
// restarts, replays, and which changes queue which events.
import { afterAll, beforeAll, describe, expect, setSystemTime, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { Resend } from 'resend'
import { auditEntries, webhookAttempts, webhookDeliveries, webhookEndpoints } from '../src/db/tables'
import { selfSigned } from '../src/inbound/tls'
import { DAY, HOUR, iso } from '../src/lib/clock'
import { RETRY_SCHEDULE_MS, WebhookDispatcher } from '../src/webhooks/dispatcher'
import { purgeWebhookLog } from '../src/webhooks/retention'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { sent, simulated } from './support/emails'
import { harness, type Harness } from './support/harness'
import { smtpClient, verifiedDomain as receivingDomain } from './support/inbound'
import { startReceiver, verifyDelivery, type Receiver } from './support/webhook-receiver'
import { advanceToNextDue, makeEndpoint, rowsByState } from './support/webhooks'

let rx: Receiver
let dns: TestDnsServer
beforeAll(async () => {
  rx = await startReceiver()
  dns = await startDnsServer()
})
afterAll(async () => {
  await rx.close()
  await dns.close()
})

/** A fresh app allowed to deliver to loopback, with a clean receiver; closed after `fn`. */
async function withApp(fn: (h: Harness) => Promise<void>, env: Record<string, string> = {}) {
  rx.received.length = 0
  rx.respond = () => new Response('ok')
  dns.reset()
  const h = await harness({ MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true', MAILROOM_DNS_SERVERS: dns.address, ...env })
  try {
    await fn(h)
  } finally {
    await h.close()
  }
}

/** One email to the simulator, processed by the delivery worker: its events are queued for the endpoints. */
async function deliveredEmail(h: Harness, over: Record<string, unknown> = {}) {
  const id = await sent(h, simulated(over))
  await h.worker.runOnce()
  return id
}

const events = async (h: Harness) => h.root.db.q.select().from(webhookDeliveries).orderBy(webhookDeliveries.id)
const attemptsOf = async (h: Harness, deliveryId: string) => h.root.db.q.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, deliveryId)).orderBy(webhookAttempts.id)

describe('what is sent and how it is signed', () => {
  test('Standard Webhooks headers only, unless webhook_compat; the body is Resend’s event', () =>
    withApp(async (h) => {
      const e = await makeEndpoint(h, { url: rx.url, events: ['email.delivered'] })
      const id = await deliveredEmail(h, { to: 'delivered+x@simulator.test', tags: [{ name: 'plan', value: 'pro' }] })
      expect(await h.dispatcher.runOnce()).toBe(1)
      const [r] = rx.received
      expect(r!.method).toBe('POST')
      expect(r!.path).toBe('/hooks/mailroom')
      expect(r!.headers).toMatchObject({ 'content-type': 'application/json', 'user-agent': 'Mailroom-Webhooks/1', 'webhook-timestamp': String(Date.parse('2026-03-02T10:00:00Z') / 1000) })
      expect(r!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
      expect(r!.headers['svix-id']).toBeUndefined()
      verifyDelivery(e.signing_secret, r!)
      expect(JSON.parse(r!.body)).toEqual({
        type: 'email.delivered',
        created_at: '2026-03-02T10:00:00.000Z',
        data: { email_id: id, created_at: '2026-03-02T10:00:00.000Z', from: 'bot@unverified.dev', to: ['delivered+x@simulator.test'], subject: 'Your receipt', message_id: expect.any(String), tags: { plan: 'pro' } },
      })
    }))

  test('with webhook_compat a receiver written for Resend verifies it unchanged (svix headers, Resend’s SDK)', () =>
    withApp(async (h) => {
      const e = await makeEndpoint(h, { url: rx.url, events: ['email.sent'], webhook_compat: true })
      await deliveredEmail(h)
      await h.dispatcher.runOnce()
      const [r] = rx.received
      for (const k of ['id', 'timestamp', 'signature']) expect(r!.headers[`svix-${k}`]).toBe(r!.headers[`webhook-${k}`])
      verifyDelivery(e.signing_secret, r!, true)
      setSystemTime(new Date(Number(r!.headers['svix-timestamp']) * 1000))
      try {
        const resend = new Resend('re_unused')
        const event = resend.webhooks.verify({ payload: r!.body, headers: { id: r!.headers['svix-id']!, timestamp: r!.headers['svix-timestamp']!, signature: r!.headers['svix-signature']! }, webhookSecret: e.signing_secret })
        expect(event).toMatchObject({ type: 'email.sent' })
        expect(() => resend.webhooks.verify({ payload: r!.body, headers: { id: r!.headers['svix-id']!, timestamp: r!.headers['svix-timestamp']!, signature: r!.headers['svix-signature']! }, webhookSecret: `whsec_${Buffer.from('another secret entirely!').toString('base64')}` })).toThrow()
      } finally {
        setSystemTime()
      }
    }))

  test('after a rotation both secrets sign for 24 hours, then only the new one', () =>
    withApp(async (h) => {
      const e = await makeEndpoint(h, { url: rx.url, events: ['email.sent'] })
      const rotated = (await h.call('POST', `/webhooks/${e.id}/signing-secret/rotate`)).body
      await deliveredEmail(h)
      await h.dispatcher.runOnce()
      const during = rx.received[0]!
      expect(during.headers['webhook-signature']!.split(' ')).toHaveLength(2)
      verifyDelivery(e.signing_secret, during)
      verifyDelivery(rotated.signing_secret, during)
      h.clock.advance(DAY + 1000)
      await deliveredEmail(h)
      await h.dispatcher.runOnce()
      const after = rx.received[1]!
      expect(after.headers['webhook-signature']!.split(' ')).toHaveLength(1)
      verifyDelivery(rotated.signing_secret, after)
      expect(() => verifyDelivery(e.signing_secret, after)).toThrow()
    }))

  test('the test event is signed like any other', () =>
    withApp(async (h) => {
      const e = await makeEndpoint(h, { url: rx.url, events: ['email.sent'], webhook_compat: true })
      await h.call('POST', `/webhooks/${e.id}/test`, { body: { type: 'domain.updated' } })
      verifyDelivery(e.signing_secret, rx.received[0]!, true)
    }))
})

describe('retries', () => {
  test('a failing event is retried at once, after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, then given up', () =>
    withApp(async (h) => {
      rx.respond = () => new Response('boom', { status: 500 })
      const e = await makeEndpoint(h, { url: rx.url, events: ['email.sent'] })
      await deliveredEmail(h)
      const start = h.clock.now()
      await h.dispatcher.runOnce()
      while (await advanceToNextDue(h)) await h.dispatcher.runOnce()
      const [row] = await events(h)
      const times = (await attemptsOf(h, row!.id)).map((a) => Date.parse(a.startedAt) - start)
      // Each wait starts when the attempt before failed; the hand clock adds 1 ms per step.
      let at = 0
      expect(times).toEqual(RETRY_SCHEDULE_MS.map((ms, i) => (at += ms + (i ? 1 : 0))))
      expect(rx.received).toHaveLength(8)
      expect(row).toMatchObject({ state: 'failed', attempts: 8, lastStatus: 500 })
      const one = await h.call('GET', `/webhooks/${e.id}/events/${row!.id}`)
      expect(one.body).toMatchObject({ status: 'failed', attempt_count: 8, next_attempt_at: null })
      expect(one.body.attempts.map((a: { http_status_code: number }) => a.http_status_code)).toEqual(Array(8).fill(500))
      // Replay gives it a fresh schedule: the receiver is back, and it goes through.
      rx.respond = () => new Response(null, { status: 204 })
      expect((await h.call('POST', `/webhooks/${e.id}/events/${row!.id}/replay`)).body.status).toBe('attempting')
      expect(await h.dispatcher.runOnce()).toBe(1)
      expect((await h.call('GET', `/webhooks/${e.id}/events/${row!.id}`)).body).toMatchObject({ status: 'success', attempt_count: 9, last_status_code: 204 })
    }))

  test('any 2xx is success; 3xx, 4xx and 5xx are failures, and redirects are not followed', () =>
    withApp(async (h) => {
      const statuses = [200, 201, 202, 204, 299, 301, 302, 400, 410, 500]
      let i = 0
      rx.respond = (req) => (req.path.endsWith('/moved') ? new Response('followed') : new Response(null, { status: statuses[i++]!, headers: { location: `${rx.url}/moved` } }))
      await makeEndpoint(h, { url: rx.url, events: ['email.sent'] })
      for (const _ of statuses) await deliveredEmail(h)
      await h.dispatcher.runOnce()
      // Requests run side by side: the answers are matched to events by status, not by order.
      const rows = await events(h)
      const byStatus = (a: [number | null, string], b: [number | null, string]) => a[0]! - b[0]!
      expect(rows.map((r): [number | null, string] => [r.lastStatus, r.state]).sort(byStatus)).toEqual(statuses.map((s): [number | null, string] => [s, s < 300 ? 'delivered' : 'pending']))
      expect(rx.received.filter((r) => r.path.endsWith('/moved'))).toEqual([])
    }))

  test('Retry-After on 429 and 503 is honoured when longer than the schedule; on other statuses it is not', () =>
    withApp(async (h) => {
      const answers = [
        new Response('slow down', { status: 429, headers: { 'retry-after': '120' } }),
        new Response('maintenance', { status: 503, headers: { 'retry-after': new Date(Date.parse('2026-03-02T11:00:00Z')).toUTCString() } }),
        new Response('short', { status: 429, headers: { 'retry-after': '1' } }),
        new Response('ignored', { status: 500, headers: { 'retry-after': '3600' } }),
      ]
      let i = 0
      rx.respond = () => answers[i++]!
      await makeEndpoint(h, { url: rx.url, events: ['email.sent'] })
      for (const _ of answers) await deliveredEmail(h)
      // One request at a time, so each answer meets the event it was written for.
      const one = new WebhookDispatcher(h.root, { perEndpoint: 1 })
      try {
        await one.runOnce()
      } finally {
        await one.stop()
      }
      const now = h.clock.now()
      expect((await events(h)).map((r) => Date.parse(r.nextAttemptAt) - now)).toEqual([120_000, HOUR, 5_000, 5_000])
    }))

  test('an answer that never comes times out, and a long body is cut to 2 KB in the log', () =>
    withApp(async (h) => {
      let n = 0
      rx.respond = () => (n++ === 0 ? new Promise<Response>(() => {}) : new Response('x'.repeat(10_000), { status: 500 }))
      await makeEndpoint(h, { url: rx.url, events: ['email.sent'] })
      await deliveredEmail(h)
      await deliveredEmail(h)
      const quick = new WebhookDispatcher(h.root, { timeoutMs: 300, perEndpoint: 1 })
      try {
        await quick.runOnce()
      } finally {
        await quick.stop()
      }
      const [first, second] = await events(h)
      const [timedOut] = await attemptsOf(h, first!.id)
      expect(timedOut).toMatchObject({ status: null, outcome: 'failed', response: 'The request failed: no answer within 300 ms' })
      const [cut] = await attemptsOf(h, second!.id)
      expect(cut!.status).toBe(500)
      expect(cut!.response).toBe('x'.repeat(2048))
    }))
})

describe('order and concurrency', () => {
  test('an endpoint never has more requests in flight than MAILROOM_WEBHOOK_CONCURRENCY', () =>
    withApp(
      async (h) => {
        let now = 0
        let most = 0
        rx.respond = async () => {
          most = Math.max(most, ++now)
          await Bun.sleep(20)
          now--
          return new Response('ok')
        }
        const a = await makeEndpoint(h, { url: rx.url, events: ['email.delivered'] })
        await makeEndpoint(h, { url: `${rx.url}/second`, events: ['email.delivered'] })
        for (let i = 0; i < 20; i++) await deliveredEmail(h, { to: `delivered+${i}@simulator.test` })
        expect(await h.dispatcher.runOnce()).toBe(40)
        // Two endpoints, three each.
        expect(most).toBe(6)
        expect((await h.call('GET', `/webhooks/${a.id}/events`)).body.data.every((e: { status: string }) => e.status === 'success')).toBe(true)
      },
      { MAILROOM_WEBHOOK_CONCURRENCY: '3' },
    ))

  test('events of one email wait for the earlier ones, even while those are retried', () =>
    withApp(async (h) => {
      let failSent = true
      rx.respond = (req) => (failSent && JSON.parse(req.body).type === 'email.sent' ? new Response('no', { status: 500 }) : new Response('ok'))
      await makeEndpoint(h, { url: rx.url, events: ['email.sent', 'email.delivered', 'email.complained'] })
      const id = await deliveredEmail(h, { to: 'complained@simulator.test' })
      await h.dispatcher.runOnce()
      expect(rx.received.map((r) => JSON.parse(r.body).type)).toEqual(['email.sent'])
      // The later events wait for the first one's next attempt, not in the due rows.
      const [, delivered, complained] = await events(h)
      expect([delivered!.nextAttemptAt, complained!.nextAttemptAt]).toEqual([iso(h.clock.now() + 5000), iso(h.clock.now() + 5000)])
      failSent = false
      await advanceToNextDue(h)
      await h.dispatcher.runOnce()
      expect(rx.received.map((r) => JSON.parse(r.body).type)).toEqual(['email.sent', 'email.sent', 'email.delivered', 'email.complained'])
      expect(new Set(rx.received.map((r) => JSON.parse(r.body).data.email_id))).toEqual(new Set([id]))
    }))

  test('a later event goes once the earlier one is given up', () =>
    withApp(async (h) => {
      rx.respond = (req) => (JSON.parse(req.body).type === 'email.sent' ? new Response('no', { status: 500 }) : new Response('ok'))
      await makeEndpoint(h, { url: rx.url, events: ['email.sent', 'email.delivered'] })
      await deliveredEmail(h)
      await h.dispatcher.runOnce()
      while (await advanceToNextDue(h)) await h.dispatcher.runOnce()
      expect((await events(h)).map((r) => r.state)).toEqual(['failed', 'delivered'])
    }))
})

describe('addresses at delivery', () => {
  test('a name that now resolves inside the network is refused at delivery (DNS rebinding), and nothing is sent', () =>
    withApp(
      async (h) => {
        dns.set('hooks.example.test', 'A', ['93.184.215.14'])
        const e = await makeEndpoint(h, { url: `https://hooks.example.test:${rx.port}/in`, events: ['email.sent'] })
        dns.set('hooks.example.test', 'A', ['127.0.0.1'])
        await deliveredEmail(h)
        expect(await h.dispatcher.runOnce()).toBe(1)
        expect(rx.received).toEqual([])
        const [row] = await events(h)
        const one = await h.call('GET', `/webhooks/${e.id}/events/${row!.id}`)
        expect(one.body).toMatchObject({ status: 'attempting', last_status_code: null })
        expect(one.body.attempts[0].response).toBe('hooks.example.test resolves to 127.0.0.1, a loopback address; webhooks go to public addresses only.')
      },
      { MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'false' },
    ))

  test('the request goes to the address that was checked, with the URL’s name for Host and TLS', () =>
    withApp(async (h) => {
      const { key, cert } = selfSigned('hooks.test')
      const seen: { host: string | null; path: string }[] = []
      const tls = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: { key, cert }, fetch: (r) => (seen.push({ host: r.headers.get('host'), path: new URL(r.url).pathname }), new Response('ok')) })
      try {
        dns.set('hooks.test', 'A', ['127.0.0.1'])
        const e = await makeEndpoint(h, { url: `https://hooks.test:${tls.port}/in`, events: ['email.sent'] })
        await makeEndpoint(h, { url: `https://other.test:${tls.port}/in`, events: ['email.sent'] })
        dns.set('other.test', 'A', ['127.0.0.1'])
        await deliveredEmail(h)
        const d = new WebhookDispatcher(h.root, { ca: cert })
        try {
          await d.runOnce()
        } finally {
          await d.stop()
        }
        // The certificate names hooks.test only: the endpoint at other.test fails its TLS check.
        expect(seen).toEqual([{ host: `hooks.test:${tls.port}`, path: '/in' }])
        const states = await h.root.db.q.select({ endpointId: webhookDeliveries.endpointId, state: webhookDeliveries.state, lastStatus: webhookDeliveries.lastStatus }).from(webhookDeliveries)
        expect(states.find((s) => s.endpointId === e.id)).toMatchObject({ state: 'delivered', lastStatus: 200 })
        expect(states.find((s) => s.endpointId !== e.id)).toMatchObject({ state: 'pending', lastStatus: null })
      } finally {
        tls.stop(true)
      }
    }))
})

describe('an endpoint that keeps failing', () => {
  /** One email a day for `days` days, each retried through its schedule against the receiver. */
  async function failDays(h: Harness, days: number) {
    for (let d = 0; d < days; d++) {
      await deliveredEmail(h)
      await h.dispatcher.runOnce()
      const dayEnds = h.clock.now() + DAY
      while (h.clock.now() < dayEnds && (await advanceToNextDue(h))) await h.dispatcher.runOnce()
      if (h.clock.now() < dayEnds) h.clock.set(dayEnds)
    }
  }

  test('is disabled after 5 days of failures, with an entry in the audit log, and takes no more events', () =>
    withApp(async (h) => {
      rx.respond = () => new Response('gone', { status: 502 })
      const e = await makeEndpoint(h, { url: rx.url, events: ['email.sent'] })
      await failDays(h, 7)
      const [row] = await h.root.db.q.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, e.id))
      expect(row).toMatchObject({ disabled: true, disabledReason: 'failing', failingSince: '2026-03-02T10:00:00.000Z' })
      const [audit] = await h.root.db.q.select().from(auditEntries).where(and(eq(auditEntries.resourceId, e.id), eq(auditEntries.action, 'disabled')))
      expect(audit).toMatchObject({ actorKind: 'system', resource: 'webhook', before: { disabled: false }, after: { disabled: true, disabled_reason: 'failing' } })
      expect(Date.parse(audit!.createdAt) - Date.parse('2026-03-02T10:00:00.000Z')).toBeGreaterThanOrEqual(5 * DAY)
      expect((await h.call('GET', `/webhooks/${e.id}`)).body).toMatchObject({ disabled: true, status: 'disabled', disabled_reason: 'failing' })
      // Disabled: new events are not queued for it, and what is pending waits.
      const before = rx.received.length
      const queued = (await events(h)).length
      await deliveredEmail(h)
      expect((await events(h)).length).toBe(queued)
      h.clock.advance(DAY)
      expect(await h.dispatcher.runOnce()).toBe(0)
      expect(rx.received.length).toBe(before)
      // Enabled again, its pending events go out at once.
      rx.respond = () => new Response('ok')
      expect((await h.call('PATCH', `/webhooks/${e.id}`, { body: { disabled: false } })).body).toMatchObject({ disabled: false, disabled_reason: null })
      const pending = (await rowsByState(h)).pending ?? 0
      expect(pending).toBeGreaterThan(0)
      expect(await h.dispatcher.runOnce()).toBe(pending)
      expect((await rowsByState(h)).pending).toBeUndefined()
    }))

  test('a success in between starts the 5 days again', () =>
    withApp(async (h) => {
      rx.respond = () => new Response('gone', { status: 502 })
      const e = await makeEndpoint(h, { url: rx.url, events: ['email.sent'] })
      await failDays(h, 4)
      rx.respond = () => new Response('ok')
      await deliveredEmail(h)
      await h.dispatcher.runOnce()
      expect((await h.root.db.q.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, e.id)))[0]!.failingSince).toBeNull()
      rx.respond = () => new Response('gone', { status: 502 })
      await failDays(h, 4)
      expect((await h.call('GET', `/webhooks/${e.id}`)).body.disabled).toBe(false)
    }))
})

describe('restarts', () => {
  test('a stopped dispatcher finishes what is in flight, hands back the rest, and nothing succeeds twice', () =>
    withApp(async (h) => {
      rx.respond = async () => {
        await Bun.sleep(50)
        return new Response('ok')
      }
      await makeEndpoint(h, { url: rx.url, events: ['email.delivered'] })
      for (let i = 0; i < 30; i++) await sent(h, simulated({ to: `delivered+${i}@simulator.test` }))
      await h.worker.runOnce()
      const first = new WebhookDispatcher(h.root, { pollMs: 10 })
      first.start()
      while (rx.received.length < 3) await Bun.sleep(5)
      await first.stop()
      const sentBefore = rx.received.length
      const after = await rowsByState(h)
      // Everything that went out was recorded; nothing is leased any more.
      expect(after.delivered).toBe(sentBefore)
      expect(after.pending).toBe(30 - sentBefore)
      expect((await events(h)).filter((r) => r.leaseOwner !== null)).toEqual([])
      const second = new WebhookDispatcher(h.root)
      try {
        expect(await second.runOnce()).toBe(30 - sentBefore)
      } finally {
        await second.stop()
      }
      const ids = rx.received.map((r) => r.headers['webhook-id'])
      expect(new Set(ids).size).toBe(30)
      expect(ids).toHaveLength(30)
    }))

  test('an endpoint deleted while its request is in flight leaves no record behind', () =>
    withApp(async (h) => {
      let release!: () => void
      const gate = new Promise<void>((r) => (release = r))
      rx.respond = async () => {
        await gate
        return new Response('ok')
      }
      const e = await makeEndpoint(h, { url: rx.url, events: ['email.sent'] })
      await deliveredEmail(h)
      const run = h.dispatcher.runOnce()
      while (!rx.received.length) await Bun.sleep(5)
      expect((await h.call('DELETE', `/webhooks/${e.id}`)).status).toBe(200)
      release()
      await run
      expect(await h.root.db.q.select().from(webhookDeliveries)).toEqual([])
      expect(await h.root.db.q.select().from(webhookAttempts)).toEqual([])
    }))
})

describe('which changes queue which events', () => {
  test('nothing is queued for an account without endpoints, for a kind no endpoint takes, or for another account', () =>
    withApp(async (h) => {
      await deliveredEmail(h)
      expect(await events(h)).toEqual([])
      const o = await h.otherAccount()
      await makeEndpoint(h, { url: rx.url, events: ['email.sent'] }, o.token)
      await makeEndpoint(h, { url: rx.url, events: ['email.bounced'] })
      await deliveredEmail(h)
      expect(await events(h)).toEqual([])
      await deliveredEmail(h, { to: 'bounced@simulator.test' })
      expect((await events(h)).map((r) => r.type)).toEqual(['email.bounced'])
    }))

  test('scheduled and canceled emails, and opens and clicks, queue their kinds', () =>
    withApp(async (h) => {
      await makeEndpoint(h, { url: rx.url, events: ['email.scheduled', 'email.canceled'] })
      const id = await sent(h, simulated({ scheduled_at: '2026-03-03T09:00:00.000Z' }))
      expect((await h.call('POST', `/emails/${id}/cancel`)).status).toBe(200)
      await h.dispatcher.runOnce()
      const bodies = rx.received.map((r) => JSON.parse(r.body))
      expect(bodies.map((b) => b.type)).toEqual(['email.scheduled', 'email.canceled'])
      expect(bodies[0].data).toMatchObject({ email_id: id, scheduled_at: '2026-03-03T09:00:00.000Z', to: ['delivered@simulator.test'] })
    }))

  test('topic changes go out as topic events with the topic’s public shape', () =>
    withApp(async (h) => {
      const e = await makeEndpoint(h, { url: rx.url, events: ['topic.created', 'topic.updated', 'topic.deleted'], webhook_compat: true })
      const t = (await h.call('POST', '/topics', { body: { name: 'News', default_subscription: 'opt_in' } })).body
      await h.call('PATCH', `/topics/${t.id}`, { body: { name: 'Product news' } })
      await h.call('DELETE', `/topics/${t.id}`)
      await h.dispatcher.runOnce()
      const bodies = rx.received.map((r) => JSON.parse(r.body))
      expect(bodies.map((b) => [b.type, b.data.id, b.data.name])).toEqual([
        ['topic.created', t.id, 'News'],
        ['topic.updated', t.id, 'Product news'],
        ['topic.deleted', t.id, 'Product news'],
      ])
      for (const r of rx.received) verifyDelivery(e.signing_secret, r, true)
    }))

  test('a received email goes out as email.received with its addresses and attachments (never their content)', () =>
    withApp(
      async (h) => {
        await receivingDomain(h, dns, 'inbox.test')
        const smtp = await h.listen()
        await makeEndpoint(h, { url: rx.url, events: ['email.received'] })
        await smtpClient(smtp.port).sendMail({
          from: 'Ada <ada@sender.test>',
          to: 'support@inbox.test',
          cc: 'audit@elsewhere.test',
          bcc: 'archive@inbox.test',
          subject: 'Invoice question',
          text: 'See attached.',
          messageId: '<q1@sender.test>',
          attachments: [{ filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4 secret numbers'), contentType: 'application/pdf' }],
        })
        await h.dispatcher.runOnce()
        expect(rx.received).toHaveLength(1)
        const p = JSON.parse(rx.received[0]!.body)
        const [inbound] = (await h.call('GET', '/emails/receiving')).body.data
        expect(p).toMatchObject({
          type: 'email.received',
          data: { email_id: inbound.id, from: 'Ada <ada@sender.test>', to: ['support@inbox.test'], cc: ['audit@elsewhere.test'], bcc: ['archive@inbox.test'], subject: 'Invoice question', message_id: 'q1@sender.test' },
        })
        expect(p.data.attachments).toEqual([{ id: expect.any(String), filename: 'invoice.pdf', content_type: 'application/pdf', content_disposition: 'attachment', content_id: null }])
        expect(rx.received[0]!.body).not.toContain('secret numbers')
      },
      { MAILROOM_HOSTNAME: 'mx.mailroom.test' },
    ))
})

describe('housekeeping', () => {
  test('finished events older than 30 days leave the log with their attempts; pending ones stay', () =>
    withApp(async (h) => {
      rx.respond = (req) => (JSON.parse(req.body).data.to[0].startsWith('bounced') ? new Response('no', { status: 500 }) : new Response('ok'))
      await makeEndpoint(h, { url: rx.url, events: ['email.delivered', 'email.bounced'] })
      await deliveredEmail(h)
      await deliveredEmail(h, { to: 'bounced@simulator.test' })
      await h.dispatcher.runOnce()
      h.clock.advance(29 * DAY)
      await deliveredEmail(h)
      await h.dispatcher.runOnce()
      h.clock.advance(2 * DAY)
      expect(await purgeWebhookLog(h.root.db, h.clock.now())).toBe(1)
      const left = await events(h)
      expect(left.map((r) => [r.type, r.state])).toEqual([
        ['email.bounced', 'pending'],
        ['email.delivered', 'delivered'],
      ])
      expect([...new Set((await h.root.db.q.select().from(webhookAttempts)).map((a) => a.deliveryId))].sort()).toEqual(left.map((r) => r.id).sort())
      expect(await h.scheduler.runNow('purge-webhook-log')).toBe(0)
    }))

  test('/status reports the dispatcher and its backlog of due events', () =>
    withApp(async (h) => {
      rx.respond = () => new Response('no', { status: 500 })
      await makeEndpoint(h, { url: rx.url, events: ['email.sent', 'email.delivered'] })
      await deliveredEmail(h)
      expect((await h.call('GET', '/status', { key: null })).body.checks.webhook_dispatcher).toEqual({ status: 'ok', backlog: 2 })
      await h.dispatcher.runOnce()
      expect((await h.call('GET', '/status', { key: null })).body.checks.webhook_dispatcher).toEqual({ status: 'ok', backlog: 0 })
    }))
})
