// Authentication of received mail (SPF through our TXT client) against a resolver on
// loopback: a missed answer is the result of that message only; lookups in flight
// at the same moment are shared, and nothing is kept after.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import dgram from 'node:dgram'
import { authenticateMessage } from '../src/inbound/auth'
import { readMessage } from '../src/inbound/read'
import { startDnsServer, type TestDnsServer } from './support/dns-server'

let dns: TestDnsServer
/** Between the checks and the test DNS server: drops every query while `dropping`, else relays it and its answer. */
let relay: dgram.Socket
let dropping = true

beforeAll(async () => {
  dns = await startDnsServer()
  dns.set('sender.test', 'TXT', ['v=spf1 ip4:127.0.0.1 -all'])
  relay = dgram.createSocket('udp4')
  relay.on('message', (query, client) => {
    if (dropping) return
    const upstream = dgram.createSocket('udp4')
    upstream.on('message', (answer) => {
      relay.send(answer, client.port, client.address)
      upstream.close()
    })
    upstream.send(query, dns.port, '127.0.0.1')
  })
  await new Promise<void>((resolve) => relay.bind(0, '127.0.0.1', resolve))
})
afterAll(async () => {
  relay.close()
  await dns.close()
})

const MESSAGE = Buffer.from('From: Grace <grace@sender.test>\r\nTo: help@inbox.test\r\nSubject: Hello\r\nMessage-ID: <m1@sender.test>\r\n\r\nHello there.\r\n')
const input = () => ({ ip: '127.0.0.1', helo: 'client.test', sender: 'grace@sender.test', mta: 'mx.mailroom.test', dnsServers: [`127.0.0.1:${relay.address().port}`] })

test('a resolver that missed one message\'s lookups still answers the next message\'s', { timeout: 20_000 }, async () => {
  dropping = true
  const missed = await authenticateMessage(MESSAGE, input())
  expect(missed.spf?.result).toBe('temperror')
  dropping = false
  const next = await authenticateMessage(MESSAGE, input())
  expect(next.spf).toEqual({ result: 'pass', domain: 'sender.test' })
})

test('messages checked at the same moment share one lookup of a name; a later message asks again', async () => {
  dropping = false
  const asked = () => dns.queries.filter((q) => q === 'sender.test TXT').length
  const before = asked()
  const together = await Promise.all([authenticateMessage(MESSAGE, input()), authenticateMessage(MESSAGE, input()), authenticateMessage(MESSAGE, input())])
  for (const a of together) expect(a.spf).toEqual({ result: 'pass', domain: 'sender.test' })
  expect(asked() - before).toBe(1)
  dns.set('sender.test', 'TXT', ['v=spf1 -all'])
  const later = await authenticateMessage(MESSAGE, input())
  expect(later.spf?.result).toBe('fail')
  expect(asked() - before).toBe(2)
  dns.set('sender.test', 'TXT', ['v=spf1 ip4:127.0.0.1 -all'])
})

test('a message read on the reading thread: parsed, authenticated, attachments as Buffers', async () => {
  dropping = false
  const withAttachment = Buffer.from(
    [
      'From: Grace <grace@sender.test>',
      'To: help@inbox.test',
      'Subject: Report',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain',
      '',
      'See attached.',
      '--b1',
      'Content-Type: text/csv; name="r.csv"',
      'Content-Disposition: attachment; filename="r.csv"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('a,b\n1,2\n').toString('base64'),
      '--b1--',
      '',
    ].join('\r\n'),
  )
  const { parsed, auth } = await readMessage({ raw: withAttachment, auth: input() })
  expect(parsed.subject).toBe('Report')
  expect(parsed.text?.trim()).toBe('See attached.')
  expect(parsed.attachments).toHaveLength(1)
  expect(Buffer.isBuffer(parsed.attachments[0].content)).toBe(true)
  expect(parsed.attachments[0].content.toString()).toBe('a,b\n1,2\n')
  expect(auth.spf).toEqual({ result: 'pass', domain: 'sender.test' })
})
