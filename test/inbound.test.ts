// The inbound SMTP listener over real SMTP (nodemailer as the client, and swaks):
// what is accepted is stored raw before the 250, parsed, authenticated and listed;
// everything else is refused at RCPT TO and leaves nothing behind.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { existsSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { buildApp } from '../src/app'
import { openRoot } from '../src/boot'
import { inboundEmails, inboundRaw } from '../src/db/tables'
import { processPending } from '../src/inbound/store'
import type { InboundListener } from '../src/inbound/server'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { expectError, harness, silentLog, type Harness } from './support/harness'
import { smtpClient, trySend, verifiedDomain } from './support/inbound'

let dns: TestDnsServer
let h: Harness
let smtp: InboundListener

beforeAll(async () => {
  dns = await startDnsServer()
  h = await harness({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_HOSTNAME: 'mx.mailroom.test', MAILROOM_SMTP_MAX_SIZE: String(200 * 1024) })
  await verifiedDomain(h, dns, 'inbox.test')
  smtp = await h.listen()
})
afterAll(async () => {
  await h.close()
  await dns.close()
})

const countRaw = async () => (await h.root.db.q.select({ id: inboundRaw.id }).from(inboundRaw)).length

test('a message with attachments arrives over STARTTLS, is listed, parsed, downloadable, and raw', async () => {
  const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex')
  const info = await smtpClient(smtp.port, { requireTLS: true }).sendMail({
    from: 'Ada Lovelace <ada@sender.test>',
    to: 'Support <support@inbox.test>',
    cc: 'audit@elsewhere.test',
    subject: 'Invoice question',
    text: 'Please see the attached invoice.',
    html: '<p>Please see the <b>attached</b> invoice.</p><img src="cid:logo@sender">',
    messageId: '<question-1@sender.test>',
    attachments: [
      { filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4 fake invoice'), contentType: 'application/pdf' },
      { filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@sender' },
    ],
  })
  expect(info.accepted).toEqual(['support@inbox.test'])
  expect(info.response).toMatch(/^250 /)

  const list = await h.call('GET', '/emails/receiving')
  expect(list.status).toBe(200)
  expect(list.body.data).toHaveLength(1)
  const item = list.body.data[0]
  expect(item).toMatchObject({ object: 'email', from: 'Ada Lovelace <ada@sender.test>', to: ['Support <support@inbox.test>'], subject: 'Invoice question', received_for: ['support@inbox.test'], message_id: '<question-1@sender.test>' })
  expect(item.html).toBeUndefined()
  expect(item.headers).toBeUndefined()

  const one = await h.call('GET', `/emails/receiving/${item.id}`)
  expect(one.status).toBe(200)
  expect(one.body.text.trim()).toBe('Please see the attached invoice.')
  expect(one.body.html).toContain('<b>attached</b>')
  expect(one.body.headers['Subject']).toBe('Invoice question')
  expect(one.body.headers['Received']).toContain('by mx.mailroom.test (Mailroom) with ESMTPS')
  expect(one.body.cc).toEqual(['audit@elsewhere.test'])
  expect(one.body.authentication).toMatchObject({ spf: { result: expect.any(String) }, dmarc: { result: expect.any(String) } })
  expect(one.body.raw.download_url).toBe(`http://mailroom.test/emails/receiving/${item.id}/raw`)
  expect(one.body.attachments.map((a: { filename: string; content_disposition: string }) => [a.filename, a.content_disposition]).sort()).toEqual([
    ['invoice.pdf', 'attachment'],
    ['logo.png', 'inline'],
  ])
  const inline = await h.call('GET', `/emails/receiving/${item.id}`, { query: { html_format: 'data_uri' } })
  expect(inline.body.html).toContain('data:image/png;base64,')

  const atts = await h.call('GET', `/emails/receiving/${item.id}/attachments`)
  expect(atts.body.data).toHaveLength(2)
  const pdf = atts.body.data.find((a: { filename: string }) => a.filename === 'invoice.pdf')
  expect(pdf).toMatchObject({ object: 'attachment', content_type: 'application/pdf', size: 21, content_id: null })
  const meta = await h.call('GET', `/emails/receiving/${item.id}/attachments/${pdf.id}`)
  expect(meta.body).toMatchObject({ id: pdf.id, filename: 'invoice.pdf' })
  const file = await h.app.handle(new Request(`http://localhost/emails/receiving/${item.id}/attachments/${pdf.id}?download=1`, { headers: { authorization: `Bearer ${h.token}` } }))
  expect(file.headers.get('content-type')).toBe('application/pdf')
  expect(await file.text()).toBe('%PDF-1.4 fake invoice')

  const raw = await h.app.handle(new Request(`http://localhost/emails/receiving/${item.id}/raw`, { headers: { authorization: `Bearer ${h.token}` } }))
  expect(raw.status).toBe(200)
  expect(raw.headers.get('content-type')).toBe('message/rfc822')
  const rawText = await raw.text()
  expect(rawText).toStartWith('Received: from client.sender.test')
  expect(rawText).toContain('Message-ID: <question-1@sender.test>')

  // The received event is on the record, under the inbound id.
  const events = await h.root.db.q.select().from((await import('../src/db/tables')).emailEvents)
  expect(events.some((e) => e.emailId === item.id && e.type === 'received')).toBe(true)
})

test('unknown domains, simulator addresses and unverified domains are refused at RCPT TO with 550; nothing is stored', async () => {
  const before = await countRaw()
  for (const to of ['someone@unknown.test', 'delivered@resend.dev', 'x@mx.mailroom.test']) {
    const r = await trySend(smtp.port, { from: 'a@sender.test', to, subject: 'hi', text: 'hi' })
    expect(r.ok).toBe(false)
    if (!r.ok) {
      expect(r.error.responseCode).toBe(550)
      expect(r.error.response).toMatch(/^550 5\.1\.1/)
    }
  }
  // A domain of the account that is not verified, or verified without receiving, is not ours to receive for.
  await h.call('POST', '/domains', { body: { name: 'pending.test', capabilities: { receiving: 'enabled' } } })
  await verifiedDomain(h, dns, 'sendonly.test', false)
  for (const to of ['a@pending.test', 'a@sendonly.test']) {
    const r = await trySend(smtp.port, { from: 'a@sender.test', to, subject: 'hi', text: 'hi' })
    expect(r.ok ? 250 : r.error.responseCode).toBe(550)
  }
  expect(await countRaw()).toBe(before)
  // Mixed: the known recipient is accepted, the other refused and never stored.
  const mixed = await trySend(smtp.port, { from: 'a@sender.test', to: ['ok@inbox.test', 'nope@unknown.test'], subject: 'mixed', text: 'hi' })
  expect(mixed.ok).toBe(true)
  if (mixed.ok) expect(mixed.info.rejected).toEqual(['nope@unknown.test'])
  const [row] = await h.root.db.q.select().from(inboundEmails).orderBy(inboundEmails.id)
  const list = await h.call('GET', '/emails/receiving', { query: { to: 'ok@inbox.test' } })
  expect(list.body.data.map((e: { received_for: string[] }) => e.received_for)).toEqual([['ok@inbox.test']])
  expect(row).toBeDefined()
})

test('an oversize message is refused (552) and nothing is stored', async () => {
  const before = await countRaw()
  const r = await trySend(smtp.port, { from: 'a@sender.test', to: 'big@inbox.test', subject: 'big', text: 'x'.repeat(300 * 1024) })
  expect(r.ok).toBe(false)
  if (!r.ok) expect(r.error.responseCode).toBe(552)
  expect(await countRaw()).toBe(before)
})

test('list filters: to, from (address or domain), and the date range; a stale cursor is refused', async () => {
  await smtpClient(smtp.port).sendMail({ from: 'bob@other.test', to: 'sales@inbox.test', subject: 'Quote', text: 'price?' })
  const byFrom = await h.call('GET', '/emails/receiving', { query: { from: 'other.test' } })
  expect(byFrom.body.data.map((e: { subject: string }) => e.subject)).toEqual(['Quote'])
  const byAddr = await h.call('GET', '/emails/receiving', { query: { from: 'bob@other.test', to: 'sales@inbox.test' } })
  expect(byAddr.body.data).toHaveLength(1)
  const none = await h.call('GET', '/emails/receiving', { query: { to: 'nobody@inbox.test' } })
  expect(none.body.data).toEqual([])
  const today = await h.call('GET', '/emails/receiving', { query: { since: '2026-03-02', until: '2026-03-02' } })
  expect(today.body.data.length).toBeGreaterThanOrEqual(3)
  const later = await h.call('GET', '/emails/receiving', { query: { since: '2026-03-03' } })
  expect(later.body.data).toEqual([])
  const paged = await h.call('GET', '/emails/receiving', { query: { limit: 1 } })
  expect(paged.body.has_more).toBe(true)
  const next = await h.call('GET', '/emails/receiving', { query: { limit: 1, cursor: paged.body.next_cursor } })
  expect(next.body.data[0].id).not.toBe(paged.body.data[0].id)
  expectError(await h.call('GET', '/emails/receiving', { query: { cursor: 'forged.cursor' } }), 'invalid_cursor', 400)
  expectError(await h.call('GET', '/emails/receiving', { query: { since: '2026-03-04', until: '2026-03-01' } }), 'invalid_parameter', 422)
})

test('swaks delivers a message with an attachment over STARTTLS', { timeout: 30_000 }, async () => {
  if (!existsSync('/usr/bin/swaks')) {
    console.warn('skipped: swaks is not installed at /usr/bin/swaks')
    return
  }
  // swaks speaks STARTTLS only with Perl's Net::SSLeay, which its Debian package merely recommends.
  const support = Bun.spawnSync(['/usr/bin/swaks', '--support'])
  const tls = `${support.stdout}${support.stderr}`.match(/^(?:===|\*\*\*) TLS .*$/m)?.[0] ?? 'TLS support unknown'
  if (!tls.startsWith('===')) {
    console.warn(`skipped: swaks cannot speak STARTTLS here (${tls}; apt-get install libnet-ssleay-perl libio-socket-ssl-perl)`)
    return
  }
  // Asynchronously: the listener runs in this process and must keep answering.
  const csv = join(h.dir, 'report.csv')
  writeFileSync(csv, 'a,b\n1,2\n')
  const p = Bun.spawn(['/usr/bin/swaks', '--server', '127.0.0.1', '--port', String(smtp.port), '--tls', '--from', 'ops@swaks.test', '--to', 'swaks@inbox.test', '--header', 'Subject: via swaks', '--body', 'hello from swaks', '--attach-type', 'text/csv', '--attach-name', 'report.csv', '--attach', `@${csv}`], { stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  expect(code, out + err).toBe(0)
  expect(out).toContain('250 2.0.0 Ok: queued as')
  const list = await h.call('GET', '/emails/receiving', { query: { to: 'swaks@inbox.test' } })
  expect(list.body.data).toHaveLength(1)
  expect(list.body.data[0]).toMatchObject({ subject: 'via swaks', attachments: [{ filename: 'report.csv', content_type: 'text/csv' }] })
})

test('per-address limits: connections beyond the limit answer 421; messages beyond the rate answer 451', async () => {
  const h2 = await harness({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_SMTP_MAX_CONNECTIONS: '1', MAILROOM_SMTP_RATE_LIMIT: '2' })
  try {
    await verifiedDomain(h2, dns, 'limits.test')
    const l = await h2.listen()
    // One connection held open (greeted, idle) from 127.0.0.1.
    const first = connect(l.port, '127.0.0.1')
    await new Promise<void>((resolve) => first.once('data', () => resolve()))
    const second = await trySend(l.port, { from: 'a@sender.test', to: 'x@limits.test', subject: 's', text: 't' })
    expect(second.ok).toBe(false)
    if (!second.ok) expect(String(second.error.responseCode ?? second.error.message)).toMatch(/421/)
    first.destroy()
    await Bun.sleep(100)
    const codes: (number | undefined)[] = []
    for (let i = 0; i < 3; i++) {
      const r = await trySend(l.port, { from: 'a@sender.test', to: 'x@limits.test', subject: `s${i}`, text: 't' })
      codes.push(r.ok ? 250 : r.error.responseCode)
    }
    expect(codes).toEqual([250, 250, 451])
  } finally {
    await h2.close()
  }
})

test('/status reports the listener with its port', async () => {
  const st = await h.call('GET', '/status')
  expect(st.body.checks.smtp_listener).toEqual({ status: 'ok', port: smtp.port })
})

// The fallback of `receive`: when the message's records cannot be written (here a
// trigger makes SQLite refuse every inbound email row), the raw message is still
// stored before the 250, left pending, and processed at the next start.
test('records that cannot be written: the message is still stored raw before its 250, and processed at the next start', async () => {
  await h.root.db.write((tx) => tx.run(sql.raw("CREATE TRIGGER refuse_inbound BEFORE INSERT ON inbound_emails BEGIN SELECT RAISE(ABORT, 'injected refusal'); END")))
  let info
  try {
    info = await smtpClient(smtp.port).sendMail({ from: 'd@sender.test', to: 'fallback@inbox.test', subject: 'Fallback', text: 'kept anyway', messageId: '<fallback@sender.test>' })
  } finally {
    await h.root.db.write((tx) => tx.run(sql.raw('DROP TRIGGER refuse_inbound')))
  }
  expect(info.response).toMatch(/^250 /)
  const rawId = info.response.match(/queued as (\S+)/)![1]
  const stateOf = async () => (await h.root.db.q.select({ state: inboundRaw.state }).from(inboundRaw).where(eq(inboundRaw.id, rawId)))[0]?.state
  expect(await stateOf()).toBe('pending')
  expect((await h.call('GET', '/emails/receiving', { query: { to: 'fallback@inbox.test' } })).body.data).toEqual([])

  expect(await processPending(h.root)).toBe(1)
  expect(await stateOf()).toBe('processed')
  const listed = (await h.call('GET', '/emails/receiving', { query: { to: 'fallback@inbox.test' } })).body.data
  expect(listed.map((e: { subject: string; message_id: string }) => [e.subject, e.message_id])).toEqual([['Fallback', '<fallback@sender.test>']])
})

test('the raw message survives a restart: close the database, open it again, read it back', async () => {
  const info = await smtpClient(smtp.port).sendMail({ from: 'c@sender.test', to: 'keep@inbox.test', subject: 'Durable', text: 'kept', messageId: '<durable@sender.test>' })
  expect(info.response).toMatch(/^250 /)
  const id = (await h.call('GET', '/emails/receiving', { query: { to: 'keep@inbox.test' } })).body.data[0].id
  h.root.db.close()
  const root2 = await openRoot(h.config, { clock: h.clock, log: silentLog })
  try {
    const app2 = buildApp(root2, h.runtime)
    const raw = await app2.handle(new Request(`http://localhost/emails/receiving/${id}/raw`, { headers: { authorization: `Bearer ${h.token}` } }))
    expect(raw.status).toBe(200)
    expect(await raw.text()).toContain('Message-ID: <durable@sender.test>')
  } finally {
    // The harness closes its own handle again at the end; point it at the reopened one.
    ;(h.root as { db: unknown }).db = root2.db
  }
})
