// The relay transport hands the pool a message source, not a stream: a message the
// server never got a byte of, on a pooled connection the server closed meanwhile,
// still goes out again over a fresh connection (nodemailer's requeue reads that).
import { afterEach, expect, test } from 'bun:test'
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'
import { loadConfig } from '../src/config'
import { RelayTransport } from '../src/delivery/transport'

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

test('a message refused with 421 before any byte of it was sent goes out over a new connection', async () => {
  const received: string[] = []
  let connections = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onConnect(_s, cb) {
      connections++
      cb()
    },
    // The first connection takes one message and then shuts down, as a server past its per-connection limit does.
    onMailFrom(_a, session, cb) {
      if (session.transaction > 1 && connections === 1) return cb(Object.assign(new Error('4.7.0 too many messages on this connection, closing'), { responseCode: 421 }))
      cb()
    },
    onData(stream, _s, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        received.push(Buffer.concat(chunks).toString())
        cb()
      })
    },
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())))
  const port = (server.server.address() as AddressInfo).port
  const config = loadConfig({ MAILROOM_DATA_DIR: '/tmp', MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: `smtp://127.0.0.1:${port}`, MAILROOM_HOSTNAME: 'mta.mailroom.test' })
  const transport = new RelayTransport(config, { perDestination: 1, connectionTimeoutMs: 3000, greetingTimeoutMs: 3000, socketTimeoutMs: 5000 })
  cleanups.push(() => transport.close())
  const job = (n: number) => ({ from: `bounces+${n}@send.acme.test`, to: 'someone@example.net', recipientDomain: 'example.net', raw: Buffer.from(`Subject: ${n}\r\n\r\nmessage ${n}\r\n`), requireTls: false })

  expect((await transport.send(job(1))).kind).toBe('delivered')
  const second = await transport.send(job(2))
  expect(second).toMatchObject({ kind: 'delivered', code: 250 })
  expect(connections).toBe(2)
  expect(received.map((r) => r.match(/message \d/)?.[0])).toEqual(['message 1', 'message 2'])
})
