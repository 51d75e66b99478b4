// kill -9 of the real server in the middle of a send load, then a restart on the
// same data folder: every send that got a 2xx is delivered, a client that retries
// with its Idempotency-Key never makes a second email, and a message is sent twice
// only when its SMTP transaction was in flight at the kill (the sink said 250, the
// process died before recording it): at-least-once at the SMTP boundary, measured.
import { afterEach, expect, test } from 'bun:test'
import { exactlyOnceAtTheBoundary, pool, queueState, recordedDelivered, shopRig, until, type Reply, type Rig } from './support/faults'

let rig: Rig | undefined
afterEach(async () => {
  await rig?.close()
  rig = undefined
})

const SENDS = 300
const CLIENTS = 15

const message = (i: number) => ({ from: 'Shop <orders@shop.test>', to: `buyer${i}@customer.test`, subject: `load-${i}`, text: `Order ${i}` })

test('kill -9 during a send load: every 2xx delivered, retries with the same key make no second email, duplicates only for SMTP in flight', async () => {
  let { rig: r, server } = await shopRig()
  rig = r
  const first: Reply[] = new Array(SENDS)
  let killedAt = 0
  let answered = 0
  const killer = (async () => {
    // Mid-load, whichever comes first: deliveries under way, or most sends answered (a slow
    // first delivery must not let the whole load finish before the kill).
    await until('sink arrivals before the kill', 30_000, () => r.sink.messages.length >= 20 || answered >= SENDS * 0.6)
    await server.kill()
    killedAt = Date.now()
  })()
  await pool([...Array(SENDS).keys()], CLIENTS, async (i) => {
    first[i] = await r.call(server, 'POST', '/emails', message(i), { 'Idempotency-Key': `load-${i}` })
    answered++
  })
  await killer
  const arrivedBeforeKill = r.sink.messages.length
  const recorded = await recordedDelivered(r)
  const [{ cut }] = await r.query<{ cut: number }>("SELECT count(*) AS cut FROM idempotency_keys WHERE state = 'in_flight'")
  const ok = first.filter((x) => x.status === 200).length
  const unanswered = first.filter((x) => x.status === 0).length
  // The kill landed mid-load: some sends were answered, some were not.
  expect(ok).toBeGreaterThan(0)
  expect(unanswered).toBeGreaterThan(0)
  expect(first.every((x) => x.status === 200 || x.status === 0 || x.status >= 500)).toBe(true)

  server = await r.start()
  const final = [...first]
  let inFlightRefusals = 0
  await pool([...Array(SENDS).keys()], CLIENTS, async (i) => {
    for (let attempt = 0; final[i].status !== 200; attempt++) {
      if (attempt > 20) throw new Error(`load-${i}: no 2xx after ${attempt} retries: ${JSON.stringify(final[i])}`)
      final[i] = await r.call(server, 'POST', '/emails', message(i), { 'Idempotency-Key': `load-${i}` })
      if (final[i].status === 409) inFlightRefusals++
    }
  })
  // The claims of requests the kill cut off were handed back at the restart, not after their five-minute lease.
  expect(inFlightRefusals).toBe(0)

  await until('the queue is empty', 60_000, async () => {
    const q = await queueState(r)
    return q.due === 0 && q.leased === 0 && r.sink.messages.length >= SENDS
  })
  // One email per key, whichever life answered.
  const [{ n }] = await r.query<{ n: number }>("SELECT count(*) AS n FROM emails WHERE subject LIKE 'load-%'")
  expect(Number(n)).toBe(SENDS)
  for (const [i, x] of final.entries()) {
    if (first[i].status === 200) expect(x.body.id).toBe(first[i].body.id)
  }

  const { duplicates, problems } = exactlyOnceAtTheBoundary({
    messages: r.sink.messages,
    expected: final.map((_, i) => `load-${i}`),
    killedAt,
    recordedBeforeKill: recorded,
  })
  expect(problems).toEqual([])
  // Every 2xx'd id is the email that arrived.
  const byId = new Set(r.sink.messages.map((m) => m.raw.toString().match(/^Message-ID:\s*<([^@>]+)@/im)?.[1]))
  for (const x of final) expect(byId.has(x.body.id)).toBe(true)
  console.log(`send load: ${ok} answered 2xx and ${unanswered} unanswered before the kill (sink had ${arrivedBeforeKill}, ${cut} claims cut off mid-request); ${duplicates.length} duplicates at the SMTP boundary`)
  expect(await server.p.stop()).toBe(0)
}, 90_000)

test('kill -9 while scheduled sends fire: none lost, each delivered once (bar SMTP in flight)', async () => {
  let { rig: r, server } = await shopRig()
  rig = r
  const at = new Date(Date.now() + 4000).toISOString()
  const replies = await pool([...Array(100).keys()], 10, (i) => r.call(server, 'POST', '/emails', { ...message(i), subject: `later-${i}`, scheduled_at: at }))
  for (const x of replies) expect(x.status, JSON.stringify(x.body)).toBe(200)
  expect(r.sink.messages).toHaveLength(0)

  await until('scheduled sends firing', 30_000, () => r.sink.messages.length >= 15)
  await server.kill()
  const killedAt = Date.now()
  const arrivedBeforeKill = r.sink.messages.length
  const recorded = await recordedDelivered(r)
  expect(arrivedBeforeKill).toBeLessThan(100)

  server = await r.start()
  await until('the queue is empty', 60_000, async () => {
    const q = await queueState(r)
    return q.due === 0 && q.leased === 0 && r.sink.messages.length >= 100
  })
  const { duplicates, problems } = exactlyOnceAtTheBoundary({ messages: r.sink.messages, expected: replies.map((_, i) => `later-${i}`), killedAt, recordedBeforeKill: recorded })
  expect(problems).toEqual([])
  console.log(`scheduled: ${arrivedBeforeKill} of 100 arrived before the kill; ${duplicates.length} duplicates at the SMTP boundary`)
  expect(await server.p.stop()).toBe(0)
}, 90_000)
