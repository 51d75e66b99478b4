// kill -9 of the real server while its background workers are busy, then a restart
// on the same data folder: webhook dispatch (every event arrives; one the receiver
// answered and we recorded is never sent again) and an automation's wait (the send
// after it happens exactly once).
import { afterEach, expect, test } from 'bun:test'
import { RECORD_WINDOW_MS, WEBHOOK_CONCURRENCY, bySubject, faultRig, pool, shopRig, until, type Rig } from './support/faults'
import { startReceiver, type ReceivedRequest, type Receiver } from './support/webhook-receiver'

let rig: Rig | undefined
let rx: Receiver | undefined
afterEach(async () => {
  await rig?.close()
  await rx?.close()
  rig = rx = undefined
})

const EMAILS = 150

test('kill -9 during webhook dispatch: every event arrives, none recorded as delivered is sent again, re-sends only for requests in flight', async () => {
  rig = await faultRig()
  rx = await startReceiver()
  const r = rig
  const arrivedAt = new Map<ReceivedRequest, number>()
  rx.respond = async (req) => {
    arrivedAt.set(req, Date.now())
    // A receiver that takes a moment: dispatch is still going when the kill comes.
    await Bun.sleep(25)
    return new Response('ok')
  }
  let server = await r.start()
  const hook = await r.call(server, 'POST', '/webhooks', { endpoint: rx.url, events: ['email.sent', 'email.delivered'] })
  expect(hook.status, JSON.stringify(hook.body)).toBe(201)
  const sends = await pool([...Array(EMAILS).keys()], 10, (i) =>
    r.call(server, 'POST', '/emails', { from: 'bot@unverified.dev', to: `delivered+n${i}@simulator.test`, subject: `hook-${i}`, text: `Event ${i}` }),
  )
  for (const s of sends) expect(s.status, JSON.stringify(s.body)).toBe(200)

  const received = rx.received
  await until('webhook requests before the kill', 30_000, () => received.length >= 60)
  await server.kill()
  const killedAt = Date.now()
  const beforeKill = received.length
  const recorded = new Set((await r.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE state = 'delivered'")).map((x) => x.id))
  const [{ total }] = await r.query<{ total: number }>('SELECT count(*) AS total FROM webhook_deliveries')
  expect(beforeKill).toBeLessThan(EMAILS * 2)

  server = await r.start()
  await until('every event delivered', 60_000, async () => {
    const [row] = await r.query<{ open: number; total: number }>("SELECT sum(state != 'delivered') AS open, count(*) AS total FROM webhook_deliveries")
    return Number(row.total) === EMAILS * 2 && Number(row.open) === 0
  })
  expect(Number(total)).toBeLessThanOrEqual(EMAILS * 2)

  // Every (email, event type) pair arrived.
  const pairs = new Set(received.map((q) => JSON.parse(q.body)).map((b: { type: string; data: { email_id: string } }) => `${b.data.email_id} ${b.type}`))
  const ids = sends.map((s) => s.body.id as string)
  for (const id of ids) for (const type of ['email.sent', 'email.delivered']) expect(pairs.has(`${id} ${type}`)).toBe(true)
  expect(pairs.size).toBe(EMAILS * 2)

  const copies = new Map<string, ReceivedRequest[]>()
  for (const q of received) copies.set(q.headers['webhook-id'], [...(copies.get(q.headers['webhook-id']) ?? []), q])
  const problems: string[] = []
  let resent = 0
  for (const [id, list] of copies) {
    if (list.length === 1) continue
    resent++
    const first = arrivedAt.get(list[0])!
    if (list.length > 2) problems.push(`${id}: ${list.length} copies`)
    if (recorded.has(id)) problems.push(`${id}: recorded as delivered before the kill, then sent again`)
    if (received.indexOf(list[0]) >= beforeKill || first < killedAt - RECORD_WINDOW_MS) problems.push(`${id}: re-sent, but its first request was not in flight at the kill`)
    if (list.some((q) => q.body !== list[0].body)) problems.push(`${id}: re-sent with a different body`)
  }
  // Requests in flight (one set per endpoint slot) and answers waiting for their group commit.
  if (resent > WEBHOOK_CONCURRENCY * 4) problems.push(`${resent} re-sent, more than could be in flight`)
  expect(problems).toEqual([])
  console.log(`webhooks: ${beforeKill} of ${EMAILS * 2} requests before the kill, ${recorded.size} recorded; ${resent} re-sent after the restart`)
  expect(await server.p.stop()).toBe(0)
}, 90_000)

test('kill -9 during an automation’s wait: after the restart, the send that follows the wait happens exactly once per run', async () => {
  let { rig: r, server } = await shopRig()
  rig = r
  const made = await r.call(server, 'POST', '/templates', { name: 'Welcome', from: 'Shop <hello@shop.test>', subject: 'Welcome, {{{name}}}', html: '<p>Hello {{{name}}}</p>', variables: [{ key: 'name', type: 'string', fallback_value: 'friend' }] })
  expect(made.status, JSON.stringify(made.body)).toBe(201)
  expect((await r.call(server, 'POST', `/templates/${made.body.id}/publish`)).status).toBe(200)
  expect((await r.call(server, 'POST', '/events', { name: 'user.signed_up' })).status).toBe(201)
  const automation = await r.call(server, 'POST', '/automations', {
    name: 'Welcome after a pause',
    status: 'enabled',
    steps: [
      { key: 'start', type: 'trigger', config: { event_name: 'user.signed_up' } },
      { key: 'pause', type: 'delay', config: { duration: '5 seconds' } },
      { key: 'welcome', type: 'send_email', config: { template: { id: made.body.id, variables: { name: { var: 'contact.first_name' } } } } },
    ],
  })
  expect(automation.status, JSON.stringify(automation.body)).toBe(201)
  const people = [...Array(20).keys()].map((i) => ({ email: `member${i}@customer.test`, first_name: `M${i}` }))
  await pool(people, 5, async (p) => {
    expect((await r.call(server, 'POST', '/contacts', p)).status).toBe(201)
    expect((await r.call(server, 'POST', '/events/send', { event: 'user.signed_up', email: p.email })).status).toBe(202)
  })
  await until('every run waiting', 15_000, async () => {
    const [row] = await r.query<{ n: number }>("SELECT count(*) AS n FROM automation_runs WHERE status = 'running' AND cursor = 'pause' AND deadline IS NOT NULL")
    return Number(row.n) === people.length
  })
  await server.kill()
  expect(r.sink.messages).toHaveLength(0)

  server = await r.start()
  await until('every welcome sent', 30_000, () => r.sink.messages.length >= people.length)
  await until('every run completed', 15_000, async () => {
    const [row] = await r.query<{ n: number }>("SELECT count(*) AS n FROM automation_runs WHERE status = 'completed'")
    return Number(row.n) === people.length
  })
  // A moment for any second send to show itself.
  await Bun.sleep(1500)
  const seen = bySubject(r.sink.messages)
  expect([...seen.keys()].sort()).toEqual(people.map((p) => `Welcome, ${p.first_name}`).sort())
  for (const copies of seen.values()) expect(copies).toHaveLength(1)
  expect(await server.p.stop()).toBe(0)
}, 90_000)
