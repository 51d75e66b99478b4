// Hostile SMTP against the inbound listener, spoken line by line over a raw
// socket: relay attempts, injected commands, oversize lines, NUL bytes, broken
// MIME and a compression bomb. Each is refused or stored as sent (never
// expanded), and after all of it the listener still takes an ordinary message.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { deflateRawSync } from 'node:zlib'
import { inboundAttachments, inboundRaw } from '../src/db/tables'
import type { InboundListener } from '../src/inbound/server'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { harness, type Harness } from './support/harness'
import { trySend, until, verifiedDomain } from './support/inbound'

let dns: TestDnsServer
let h: Harness
let smtp: InboundListener

beforeAll(async () => {
  dns = await startDnsServer()
  h = await harness({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_HOSTNAME: 'mx.mailroom.test', MAILROOM_SMTP_MAX_SIZE: String(2 * 1024 * 1024), MAILROOM_SMTP_RATE_LIMIT: '1000' })
  await verifiedDomain(h, dns, 'inbox.test')
  smtp = await h.listen()
})
afterAll(async () => {
  await h.close()
  await dns.close()
})

/** A plain-text SMTP session: each `say` sends bytes and waits for the server's next complete reply. */
async function session() {
  const socket: Socket = connect(smtp.port, '127.0.0.1')
  let buffer = ''
  let closed = false
  const waiters: (() => void)[] = []
  socket.setEncoding('latin1')
  socket.on('data', (d: string) => {
    buffer += d
    waiters.splice(0).forEach((w) => w())
  })
  socket.on('close', () => {
    closed = true
    waiters.splice(0).forEach((w) => w())
  })
  socket.on('error', () => {})
  /** The next complete reply: lines up to one whose code is followed by a space. */
  async function reply(ms = 5000): Promise<string> {
    const end = Date.now() + ms
    for (;;) {
      const m = buffer.match(/^(?:\d{3}-[^\n]*\n)*\d{3}(?: [^\n]*)?\r?\n/)
      if (m) {
        buffer = buffer.slice(m[0].length)
        return m[0].trim()
      }
      if (closed) return 'closed'
      if (Date.now() > end) throw new Error(`no reply within ${ms} ms; buffer: ${buffer.slice(0, 200)}`)
      await new Promise<void>((r) => {
        waiters.push(r)
        setTimeout(r, 100)
      })
    }
  }
  await reply()
  return {
    async say(text: string) {
      socket.write(text, 'latin1')
      return reply()
    },
    reply,
    close: () => socket.destroy(),
  }
}

const rawCount = async () => (await h.root.db.q.select({ id: inboundRaw.id }).from(inboundRaw)).length

test('a relay attempt is refused for every outside recipient, with or without a source route or quoting tricks', async () => {
  const s = await session()
  expect(await s.say('EHLO attacker.test\r\n')).toMatch(/^250/)
  expect(await s.say('MAIL FROM:<a@attacker.test>\r\n')).toMatch(/^250/)
  for (const to of ['victim@gmail.com', '@inbox.test:victim@gmail.com', '"victim@gmail.com"@inbox.test', 'victim%gmail.com@mx.mailroom.test', 'victim@gmail.com@inbox.test']) {
    expect(await s.say(`RCPT TO:<${to}>\r\n`), to).toMatch(/^5\d\d/)
  }
  // With no accepted recipient there is no message to give.
  expect(await s.say('DATA\r\n')).toMatch(/^5\d\d/)
  s.close()
})

test('a command smuggled after a bare LF is judged on its own, and oversize lines and NUL bytes are refused without ending the listener', async () => {
  const before = await rawCount()
  const s = await session()
  expect(await s.say('EHLO attacker.test\r\n')).toMatch(/^250/)
  // smtp-server reads a bare LF as a line end too: the smuggled RCPT is a command of its own, judged as one (no relay).
  expect(await s.say('MAIL FROM:<a@attacker.test>\nRCPT TO:<victim@gmail.com>\r\n')).toMatch(/^250/)
  expect(await s.reply()).toMatch(/^550/)
  const long = await s.say(`MAIL FROM:<${'a'.repeat(100_000)}@attacker.test>\r\n`)
  // smtp-server answers 421 and hangs up on a line past its limit.
  expect(long).toMatch(/^(421|5\d\d)|^closed$/)
  s.close()
  const t = await session()
  expect(await t.say('EHLO attacker.test\r\n')).toMatch(/^250/)
  expect(await t.say('MAIL FROM:<a\u0000b@attacker.test>\r\n')).toMatch(/^5\d\d/)
  t.close()
  expect(await rawCount()).toBe(before)
})

test('broken MIME is stored as it came and listed; a compression bomb stays compressed', async () => {
  // 20 MB of zeros deflated to a few KB, as a zip bomb's entries are: sent as the attachment's bytes.
  const bomb = deflateRawSync(Buffer.alloc(20 * 1024 * 1024))
  expect(bomb.length).toBeLessThan(40 * 1024)
  const s = await session()
  expect(await s.say('EHLO sender.test\r\n')).toMatch(/^250/)
  expect(await s.say('MAIL FROM:<a@sender.test>\r\n')).toMatch(/^250/)
  expect(await s.say('RCPT TO:<abuse@inbox.test>\r\n')).toMatch(/^250/)
  expect(await s.say('DATA\r\n')).toMatch(/^354/)
  const body = [
    'From: a@sender.test',
    'To: abuse@inbox.test',
    'Subject: =?utf-8?B?broken-encoded-word',
    'Message-ID: <broken-mime@sender.test>',
    'Content-Type: multipart/mixed; boundary="never-closed"',
    '',
    '--never-closed',
    'Content-Type: text/plain; charset=no-such-charset',
    'Content-Transfer-Encoding: base64',
    '',
    '!!! not base64 at all !!!',
    '--never-closed',
    'Content-Type: application/zip; name="bomb.zip"',
    'Content-Disposition: attachment; filename="bomb.zip"',
    'Content-Transfer-Encoding: base64',
    '',
    ...(bomb.toString('base64').match(/.{1,76}/g) ?? []),
    '--never-closed',
    'Content-Type: text/html',
    '',
    '<p>unterminated',
  ].join('\r\n')
  expect(await s.say(`${body}\r\n.\r\n`)).toMatch(/^250/)
  expect(await s.say('QUIT\r\n')).toMatch(/^221/)
  s.close()

  const listed = await until(async () => (await h.call('GET', '/emails/receiving', { query: { to: 'abuse@inbox.test' } })).body.data[0])
  const one = await h.call('GET', `/emails/receiving/${listed.id}`)
  expect(one.status).toBe(200)
  expect(one.body.message_id).toBe('<broken-mime@sender.test>')
  const raw = await h.call('GET', `/emails/receiving/${listed.id}/raw`)
  expect(String(raw.body)).toContain('!!! not base64 at all !!!')
  const attachments = await h.root.db.q.select({ filename: inboundAttachments.filename, size: inboundAttachments.size }).from(inboundAttachments)
  const zip = attachments.find((a) => a.filename === 'bomb.zip')
  expect(zip).toBeDefined()
  // Kept as the bytes that came: what it would inflate to is never made.
  expect(zip!.size).toBe(bomb.length)
})

test('after all of it the listener still takes an ordinary message', async () => {
  const r = await trySend(smtp.port, { from: 'a@sender.test', to: 'fine@inbox.test', subject: 'still here', text: 'hello' })
  expect(r.ok).toBe(true)
  expect(smtp.status()).toMatchObject({ status: 'ok' })
})
