// Bounces (RFC 3464 DSNs) and complaints (RFC 5965 ARF) arriving over SMTP at a
// return-path host, in the forms large mailbox providers send them.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { deliveries, inboundEmails, inboundRaw } from '../src/db/tables'
import { classifyStatus, parseReport } from '../src/inbound/bounces'
import type { InboundListener } from '../src/inbound/server'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { harness, type Harness } from './support/harness'
import { smtpClient, verifiedDomain } from './support/inbound'

let dns: TestDnsServer
let h: Harness
let smtp: InboundListener

beforeAll(async () => {
  dns = await startDnsServer()
  h = await harness({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_HOSTNAME: 'mx.mailroom.test', MAILROOM_DELIVERY: 'capture' })
  await verifiedDomain(h, dns, 'shop.test', false)
  smtp = await h.listen()
})
afterAll(async () => {
  await h.close()
  await dns.close()
})

/** Sends and delivers (capture mode) one email; answers its id, Message-ID and delivery id. */
async function delivered(to: string) {
  const sent = await h.call('POST', '/emails', { body: { from: 'Shop <orders@shop.test>', to, subject: 'Your order', text: 'Thanks' } })
  expect(sent.status, JSON.stringify(sent.body)).toBe(200)
  await h.worker.runOnce()
  const [d] = await h.root.db.q.select().from(deliveries).where(eq(deliveries.emailId, sent.body.id))
  expect(d.state).toBe('delivered')
  return { id: sent.body.id as string, messageId: `<${sent.body.id}@mx.mailroom.test>`, deliveryId: d.id }
}

const CRLF = (s: string) => s.replace(/\r?\n/g, '\r\n')

/** Gmail's hard bounce: 550 5.1.1, the original returned as message/rfc822. */
const gmailNoSuchUser = (rcpt: string, messageId: string, verp: string) =>
  CRLF(`Delivered-To: ${verp}
Return-Path: <>
From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>
To: ${verp}
Subject: Delivery Status Notification (Failure)
Message-ID: <6512a1c4.b0c0220a.1234.abcd.GMR@mx.google.com>
Date: Mon, 02 Mar 2026 13:00:00 -0800 (PST)
MIME-Version: 1.0
Content-Type: multipart/report; boundary="000000000000a1b2c3"; report-type=delivery-status

--000000000000a1b2c3
Content-Type: multipart/related; boundary="000000000000d4e5f6"

--000000000000d4e5f6
Content-Type: text/plain; charset="UTF-8"

** Address not found **

Your message wasn't delivered to ${rcpt} because the address couldn't be found, or is unable to receive mail.

--000000000000d4e5f6--

--000000000000a1b2c3
Content-Type: message/delivery-status

Reporting-MTA: dns; googlemail.com
Received-From-MTA: dns; mx.mailroom.test
Arrival-Date: Mon, 02 Mar 2026 13:00:00 -0800 (PST)
X-Original-Message-ID: ${messageId}

Final-Recipient: rfc822; ${rcpt}
Action: failed
Status: 5.1.1
Remote-MTA: dns; gmail-smtp-in.l.google.com. (142.250.27.26, the server for the domain gmail.com.)
Diagnostic-Code: smtp; 550-5.1.1 The email account that you tried to reach does not exist. Please try
 550-5.1.1 double-checking the recipient's email address for typos or
 550 5.1.1 unnecessary spaces. https://support.google.com/mail/?p=NoSuchUser a1si123 - gsmtp
Last-Attempt-Date: Mon, 02 Mar 2026 13:00:01 -0800 (PST)

--000000000000a1b2c3
Content-Type: message/rfc822

From: Shop <orders@shop.test>
To: ${rcpt}
Subject: Your order
Message-ID: ${messageId}
Date: Mon, 02 Mar 2026 10:00:00 +0000

Thanks

--000000000000a1b2c3--
`)

/** A mailbox-full DSN (452 4.2.2) after the sending MTA gave up; only the headers of the original. */
const mailboxFull = (rcpt: string, messageId: string, to: string) =>
  CRLF(`From: MAILER-DAEMON@mta7.am0.yahoodns.net
To: ${to}
Subject: Failure Notice
Date: Mon, 02 Mar 2026 15:00:00 +0000
Message-ID: <dsn-4-2-2@mta7.am0.yahoodns.net>
MIME-Version: 1.0
Content-Type: multipart/report; report-type="delivery-status";
\tboundary="----=_dsn_boundary_422"

------=_dsn_boundary_422
Content-Type: text/plain; charset=us-ascii

Sorry, we were unable to deliver your message to the following address.

<${rcpt}>:
452 4.2.2 Over quota

------=_dsn_boundary_422
Content-Type: message/delivery-status

Reporting-MTA: dns; mta7.am0.yahoodns.net
Arrival-Date: Mon, 02 Mar 2026 10:00:00 +0000

Original-Recipient: rfc822;${rcpt}
Final-Recipient: rfc822;${rcpt}
Action: failed
Status: 4.2.2
Diagnostic-Code: smtp; 452 4.2.2 The email account that you tried to reach is over quota

------=_dsn_boundary_422
Content-Type: text/rfc822-headers

From: Shop <orders@shop.test>
To: ${rcpt}
Subject: Your order
Message-ID: ${messageId}

------=_dsn_boundary_422--
`)

