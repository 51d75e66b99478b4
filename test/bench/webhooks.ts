// Webhooks: the dispatcher of a running Mailroom POSTs signed events to a receiver
// on loopback (Bun.serve in this process, answering 200 at once). The events are
// written straight into the outbox, as many sends would write them, so the figure
// is the dispatcher's alone: claim, sign, POST, record.
import { createClient } from '@libsql/client'
import { join } from 'node:path'
import { Webhook } from 'standardwebhooks'
import { BUN, freePort, startProcess, stop, tempDir, waitFor } from './lib'

const KEY = 'mr_bench_bench_bench_bench_bench_bench_1234'

/** A receiver that answers 200 to every POST and counts them; the last request is kept for checking its signature. */
function receiver() {
  let count = 0
  let last: { headers: Headers; body: string } | null = null
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = await req.text()
      count++
      last = { headers: req.headers, body }
      return new Response('ok')
    },
  })
  return { url: `http://127.0.0.1:${server.port}/hook`, count: () => count, last: () => last, stop: () => server.stop(true) }
}

/** The receiver's own ceiling: POSTs from a separate process with the same concurrency, the way the dispatcher sends. */
async function receiverCeiling(url: string, n: number, concurrency: number) {
  const script = `
const body = JSON.stringify({ type: 'email.delivered', created_at: new Date().toISOString(), data: { email_id: crypto.randomUUID() } })
let next = 0
const t0 = performance.now()
await Promise.all(Array.from({ length: ${concurrency} }, async () => {
  while (next++ < ${n}) await (await fetch(${JSON.stringify(url)}, { method: 'POST', body, headers: { 'content-type': 'application/json' } })).text()
}))
console.log(${n} / ((performance.now() - t0) / 1000))
`
  const p = startProcess([BUN, '-e', script], {})
  const out = await new Response(p.stdout as ReadableStream).text()
  await p.exited
  return Number(out.trim())
}

export async function webhookDeliveriesPerSecond(n: number, concurrency = 10) {
  const rx = receiver()
  const port = await freePort()
  const dir = tempDir('webhooks')
  const p = startProcess([BUN, 'src/index.ts'], {
    PORT: String(port),
    MAILROOM_DATA_DIR: dir,
    MAILROOM_BOOTSTRAP_KEY: KEY,
    MAILROOM_HOSTNAME: 'bench.local',
    MAILROOM_DELIVERY: 'capture',
    MAILROOM_SMTP_PORT: '0',
    MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true',
    MAILROOM_WEBHOOK_CONCURRENCY: String(concurrency),
  })
  try {
    const base = `http://127.0.0.1:${port}`
    await waitFor(`${base}/health`)
    const created = await fetch(`${base}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: rx.url, events: ['email.delivered'] }),
    })
    if (created.status !== 201) throw new Error(`POST /webhooks answered ${created.status}: ${await created.text()}`)
    const hook = (await created.json()) as { id: string; signing_secret: string }
    const db = createClient({ url: `file:${join(dir, 'mailroom.db')}` })
    // The server's dispatcher writes too: wait for its lock rather than fail.
    await db.execute('PRAGMA busy_timeout = 10000')
    const account = (await db.execute('select id from accounts limit 1')).rows[0].id as string
    const now = new Date().toISOString()
    const t0 = performance.now()
    // Events of 1,000-row transactions, each for its own email (no ordering between them), as a busy account's sends would queue them.
    for (let i = 0; i < n; i += 1000) {
      const rows = Array.from({ length: Math.min(1000, n - i) }, (_, j) => {
        const emailId = crypto.randomUUID()
        const payload = JSON.stringify({
          type: 'email.delivered',
          created_at: now,
          data: { email_id: emailId, created_at: now, from: 'Bench <bench@bench.test>', to: [`user${i + j}@example.com`], subject: `Bench ${i + j}`, message_id: `${emailId}@bench.local`, tags: {} },
        })
        return { sql: `insert into webhook_deliveries (id, account_id, endpoint_id, type, payload, order_key, state, retries, attempts, next_attempt_at, created_at, updated_at) values (?, ?, ?, 'email.delivered', ?, ?, 'pending', 0, 0, ?, ?, ?)`, args: [Bun.randomUUIDv7(), account, hook.id, payload, emailId, now, now, now] }
      })
      await db.batch(rows, 'write')
    }
    let delivered = 0
    const deadline = Date.now() + 10 * 60_000
    while (delivered < n && Date.now() < deadline) {
      await Bun.sleep(100)
      delivered = Number((await db.execute("select count(*) as n from webhook_deliveries where state = 'delivered'")).rows[0].n)
    }
    const seconds = (performance.now() - t0) / 1000
    db.close()
    // The last request must verify as a receiver would check it.
    const last = rx.last()!
    new Webhook(hook.signing_secret).verify(last.body, Object.fromEntries(last.headers))
    const received = rx.count()
    const ceiling = await receiverCeiling(rx.url, n, concurrency)
    return { perSecond: delivered / seconds, delivered, received, ceiling, concurrency }
  } finally {
    await stop(p)
    rx.stop()
  }
}
