// A real HTTP receiver for webhook tests, on 127.0.0.1 and a random port. It keeps
// every request as it arrived (headers and raw body) and answers what `respond`
// says (200 by default); `down()` closes the port so connections are refused, and
// `up()` opens the same port again.
//
//   const rx = await startReceiver()
//   rx.respond = (req, n) => (n === 1 ? new Response('no', { status: 500 }) : new Response('ok'))
//   ... rx.received, rx.url
//   await rx.close()
import { setSystemTime } from 'bun:test'
import { Webhook as StandardWebhook } from 'standardwebhooks'
import { Webhook as SvixWebhook } from 'svix'

export interface ReceivedRequest {
  method: string
  path: string
  headers: Record<string, string>
  body: string
  /** The status this receiver answered. */
  status?: number
}

export interface Receiver {
  url: string
  port: number
  received: ReceivedRequest[]
  /** The answer to a request; `n` counts the requests seen with its `webhook-id`, this one included. */
  respond: (req: ReceivedRequest, n: number) => Response | Promise<Response>
  down(): Promise<void>
  up(): void
  close(): Promise<void>
}

export async function startReceiver(): Promise<Receiver> {
  const received: ReceivedRequest[] = []
  const seen = new Map<string, number>()
  let server: ReturnType<typeof Bun.serve> | null = null
  const rx: Receiver = {
    url: '',
    port: 0,
    received,
    respond: () => new Response('ok'),
    async down() {
      await server?.stop(true)
      server = null
    },
    up() {
      server = Bun.serve({
        hostname: '127.0.0.1',
        port: rx.port,
        async fetch(request) {
          const u = new URL(request.url)
          const req: ReceivedRequest = { method: request.method, path: u.pathname + u.search, headers: Object.fromEntries(request.headers), body: await request.text() }
          received.push(req)
          const id = req.headers['webhook-id'] ?? ''
          const n = (seen.get(id) ?? 0) + 1
          seen.set(id, n)
          const res = await rx.respond(req, n)
          req.status = res.status
          return res
        },
      })
      rx.port = server.port!
      rx.url = `http://127.0.0.1:${rx.port}/hooks/mailroom`
    },
    close: () => rx.down(),
  }
  rx.up()
  return rx
}

/**
 * Verifies a delivery as a receiver would, with the `standardwebhooks` library on
 * the `webhook-*` headers and, when `compat`, with the `svix` library on the
 * `svix-*` headers alone. Both check the timestamp against the wall clock, so the
 * check runs at the moment the request was signed (tests move a hand clock).
 * Throws when either does not verify.
 */
export function verifyDelivery(secret: string, req: ReceivedRequest, compat = false) {
  const h = req.headers
  setSystemTime(new Date(Number(h['webhook-timestamp']) * 1000))
  try {
    new StandardWebhook(secret).verify(req.body, { 'webhook-id': h['webhook-id']!, 'webhook-timestamp': h['webhook-timestamp']!, 'webhook-signature': h['webhook-signature']! })
    if (compat) new SvixWebhook(secret).verify(req.body, { 'svix-id': h['svix-id']!, 'svix-timestamp': h['svix-timestamp']!, 'svix-signature': h['svix-signature']! })
    else new SvixWebhook(secret).verify(req.body, { 'webhook-id': h['webhook-id']!, 'webhook-timestamp': h['webhook-timestamp']!, 'webhook-signature': h['webhook-signature']! })
  } finally {
    setSystemTime()
  }
}