/** An ARF abuse report as Yahoo's and Microsoft's feedback loops send it (RFC 5965 §2; original base64-free). */
const arfAbuse = (rcpt: string, messageId: string, to: string, agent: string) =>
  CRLF(`From: ${agent.includes('Yahoo') ? 'feedbackloop@yahoo.com' : 'staff@hotmail.com'}
To: ${to}
Subject: FW: Your order
Date: Mon, 02 Mar 2026 18:00:00 +0000
Message-ID: <arf-${Math.random().toString(36).slice(2)}@fbl.example>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="arf_boundary_1"

--arf_boundary_1
Content-Type: text/plain; charset="US-ASCII"
Content-Transfer-Encoding: 7bit

This is an email abuse report for an email message received from IP 127.0.0.1 on Mon, 02 Mar 2026 10:00:00 +0000.
For more information about this format please see http://www.mipassoc.org/arf/.

--arf_boundary_1
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: ${agent}
Version: 1
Original-Mail-From: <bounces@send.shop.test>
Original-Rcpt-To: <${rcpt}>
Arrival-Date: Mon, 02 Mar 2026 10:00:00 +0000
Reported-Domain: shop.test
Source-IP: 127.0.0.1

--arf_boundary_1
Content-Type: message/rfc822
Content-Disposition: inline

From: Shop <orders@shop.test>
To: ${rcpt}
Subject: Your order
Message-ID: ${messageId}

Thanks
--arf_boundary_1--
`)

async function sendRaw(envelopeTo: string, raw: string, from = '') {
  const info = await smtpClient(smtp.port).sendMail({ envelope: { from, to: [envelopeTo] }, raw } as never)
  expect(info.response).toMatch(/^250 /)
}

const events = async (id: string) => (await h.call('GET', `/emails/${id}/events`)).body.data as { type: string; recipient: string; data: any }[]

test('a Gmail 550 5.1.1 DSN to the VERP address, hours after delivered: Permanent bounce, suppression, delivery bounced', async () => {
  const e = await delivered('ghost@gmail-user.test')
  h.clock.advance(3 * 3_600_000)
  await sendRaw(`bounces+${e.deliveryId}@send.shop.test`, gmailNoSuchUser('ghost@gmail-user.test', e.messageId, `bounces+${e.deliveryId}@send.shop.test`))
  const bounced = (await events(e.id)).filter((x) => x.type === 'bounced')
  expect(bounced).toHaveLength(1)
  expect(bounced[0].recipient).toBe('ghost@gmail-user.test')
  expect(bounced[0].data.bounce).toMatchObject({ type: 'Permanent', subType: 'NoEmail', diagnosticCode: [expect.stringContaining('550-5.1.1 The email account that you tried to reach does not exist')] })
  expect((await h.call('GET', `/emails/${e.id}`)).body.last_event).toBe('bounced')
  const [d] = await h.root.db.q.select().from(deliveries).where(eq(deliveries.id, e.deliveryId))
  expect(d.state).toBe('bounced')
  const s = await h.call('GET', '/suppressions/ghost@gmail-user.test')
  expect(s.body).toMatchObject({ reason: 'bounce', source_email_id: e.id })
  // The same DSN again changes nothing; it never becomes an inbound email.
  await sendRaw(`bounces+${e.deliveryId}@send.shop.test`, gmailNoSuchUser('ghost@gmail-user.test', e.messageId, `bounces+${e.deliveryId}@send.shop.test`))
  expect((await events(e.id)).filter((x) => x.type === 'bounced')).toHaveLength(1)
  expect(await h.root.db.q.select().from(inboundEmails)).toEqual([])
})

test('a 452 4.2.2 mailbox-full DSN matched by the original Message-ID: Transient bounce, no suppression', async () => {
  const e = await delivered('full@yahoo-user.test')
  await sendRaw('postmaster@send.shop.test', mailboxFull('full@yahoo-user.test', e.messageId, 'postmaster@send.shop.test'))
  const bounced = (await events(e.id)).filter((x) => x.type === 'bounced')
  expect(bounced).toHaveLength(1)
  expect(bounced[0].data.bounce).toMatchObject({ type: 'Transient', subType: 'MailboxFull', diagnosticCode: ['smtp; 452 4.2.2 The email account that you tried to reach is over quota'] })
  expect((await h.call('GET', '/suppressions/full@yahoo-user.test')).status).toBe(404)
})

