// SIGTERM to the real server while a request is half-received and messages sit in a
// slow mail server's DATA phase: the request completes with its 2xx, the process
// exits 0, every message is either delivered and recorded or back in the queue with
// no lease, and after a restart each is delivered exactly once.
import { afterEach, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { KEY, header, pool, queueState, recordedDelivered, shopRig, until, type Rig } from './support/faults'

let rig: Rig | undefined
afterEach(async () => {
  await rig?.close()
  rig = undefined
})

/** A POST whose body is sent in two halves, the second when `rest` resolves; resolves with the reply's status and body. */
function slowPost(url: string, path: string, body: unknown, headers: Record<string, string>, rest: Promise<void>): { sentHalf: Promise<void>; reply: Promise<{ status: number; body: any }> } {
  const { hostname, port } = new URL(url)
  const payload = Buffer.from(JSON.stringify(body))
  const head = [`POST ${path} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Content-Type: application/json', `Content-Length: ${payload.length}`, 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n')
  const socket = connect(Number(port), hostname)
  let raw = ''
  socket.on('data', (c) => (raw += c.toString()))
  const sentHalf = new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.once('connect', () => socket.write(head + payload.subarray(0, payload.length >> 1).toString(), () => resolve()))
  })
  const reply = (async () => {
    await sentHalf
    await rest
    socket.write(payload.subarray(payload.length >> 1))
    await new Promise<void>((resolve) => socket.once('close', () => resolve()))
    const [top, ...parts] = raw.split('\r\n\r\n')
    const text = parts.join('\r\n\r\n')
    // The answer may be chunked: its JSON sits between the chunk sizes.
    const json = text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1)
    return { status: Number(top.split(' ')[1]), body: json ? JSON.parse(json) : null }
  })()
  return { sentHalf, reply }
}

test('SIGTERM: the request in flight gets its 2xx, the process exits 0, nothing is half-sent, and a restart delivers each once', async () => {
  let { rig: r, server } = await shopRig({ dataDelayMs: 1500 })
  rig = r
  const sends = await pool([...Array(12).keys()], 6, (i) => r.call(server, 'POST', '/emails', { from: 'Shop <orders@shop.test>', to: `slow${i}@customer.test`, subject: `slow-${i}`, text: `Slow ${i}` }))
  for (const s of sends) expect(s.status, JSON.stringify(s.body)).toBe(200)
  await until('messages in the sink’s DATA phase', 15_000, () => r.sink.holding > 0)

  let finish!: () => void
  const late = slowPost(server.url, '/emails', { from: 'Shop <orders@shop.test>', to: 'late@customer.test', subject: 'slow-late', text: 'Late' }, { authorization: `Bearer ${KEY}`, 'Idempotency-Key': 'late-1' }, new Promise<void>((r) => (finish = r)))
  await late.sentHalf
  await Bun.sleep(100)
  const holding = r.sink.holding
  const t0 = Date.now()
  server.p.proc.kill('SIGTERM')
  await Bun.sleep(300)
  finish()
  const reply = await late.reply
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  const code = await Promise.race([server.p.proc.exited, Bun.sleep(15_000).then(() => 'still running')])
  expect(code).toBe(0)
  const stopMs = Date.now() - t0

  // Nothing half-sent: what reached the sink is recorded as delivered, the rest is queued with no lease.
  const recorded = await recordedDelivered(r)
  expect(new Set(r.sink.messages.map((m) => header(m.raw, 'message-id')))).toEqual(recorded)
  expect(recorded.size).toBeGreaterThanOrEqual(holding)
  const q = await queueState(r)
  expect(q.leased).toBe(0)
  expect(q.due).toBe(13 - recorded.size)
  expect(await r.query("SELECT key FROM idempotency_keys WHERE state = 'in_flight'")).toEqual([])
  expect(await r.query('SELECT id FROM instances')).toEqual([])

  server = await r.start()
  await until('the queue is empty', 30_000, async () => {
    const s = await queueState(r)
    return s.due === 0 && s.leased === 0 && r.sink.messages.length >= 13
  })
  const subjects = r.sink.messages.map((m) => header(m.raw, 'subject'))
  expect(subjects.sort()).toEqual([...sends.map((_, i) => `slow-${i}`), 'slow-late'].sort())
  expect(header(r.sink.messages.find((m) => header(m.raw, 'subject') === 'slow-late')!.raw, 'message-id')).toBe(`<${reply.body.id}@mx.mailroom.test>`)
  console.log(`SIGTERM: ${holding} messages in DATA and one request half-received at the signal; exit 0 after ${stopMs} ms with ${recorded.size} delivered and ${q.due} queued`)
  expect(await server.p.stop()).toBe(0)
}, 90_000)