test('ARF abuse reports (Yahoo, Microsoft JMRP style): complained event and a complaint suppression', async () => {
  for (const [rcpt, agent] of [
    ['angry@yahoo-user.test', 'Yahoo!-Mail-Feedback/2.0'],
    ['upset@outlook-user.test', 'Microsoft Junk Mail Reporting Program'],
  ]) {
    const e = await delivered(rcpt)
    await sendRaw('fbl@send.shop.test', arfAbuse(rcpt, e.messageId, 'fbl@send.shop.test', agent))
    const complained = (await events(e.id)).filter((x) => x.type === 'complained')
    expect(complained).toHaveLength(1)
    expect(complained[0].data.complaint).toMatchObject({ feedbackType: 'abuse', userAgent: agent })
    expect((await h.call('GET', `/suppressions/${rcpt}`)).body).toMatchObject({ reason: 'complaint', source_email_id: e.id })
    const [d] = await h.root.db.q.select().from(deliveries).where(eq(deliveries.id, e.deliveryId))
    expect(d.state).toBe('delivered')
  }
})

test('a message to a return-path host that is no report (an auto-reply) is kept raw as unmatched, nothing else', async () => {
  const before = (await h.root.db.q.select().from(inboundRaw)).length
  await sendRaw('bounces@send.shop.test', CRLF('From: a@b.test\nTo: bounces@send.shop.test\nSubject: Out of office\n\nI am away.\n'), 'a@b.test')
  const rows = await h.root.db.q.select().from(inboundRaw)
  expect(rows).toHaveLength(before + 1)
  expect(rows.at(-1)).toMatchObject({ kind: 'report', state: 'unmatched' })
  expect(await h.root.db.q.select().from(inboundEmails)).toEqual([])
})

test('status classes: 5.x.x Permanent, 4.x.x Transient, anything else Undetermined', () => {
  expect(classifyStatus('5.1.1', null)).toEqual({ type: 'Permanent', subType: 'NoEmail', suppress: true })
  expect(classifyStatus('5.7.1', 'blocked')).toMatchObject({ type: 'Permanent', subType: 'ContentRejected', suppress: false })
  expect(classifyStatus('4.4.7', null)).toMatchObject({ type: 'Transient', suppress: false })
  expect(classifyStatus(null, null)).toMatchObject({ type: 'Undetermined' })
  expect(parseReport(Buffer.from('Subject: hi\r\n\r\nplain'))).toBeNull()
  const r = parseReport(Buffer.from(gmailNoSuchUser('x@y.test', '<m@h>', 'bounces@z')))!
  expect(r).toMatchObject({ kind: 'dsn', originalMessageId: 'm@h', recipients: [{ finalRecipient: 'x@y.test', action: 'failed', status: '5.1.1' }] })
})

test('mail to the List-Unsubscribe mailto records the no, as the one-click POST does', async () => {
  const topic = (await h.call('POST', '/topics', { body: { name: 'Deals', default_subscription: 'opt_out' } })).body.id
  const sent = await h.call('POST', '/emails', { body: { from: 'Shop <deals@shop.test>', to: 'fan@customer.test', subject: 'Deals', text: 'Cheap', topic_id: topic } })
  expect(sent.status, JSON.stringify(sent.body)).toBe(200)
  await h.worker.runOnce()
  const { composeMessage } = await import('../src/delivery/mime')
  const { emails, domains } = await import('../src/db/tables')
  const [email] = await h.root.db.q.select().from(emails).where(eq(emails.id, sent.body.id))
  const [domain] = await h.root.db.q.select().from(domains).where(eq(domains.id, email.domainId!))
  const raw = (await composeMessage({ email, attachments: [], domain, config: h.config, recipient: 'fan@customer.test', secret: h.root.secret })).toString()
  const mailto = raw.match(/<mailto:([^?>]+)\?subject=([^>]+)>/)!
  expect(mailto[1]).toBe('unsubscribe@send.shop.test')
  await smtpClient(smtp.port).sendMail({ envelope: { from: 'fan@customer.test', to: [mailto[1]] }, raw: `From: fan@customer.test\r\nTo: ${mailto[1]}\r\nSubject: ${decodeURIComponent(mailto[2])}\r\n\r\nunsubscribe\r\n` })
  const answers = (await h.call('GET', '/contacts/fan@customer.test/topics')).body.data as { id: string; subscribed: boolean; is_default: boolean }[]
  expect(answers.find((a) => a.id === topic)).toMatchObject({ subscribed: false, is_default: false })
  const events = (await h.call('GET', `/emails/${sent.body.id}/events`)).body.data as { type: string }[]
  expect(events.map((e) => e.type)).toContain('unsubscribed')
})
