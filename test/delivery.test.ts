// The outbound MTA against a real SMTP server on loopback (an in-process
// smtp-server sink) and a real DNS server: what arrives parses, is DKIM-signed
// with a signature mailauth verifies, and arrives exactly once; retries, bounces,
// suppressions, outages, leases, priorities, simulator addresses and schedules.
import { afterEach, describe, expect, test } from 'bun:test'
import { and, asc, eq } from 'drizzle-orm'
import { simpleParser } from 'mailparser'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deliveries, deliveryAttempts, emailEvents, emails, suppressions } from '../src/db/tables'
import type { RootDeps } from '../src/deps'
import { composeMessage } from '../src/delivery/mime'
import { readUnsubscribeToken } from '../src/delivery/unsubscribe'
import { DeliveryWorker, type DeliveryWorkerOptions } from '../src/delivery/worker'
import type { SendJob, SendResult, Transport } from '../src/delivery/transport'
import { HOUR, iso, systemClock } from '../src/lib/clock'
import { uuidV7 } from '../src/lib/ids'
import { insertDomain, insertEmail, testDkimKey, type NewEmail } from './support/delivery-fixtures'
import { startDnsServer, type TestDnsServer } from './support/dns-server'
import { harness, type Harness } from './support/harness'
import { startSmtpSink, type SinkOptions, type SmtpSink } from './support/smtp-sink'

const HOST = 'mta.mailroom.test'
const cleanups: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

interface Setup {
  h: Harness
  sink: SmtpSink
  dns?: TestDnsServer
  domain: Awaited<ReturnType<typeof insertDomain>>
  worker(opts?: DeliveryWorkerOptions, root?: RootDeps): DeliveryWorker
  send(e: Partial<NewEmail>): ReturnType<typeof insertEmail>
}

/** A harness delivering through a relay (the sink), or to MX hosts found through a test DNS server (the sink behind them). */
async function setup(mode: 'relay' | 'mx' | 'capture' = 'relay', sinkOpts: SinkOptions = {}, env: Record<string, string> = {}): Promise<Setup> {
  const sink = await startSmtpSink(mode === 'relay' ? { auth: { user: 'mailroom', pass: 's3cret' }, ...sinkOpts } : sinkOpts)
  cleanups.push(() => sink.close())
  let dns: TestDnsServer | undefined
  const e: Record<string, string> = { MAILROOM_DELIVERY: mode, MAILROOM_HOSTNAME: HOST, ...(mode === 'relay' ? { MAILROOM_RELAY_URL: sink.url() } : {}), ...env }
  if (mode === 'mx') {
    dns = await startDnsServer()
    cleanups.push(() => dns!.close())
    e.MAILROOM_DNS_SERVERS = dns.address
    e.MAILROOM_MX_PORT = String(sink.port)
  }
  const h = await harness(e)
  cleanups.push(() => h.close())
  const domain = await insertDomain(h.root, h.accountId)
  return {
    h,
    sink,
    dns,
    domain,
    worker(opts = {}, root = h.root) {
      const w = new DeliveryWorker(root, { transportOptions: { mxCacheMs: 0, connectionTimeoutMs: 3000, greetingTimeoutMs: 3000, socketTimeoutMs: 5000 }, ...opts })
      cleanups.push(() => w.stop())
      return w
    },
    send(x) {
      return insertEmail(h.root, { accountId: h.accountId, domain, to: ['someone@example.net'], ...x })
    },
  }
}

/** Verifies DKIM with mailauth, answering the key lookup from the domain row. */
async function verifyDkim(raw: Buffer, domainName = 'acme.test', selector = 'mailroom') {
  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === `${selector}._domainkey.${domainName}`) return [[`v=DKIM1; k=rsa; p=${testDkimKey().publicKey}`]]
    throw Object.assign(new Error(`no ${type} for ${name}`), { code: 'ENOTFOUND' })
  }
  const r = await dkimVerify(raw, { resolver: resolver as never })
  return r.results.map((x: { status: { result: string }; signingDomain?: string }) => ({ result: x.status.result, domain: x.signingDomain }))
}

/** A header field of a raw message, unfolded. */
function rawHeader(raw: Buffer, name: string) {
  const head = raw.toString('latin1').split('\r\n\r\n')[0]
  const field = head.split(/\r\n(?![ \t])/).find((l) => l.toLowerCase().startsWith(name.toLowerCase() + ':'))
  return field?.slice(name.length + 1).replace(/\r\n[ \t]+/g, ' ').trim()
}

async function rowsOf(h: Harness, emailId: string) {
  return h.root.db.q.select().from(deliveries).where(eq(deliveries.emailId, emailId)).orderBy(asc(deliveries.recipient))
}
async function eventsOf(h: Harness, emailId: string, recipient?: string) {
  const rows = await h.root.db.q.select().from(emailEvents).where(eq(emailEvents.emailId, emailId)).orderBy(asc(emailEvents.id))
  return rows.filter((r) => !recipient || r.recipient === recipient || r.recipient === null)
}
async function attemptsOf(h: Harness, deliveryId: string) {
  return h.root.db.q.select().from(deliveryAttempts).where(eq(deliveryAttempts.deliveryId, deliveryId)).orderBy(asc(deliveryAttempts.id))
}
async function lastEvent(h: Harness, emailId: string) {
  return (await h.root.db.q.select({ e: emails.lastEvent }).from(emails).where(eq(emails.id, emailId)))[0].e
}

describe('relay mode', () => {
  test('delivers To, Cc and Bcc copies once each through an authenticated relay: parsed, DKIM pass, return-path on the bounce host, every attempt on record', async () => {
    const s = await setup('relay')
    const { email, deliveryIds } = await s.send({ to: ['Ann <Ann@Example.net>'], cc: ['bob@example.org'], bcc: ['carol@example.com'], replyTo: ['support@acme.test'], inReplyTo: '<prev@acme.test>', references: '<prev@acme.test>', headers: { 'X-Entity-Ref-ID': 'ref-1' } })
    const w = s.worker()
    expect(await w.runOnce()).toBe(3)
    expect(s.sink.messages).toHaveLength(3)
    const byRcpt = new Map(s.sink.messages.map((m) => [m.to[0], m]))
    expect([...byRcpt.keys()].sort()).toEqual(['ann@example.net', 'bob@example.org', 'carol@example.com'])
    const rows = await rowsOf(s.h, email.id)
    for (const m of s.sink.messages) {
      expect(m.user).toBe('mailroom')
      expect(m.secure).toBe(true) // STARTTLS, offered by the relay
      expect(m.helo).toBe(HOST)
      const row = rows.find((r) => r.recipient === m.to[0])!
      expect(m.from).toBe(`bounces+${row.id}@send.acme.test`)
      expect(await verifyDkim(m.raw)).toEqual([{ result: 'pass', domain: 'acme.test' }])
      const p = await simpleParser(m.raw)
      expect(p.subject).toBe('Your sign-in link')
      expect(p.from?.value).toEqual([{ name: 'Acme', address: 'hello@acme.test' }])
      expect(p.messageId).toBe(`<${email.messageId}>`)
      expect(p.date?.toISOString()).toBe('2026-03-02T10:00:00.000Z')
      expect(p.inReplyTo).toBe('<prev@acme.test>')
      expect(p.headers.get('x-entity-ref-id')).toBe('ref-1')
      expect((p.replyTo as { text: string }).text).toBe('support@acme.test')
      expect((p.to as { value: unknown }).value).toEqual([{ name: 'Ann', address: 'Ann@example.net' }])
      expect((p.cc as { text: string }).text).toBe('bob@example.org')
      expect(m.raw.toString()).not.toMatch(/^bcc:/im)
      expect(p.text?.trim()).toBe('Hello there')
      expect(p.html).toContain('<b>there</b>')
      expect(p.headers.has('list-unsubscribe')).toBe(false)
    }
    for (const r of rows) {
      expect(r).toMatchObject({ state: 'delivered', attempts: 1, leaseOwner: null, leaseUntil: null, lastCode: 250 })
      expect(r.lastResponse).toMatch(/^250 .*queued as sink-/)
      const att = await attemptsOf(s.h, r.id)
      expect(att).toHaveLength(1)
      expect(att[0]).toMatchObject({ outcome: 'delivered', smtpCode: 250, host: `127.0.0.1:${s.sink.port}` })
      expect((await eventsOf(s.h, email.id, r.recipient)).map((e) => e.type)).toEqual(['queued', 'sent', 'delivered'])
    }
    expect(deliveryIds).toHaveLength(3)
    expect(await lastEvent(s.h, email.id)).toBe('delivered')
  })

  test('reuses pooled connections: 30 messages over at most the configured number of connections', async () => {
    const s = await setup('relay', {}, { MAILROOM_DELIVERY_CONCURRENCY: '4' })
    for (let i = 0; i < 30; i++) await s.send({ to: [`user${i}@example.net`] })
    expect(await s.worker().runOnce()).toBe(30)
    expect(s.sink.messages).toHaveLength(30)
    expect(new Set(s.sink.messages.map((m) => m.to[0])).size).toBe(30)
    expect(s.sink.connections).toBeLessThanOrEqual(4)
  })

  test('a 4xx defers with delivery_delayed, honours "retry in N seconds", then delivers exactly once', async () => {
    const s = await setup('relay')
    s.sink.failNext(1, '451 4.7.1 Greylisted, please retry in 120 seconds')
    const { email } = await s.send({})
    const w = s.worker()
    expect(await w.runOnce()).toBe(1)
    let [row] = await rowsOf(s.h, email.id)
    expect(row).toMatchObject({ state: 'deferred', attempts: 1, lastCode: 451, nextAttemptAt: '2026-03-02T10:02:00.000Z', leaseOwner: null })
    expect(row.lastResponse).toContain('Greylisted')
    expect((await eventsOf(s.h, email.id)).map((e) => e.type)).toEqual(['queued', 'sent', 'delivery_delayed'])
    s.h.clock.advance(119_000)
    expect(await w.runOnce()).toBe(0)
    s.h.clock.advance(1_000)
    expect(await w.runOnce()).toBe(1)
    ;[row] = await rowsOf(s.h, email.id)
    expect(row).toMatchObject({ state: 'delivered', attempts: 2 })
    expect(s.sink.messages).toHaveLength(1)
    const att = await attemptsOf(s.h, row.id)
    expect(att.map((a) => [a.outcome, a.smtpCode, a.enhancedCode])).toEqual([['deferred', 451, '4.7.1'], ['delivered', 250, null]])
    expect(att[0].response).toContain('retry in 120 seconds')
    expect((await eventsOf(s.h, email.id)).map((e) => e.type)).toEqual(['queued', 'sent', 'delivery_delayed', 'delivered'])
  })

  test('a 4xx at the end of DATA is a deferral too, and the retry is one delivery', async () => {
    const s = await setup('relay')
    s.sink.failNext(1, '452 4.3.1 Insufficient system storage', 'data')
    const { email } = await s.send({})
    const w = s.worker()
    await w.runOnce()
    expect((await rowsOf(s.h, email.id))[0]).toMatchObject({ state: 'deferred', lastCode: 452 })
    s.h.clock.advance(60_000)
    await w.runOnce()
    expect((await rowsOf(s.h, email.id))[0]).toMatchObject({ state: 'delivered', attempts: 2 })
    expect(s.sink.messages).toHaveLength(1)
  })

  test('a 5xx bounces at once (Permanent, with the diagnostic code) and suppresses the address; the next send to it is suppressed without an attempt', async () => {
    const s = await setup('relay')
    s.sink.failAddress('nobody@example.net', '550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown')
    const { email } = await s.send({ to: ['nobody@example.net'] })
    const w = s.worker()
    await w.runOnce()
    const [row] = await rowsOf(s.h, email.id)
    expect(row).toMatchObject({ state: 'bounced', attempts: 1, lastCode: 550 })
    const events = await eventsOf(s.h, email.id)
    expect(events.map((e) => e.type)).toEqual(['queued', 'sent', 'bounced'])
    expect(events[2].data).toEqual({
      bounce: {
        type: 'Permanent',
        subType: 'NoEmail',
        message: expect.stringContaining('User unknown'),
        diagnosticCode: ['smtp; 550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown'],
      },
    })
    expect(await lastEvent(s.h, email.id)).toBe('bounced')
    const sup = await s.h.root.db.q.select().from(suppressions).where(eq(suppressions.accountId, s.h.accountId))
    expect(sup).toHaveLength(1)
    expect(sup[0]).toMatchObject({ email: 'nobody@example.net', reason: 'bounce', sourceEmailId: email.id })
    expect(sup[0].detail).toContain('User unknown')
    expect((await attemptsOf(s.h, row.id))[0]).toMatchObject({ outcome: 'bounced', smtpCode: 550, enhancedCode: '5.1.1' })

    const again = await s.send({ to: ['Nobody@Example.net'] })
    s.h.clock.advance(1000)
    await w.runOnce()
    const [row2] = await rowsOf(s.h, again.email.id)
    expect(row2).toMatchObject({ state: 'suppressed', attempts: 0 })
    expect(await attemptsOf(s.h, row2.id)).toHaveLength(0)
    expect((await eventsOf(s.h, again.email.id)).map((e) => e.type)).toEqual(['queued', 'suppressed'])
    expect(s.sink.rejected).toBe(1)
    expect(s.sink.messages).toHaveLength(0)
  })

  test('a policy 5xx bounces the message but does not suppress the address', async () => {
    const s = await setup('relay')
    s.sink.failNext(1, '554 5.7.1 Message rejected as spam', 'data')
    const { email } = await s.send({})
    await s.worker().runOnce()
    const ev = (await eventsOf(s.h, email.id)).at(-1)!
    expect(ev.type).toBe('bounced')
    expect(ev.data).toMatchObject({ bounce: { type: 'Permanent', subType: 'ContentRejected' } })
    expect(await s.h.root.db.q.select().from(suppressions)).toHaveLength(0)
  })

  test('relay down: the queue pauses (circuit breaker) without spending attempts, and delivers once when the relay is back', async () => {
    const s = await setup('relay')
    const sent = await Promise.all([0, 1, 2].map((i) => s.send({ to: [`r${i}@example.net`] })))
    await s.sink.stop()
    const w = s.worker()
    expect(await w.runOnce()).toBe(3)
    expect(w.breaker.isOpen(s.h.clock.now())).toBe(true)
    for (const { email } of sent) {
      const [row] = await rowsOf(s.h, email.id)
      expect(row).toMatchObject({ state: 'queued', attempts: 0, leaseOwner: null })
      expect((await eventsOf(s.h, email.id)).map((e) => e.type)).toEqual(['queued'])
    }
    // What was tried is on record, as a network error.
    const atts = await s.h.root.db.q.select().from(deliveryAttempts)
    expect(atts.length).toBeGreaterThanOrEqual(1)
    expect(atts.every((a) => a.outcome === 'network_error')).toBe(true)
    expect(atts[0].response).toMatch(/ECONNREFUSED|ECONNECTION|connect/i)
    // Paused: nothing is claimed while the breaker is open.
    expect(await w.runOnce()).toBe(0)
    await s.sink.restart()
    s.h.clock.advance(5_000)
    expect(await w.runOnce()).toBe(3)
    expect(s.sink.messages).toHaveLength(3)
    for (const { email } of sent) {
      expect((await rowsOf(s.h, email.id))[0]).toMatchObject({ state: 'delivered', attempts: 1 })
      expect((await eventsOf(s.h, email.id)).map((e) => e.type)).toEqual(['queued', 'sent', 'delivered'])
    }
  })

  test('wrong relay credentials pause the queue too, instead of bouncing everyone', async () => {
    const sink = await startSmtpSink({ auth: { user: 'mailroom', pass: 'right' } })
    cleanups.push(() => sink.close())
    const s = await setup('relay', {}, { MAILROOM_RELAY_URL: `smtp://mailroom:wrong@127.0.0.1:${sink.port}?tls.rejectUnauthorized=false` })
    const { email } = await s.send({})
    const w = s.worker()
    await w.runOnce()
    expect((await rowsOf(s.h, email.id))[0]).toMatchObject({ state: 'queued', attempts: 0 })
    expect(w.breaker.isOpen(s.h.clock.now())).toBe(true)
    const [att] = await s.h.root.db.q.select().from(deliveryAttempts)
    expect(att).toMatchObject({ outcome: 'network_error' })
    expect(att.response).toContain('535')
  })

  test('smtps relay (TLS from the first byte)', async () => {
    const s = await setup('relay', { secure: true })
    await s.send({})
    await s.worker().runOnce()
    expect(s.sink.messages).toHaveLength(1)
    expect(s.sink.messages[0].secure).toBe(true)
  })

  test('4xx all the way: retries on the schedule for at least 48 hours, then bounces (Transient) without suppressing', async () => {
    const s = await setup('relay')
    s.sink.failNext(1_000, '451 4.3.0 Temporary local problem')
    const { email } = await s.send({})
    const w = s.worker()
    const start = s.h.clock.now()
    let row = (await rowsOf(s.h, email.id))[0]
    const gaps: number[] = []
    for (let i = 0; i < 40 && row.state !== 'bounced'; i++) {
      const before = s.h.clock.now()
      s.h.clock.set(Date.parse(row.nextAttemptAt))
      if (i > 0) gaps.push(s.h.clock.now() - before)
      await w.runOnce()
      row = (await rowsOf(s.h, email.id))[0]
    }
    const elapsed = s.h.clock.now() - start
    expect(row.state).toBe('bounced')
    expect(elapsed).toBeGreaterThanOrEqual(48 * HOUR)
    expect(elapsed).toBeLessThan(60 * HOUR)
    expect(gaps.slice(0, 4)).toEqual([60_000, 300_000, 900_000, 1_800_000])
    expect(row.attempts).toBe(12)
    expect(await attemptsOf(s.h, row.id)).toHaveLength(12)
    const events = await eventsOf(s.h, email.id)
    expect(events.map((e) => e.type)).toEqual(['queued', 'sent', 'delivery_delayed', 'bounced'])
    expect(events[3].data).toMatchObject({ bounce: { type: 'Transient', subType: 'General', diagnosticCode: ['smtp; 451 4.3.0 Temporary local problem'] } })
    expect(await s.h.root.db.q.select().from(suppressions)).toHaveLength(0)
    expect(s.sink.messages).toHaveLength(0)
  })
})

describe('message', () => {
  test('List-Unsubscribe (URL and mailto on the bounce host, one-click) when a topic applies; inline images with Content-ID; attachments; all under a passing DKIM signature', async () => {
    const s = await setup('relay')
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')
    const { email } = await s.send({
      to: ['reader@example.net'],
      topicId: '0190aaaa-0000-7000-8000-000000000001',
      priority: 'bulk',
      html: '<p>News <img src="cid:logo@acme"></p>',
      attachments: [
        { filename: 'logo.png', contentType: 'image/png', contentId: 'logo@acme', disposition: 'inline', content: png },
        { filename: 'report.csv', contentType: 'text/csv', contentId: null, disposition: 'attachment', content: Buffer.from('a,b\n1,2\n') },
      ],
    })
    await s.worker().runOnce()
    const [m] = s.sink.messages
    expect(await verifyDkim(m.raw)).toEqual([{ result: 'pass', domain: 'acme.test' }])
    const p = await simpleParser(m.raw)
    const lu = rawHeader(m.raw, 'List-Unsubscribe')!
    const token = lu.match(/unsubscribe\/([A-Za-z0-9_.-]+)>/)![1]
    expect(lu).toBe(`<http://mailroom.test/unsubscribe/${token}>, <mailto:unsubscribe@send.acme.test?subject=unsubscribe%3A${token}>`)
    expect(readUnsubscribeToken(s.h.root.secret, token)).toEqual({ emailId: email.id, recipient: 'reader@example.net' })
    expect(readUnsubscribeToken('another secret', token)).toBeNull()
    expect(rawHeader(m.raw, 'List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click')
    expect(m.raw.toString()).toMatch(/^DKIM-Signature:[\s\S]*h=[^;]*list-unsubscribe:list-unsubscribe-post/im)
    const logo = p.attachments.find((a) => a.filename === 'logo.png')!
    expect(logo).toMatchObject({ contentType: 'image/png', cid: 'logo@acme', contentDisposition: 'inline' })
    expect(logo.content.equals(png)).toBe(true)
    const csv = p.attachments.find((a) => a.filename === 'report.csv')!
    expect(csv.contentDisposition).toBe('attachment')
    expect(csv.content.toString()).toBe('a,b\n1,2\n')
  })

  test('composeMessage builds what is sent, for the eml view: no Bcc, signed when a domain is given, unsigned without', async () => {
    const s = await setup('capture')
    const { email } = await s.send({ to: ['a@example.net'], bcc: ['secret@example.net'] })
    const signed = await composeMessage({ email, attachments: [], domain: s.domain, config: s.h.config })
    expect(await verifyDkim(signed)).toEqual([{ result: 'pass', domain: 'acme.test' }])
    expect(signed.toString()).not.toContain('secret@example.net')
    const plain = await composeMessage({ email: { ...email, domainId: null }, attachments: [], domain: null, config: s.h.config })
    expect(plain.toString()).not.toContain('DKIM-Signature')
    expect(plain.toString()).toContain(`Message-ID: <${email.messageId}>`)
  })

  test('a domain whose key cannot be read fails the email (our error: failed, no attempt counted)', async () => {
    const s = await setup('relay')
    const bad = await insertDomain(s.h.root, s.h.accountId, 'broken.test', { dkimPrivateKey: '-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n' })
    const { email } = await insertEmail(s.h.root, { accountId: s.h.accountId, domain: bad, to: ['x@example.net'] })
    await s.worker().runOnce()
    const [row] = await rowsOf(s.h, email.id)
    expect(row).toMatchObject({ state: 'failed', attempts: 0 })
    const ev = (await eventsOf(s.h, email.id)).map((e) => [e.type, e.data])
    expect(ev.at(-1)![0]).toBe('failed')
    expect(JSON.stringify(ev.at(-1)![1])).toContain('DKIM private key')
    expect((await attemptsOf(s.h, row.id))[0]).toMatchObject({ outcome: 'failed' })
    expect(s.sink.messages).toHaveLength(0)
  })
})

describe('mx mode', () => {
  test('looks up MX through the DNS server, skips a dead MX for the next, uses STARTTLS when offered, DKIM passes', async () => {
    const s = await setup('mx')
    s.dns!.set('example.org', 'MX', [{ exchange: 'mx2.example.org', priority: 20 }, { exchange: 'mx1.example.org', priority: 10 }])
    // mx1 answers nothing (127.0.0.2 has no listener: connection refused); mx2 is the sink.
    s.dns!.set('mx1.example.org', 'A', ['127.0.0.2'])
    s.dns!.set('mx2.example.org', 'A', ['127.0.0.1'])
    const { email } = await s.send({ to: ['pat@example.org'] })
    await s.worker().runOnce()
    expect(s.sink.messages).toHaveLength(1)
    const m = s.sink.messages[0]
    expect(m.secure).toBe(true)
    expect(m.to).toEqual(['pat@example.org'])
    expect(m.helo).toBe(HOST)
    expect(await verifyDkim(m.raw)).toEqual([{ result: 'pass', domain: 'acme.test' }])
    const [row] = await rowsOf(s.h, email.id)
    expect(row).toMatchObject({ state: 'delivered', attempts: 1 })
    expect((await attemptsOf(s.h, row.id))[0].host).toBe(`mx2.example.org[127.0.0.1]:${s.sink.port}`)
    expect(s.dns!.queries).toContain('example.org MX')
  })

  test('falls back to the A record when the domain has no MX; plain SMTP when STARTTLS is not offered', async () => {
    const s = await setup('mx', { starttls: false })
    s.dns!.set('direct.example', 'A', ['127.0.0.1'])
    const { email } = await s.send({ to: ['ops@direct.example'] })
    await s.worker().runOnce()
    expect(s.sink.messages).toHaveLength(1)
    expect(s.sink.messages[0].secure).toBe(false)
    expect((await rowsOf(s.h, email.id))[0].state).toBe('delivered')
  })

  test('a domain with no mail server at all, or a null MX, bounces at once', async () => {
    const s = await setup('mx')
    s.dns!.set('nullmx.example', 'MX', [{ exchange: '.', priority: 0 }])
    const a = await s.send({ to: ['x@nowhere.example'] })
    const b = await s.send({ to: ['y@nullmx.example'] })
    await s.worker().runOnce()
    const ra = (await rowsOf(s.h, a.email.id))[0]
    const rb = (await rowsOf(s.h, b.email.id))[0]
    expect(ra).toMatchObject({ state: 'bounced', lastCode: 550 })
    expect(ra.lastResponse).toContain('5.1.2')
    expect(rb).toMatchObject({ state: 'bounced', lastCode: 556 })
    expect((await eventsOf(s.h, a.email.id)).at(-1)!.data).toMatchObject({ bounce: { type: 'Permanent' } })
  })

  test('a destination that is down is retried on the schedule (it is not our outage) and delivered once it is back', async () => {
    const s = await setup('mx')
    s.dns!.set('example.org', 'MX', [{ exchange: 'mx.example.org', priority: 10 }])
    s.dns!.set('mx.example.org', 'A', ['127.0.0.1'])
    await s.sink.stop()
    const { email } = await s.send({ to: ['pat@example.org'] })
    const w = s.worker()
    await w.runOnce()
    let [row] = await rowsOf(s.h, email.id)
    expect(row).toMatchObject({ state: 'deferred', attempts: 1 })
    expect((await attemptsOf(s.h, row.id))[0].outcome).toBe('network_error')
    expect((await eventsOf(s.h, email.id)).map((e) => e.type)).toEqual(['queued', 'sent', 'delivery_delayed'])
    await s.sink.restart()
    s.h.clock.advance(60_000)
    await w.runOnce()
    ;[row] = await rowsOf(s.h, email.id)
    expect(row).toMatchObject({ state: 'delivered', attempts: 2 })
    expect(s.sink.messages).toHaveLength(1)
  })

  test('connections failing to many different MX hosts in a row mean our network is down: the queue pauses without spending attempts', async () => {
    const s = await setup('mx')
    const sent = []
    for (let i = 0; i < 8; i++) {
      s.dns!.set(`d${i}.example`, 'MX', [{ exchange: `mx.d${i}.example`, priority: 10 }])
      s.dns!.set(`mx.d${i}.example`, 'A', ['127.0.0.2'])
      sent.push(await s.send({ to: [`x@d${i}.example`] }))
    }
    const w = s.worker({ concurrency: 1 })
    await w.runOnce()
    const rows = await s.h.root.db.q.select().from(deliveries).orderBy(asc(deliveries.recipientDomain))
    // Four destinations down could be theirs (deferred, counted); the fifth in a row trips the breaker.
    expect(rows.map((r) => [r.state, r.attempts])).toEqual([
      ['deferred', 1], ['deferred', 1], ['deferred', 1], ['deferred', 1],
      ['queued', 0], ['queued', 0], ['queued', 0], ['queued', 0],
    ])
    expect(w.breaker.isOpen(s.h.clock.now())).toBe(true)
    // Back up: the paused rows go as soon as the breaker closes.
    for (let i = 0; i < 8; i++) s.dns!.set(`mx.d${i}.example`, 'A', ['127.0.0.1'])
    s.h.clock.advance(5_000)
    expect(await w.runOnce()).toBe(4)
    expect(s.sink.messages).toHaveLength(4)
  })

  test('domains.tls = enforced refuses to deliver in plaintext', async () => {
    const s = await setup('mx', { starttls: false })
    const strict = await insertDomain(s.h.root, s.h.accountId, 'strict.test', { tls: 'enforced' })
    s.dns!.set('example.org', 'A', ['127.0.0.1'])
    const { email } = await insertEmail(s.h.root, { accountId: s.h.accountId, domain: strict, to: ['pat@example.org'] })
    await s.worker().runOnce()
    expect(s.sink.messages).toHaveLength(0)
    expect((await rowsOf(s.h, email.id))[0]).toMatchObject({ state: 'deferred', attempts: 1 })
  })
})

describe('queue', () => {
  test('two instances (processes) on one database never deliver a row twice', async () => {
    const s = await setup('relay')
    for (let i = 0; i < 120; i++) await s.send({ to: [`u${i}@example.net`] })
    const env = { PATH: process.env.PATH ?? '', TMPDIR: tmpdir(), MAILROOM_DATA_DIR: s.h.dir, MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: s.sink.url(), MAILROOM_HOSTNAME: HOST }
    const run = () => Bun.spawn([process.execPath, join(import.meta.dir, 'support/delivery-child.ts'), String(s.h.clock.now()), '7'], { env, stdout: 'pipe', stderr: 'pipe' })
    const children = [run(), run()]
    const outs = await Promise.all(children.map(async (c) => ({ code: await c.exited, out: await new Response(c.stdout).text(), err: await new Response(c.stderr).text() })))
    for (const o of outs) expect(o.code, o.err).toBe(0)
    const claimed = outs.map((o) => JSON.parse(o.out.trim().split('\n').at(-1)!).claimed as number)
    expect(claimed[0] + claimed[1]).toBe(120)
    expect(s.sink.messages).toHaveLength(120)
    expect(new Set(s.sink.messages.map((m) => m.to[0])).size).toBe(120)
    const rows = await s.h.root.db.q.select().from(deliveries)
    expect(rows.every((r) => r.state === 'delivered' && r.attempts === 1)).toBe(true)
    expect((await s.h.root.db.q.select().from(deliveryAttempts)).length).toBe(120)
  }, 30_000) // two processes each load the whole app before claiming: seconds on a busy machine

  test('two workers in one process share the queue without taking a row twice', async () => {
    const s = await setup('relay')
    for (let i = 0; i < 40; i++) await s.send({ to: [`w${i}@example.net`] })
    const a = s.worker({ batchSize: 3, concurrency: 2 })
    const b = s.worker({ batchSize: 4, concurrency: 2 })
    const [na, nb] = await Promise.all([a.runOnce(), b.runOnce()])
    expect(na + nb).toBe(40)
    expect(na).toBeGreaterThan(0)
    expect(nb).toBeGreaterThan(0)
    expect(s.sink.messages).toHaveLength(40)
    expect(new Set(s.sink.messages.map((m) => m.to[0])).size).toBe(40)
  })

  test('a restart resumes: rows leased by a worker that died are taken once the lease expires', async () => {
    const s = await setup('relay')
    const { email } = await s.send({})
    const until = iso(s.h.clock.now() + 5 * 60_000)
    await s.h.root.db.write((tx) => tx.update(deliveries).set({ leaseOwner: 'dead-worker', leaseUntil: until }).where(eq(deliveries.emailId, email.id)))
    const w = s.worker()
    expect(await w.runOnce()).toBe(0)
    s.h.clock.advance(5 * 60_000 + 1)
    expect(await w.runOnce()).toBe(1)
    expect(s.sink.messages).toHaveLength(1)
    expect((await rowsOf(s.h, email.id))[0]).toMatchObject({ state: 'delivered', leaseOwner: null })
  })

  test('stop() finishes what is in the transport’s hands and hands back every other lease', async () => {
    const s = await setup('relay')
    for (let i = 0; i < 5; i++) await s.send({ to: [`s${i}@example.net`] })
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let started!: () => void
    const first = new Promise<void>((r) => (started = r))
    const sent: string[] = []
    const transport: Transport = {
      mode: 'relay',
      breakerThreshold: 1,
      async send(job: SendJob): Promise<SendResult> {
        sent.push(job.to)
        started()
        await gate
        return { kind: 'delivered', code: 250, enhanced: null, response: '250 ok', host: 'stub' }
      },
      async close() {},
    }
    const w = new DeliveryWorker(s.h.root, { transport, concurrency: 1, pollMs: 10 })
    w.start()
    await first
    const stopping = w.stop()
    release()
    await stopping
    expect(sent).toHaveLength(1)
    const rows = await s.h.root.db.q.select().from(deliveries).orderBy(asc(deliveries.createdAt))
    expect(rows.filter((r) => r.state === 'delivered').map((r) => r.recipient)).toEqual(sent)
    const rest = rows.filter((r) => r.state !== 'delivered')
    expect(rest).toHaveLength(4)
    expect(rest.every((r) => r.state === 'queued' && r.leaseOwner === null && r.leaseUntil === null && r.attempts === 0)).toBe(true)
    // Another worker takes them at once.
    expect(await s.worker().runOnce()).toBe(4)
  })

  test('leases are renewed while a message is in the transport’s hands, so a slow send is not taken by another worker', async () => {
    const s = await setup('relay')
    const { email } = await s.send({})
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let started!: () => void
    const inTransport = new Promise<void>((r) => (started = r))
    const transport: Transport = {
      mode: 'relay',
      breakerThreshold: 1,
      async send(): Promise<SendResult> {
        started()
        await gate
        return { kind: 'delivered', code: 250, enhanced: null, response: '250 ok', host: 'stub' }
      },
      async close() {},
    }
    const w = new DeliveryWorker(s.h.root, { transport, leaseMs: 3000, pollMs: 10 })
    cleanups.push(() => w.stop())
    w.start()
    await inTransport
    const [before] = await rowsOf(s.h, email.id)
    expect(before.leaseUntil).toBe(iso(s.h.clock.now() + 3000))
    s.h.clock.advance(10_000)
    await Bun.sleep(1100) // the heartbeat runs every max(1 s, lease / 3)
    const [during] = await rowsOf(s.h, email.id)
    expect(during.leaseUntil).toBe(iso(s.h.clock.now() + 3000))
    expect(await s.worker().runOnce()).toBe(0)
    release()
    await w.stop()
    expect((await rowsOf(s.h, email.id))[0]).toMatchObject({ state: 'delivered', leaseOwner: null })
  })

  test('transactional mail is never stuck behind bulk mail', async () => {
    const s = await setup('relay')
    for (let i = 0; i < 6; i++) await s.send({ to: [`bulk${i}@example.net`], priority: 'bulk' })
    s.h.clock.advance(1000)
    for (let i = 0; i < 3; i++) await s.send({ to: [`tx${i}@example.net`] })
    await s.worker({ concurrency: 1, batchSize: 2 }).runOnce()
    expect(s.sink.messages.map((m) => m.to[0].replace(/\d.*/, ''))).toEqual(['tx', 'tx', 'tx', 'bulk', 'bulk', 'bulk', 'bulk', 'bulk', 'bulk'])
  })

  test('scheduled rows wait for their time (injected clock)', async () => {
    const s = await setup('relay')
    const at = iso(s.h.clock.now() + HOUR)
    const { email } = await s.send({ scheduledAt: at })
    const w = s.worker()
    expect(await w.runOnce()).toBe(0)
    s.h.clock.advance(HOUR - 1)
    expect(await w.runOnce()).toBe(0)
    s.h.clock.advance(1)
    expect(await w.runOnce()).toBe(1)
    expect(s.sink.messages).toHaveLength(1)
    expect((await eventsOf(s.h, email.id)).map((e) => e.type)).toEqual(['scheduled', 'sent', 'delivered'])
    // The Date header is the scheduled time.
    expect((await simpleParser(s.sink.messages[0].raw)).date?.toISOString()).toBe(at)
  })

  test('a send wakes an idle worker: claimed at once, not at the next poll (nor for a scheduled one)', async () => {
    const s = await setup('relay')
    const w = s.worker({ pollMs: 60_000 })
    w.start()
    await Bun.sleep(100) // its first pass found nothing: it naps for a minute
    const later = await s.h.call('POST', '/emails', { body: { from: 'hello@acme.test', to: 'later@example.net', subject: 'Later', text: 'x', scheduled_at: 'in 1 hour' } })
    expect(later.status).toBe(200)
    const now = await s.h.call('POST', '/emails', { body: { from: 'hello@acme.test', to: 'now@example.net', subject: 'Now', text: 'x' } })
    expect(now.status).toBe(200)
    await s.sink.waitFor(1, 5000)
    expect(s.sink.messages.map((m) => m.to[0])).toEqual(['now@example.net'])
    await w.stop()
    expect((await rowsOf(s.h, now.body.id))[0].state).toBe('delivered')
    expect((await rowsOf(s.h, later.body.id))[0].state).toBe('scheduled')
  })

  test('a scheduled send fires within one second of its time (real clock, start())', async () => {
    const s = await setup('relay')
    const root: RootDeps = { ...s.h.root, clock: systemClock, ids: uuidV7(systemClock) }
    const when = Date.now() + 1500
    await insertEmail(root, { accountId: s.h.accountId, domain: s.domain, to: ['later@example.net'], scheduledAt: iso(when) })
    const w = new DeliveryWorker(root)
    cleanups.push(() => w.stop())
    w.start()
    let arrived = 0
    await s.sink.waitFor(1, 5000).then(() => (arrived = Date.now()))
    expect(arrived).toBeGreaterThanOrEqual(when)
    expect(arrived - when).toBeLessThan(1000)
    await w.stop()
  })
})

describe('capture mode', () => {
  test('stores the composed, signed message on the attempt and marks it delivered; nothing leaves', async () => {
    const s = await setup('capture')
    const { email } = await s.send({})
    await s.worker().runOnce()
    const [row] = await rowsOf(s.h, email.id)
    expect(row).toMatchObject({ state: 'delivered', attempts: 1, lastCode: 250 })
    const [att] = await attemptsOf(s.h, row.id)
    expect(att.outcome).toBe('captured')
    expect(await verifyDkim(Buffer.from(att.response!))).toEqual([{ result: 'pass', domain: 'acme.test' }])
    expect((await eventsOf(s.h, email.id)).map((e) => e.type)).toEqual(['queued', 'sent', 'delivered'])
    expect(s.sink.messages).toHaveLength(0)
  })
})

describe('simulator', () => {
  test('plays the real event sequence for each address, never touches the network, never suppresses', async () => {
    const s = await setup('relay')
    const to = ['delivered@simulator.test', 'bounced+signup@simulator.test', 'complained@simulator.test', 'suppressed@simulator.test', 'delayed+x@simulator.test', 'delivered@resend.dev', 'bounced@resend.dev']
    const { email } = await insertEmail(s.h.root, { accountId: s.h.accountId, domain: null, to })
    const w = s.worker()
    expect(await w.runOnce()).toBe(7)
    const seq = async () => {
      const ev = await eventsOf(s.h, email.id)
      const out: Record<string, string[]> = {}
      for (const e of ev) if (e.recipient) (out[e.recipient] ??= []).push(e.type)
      return out
    }
    expect(await seq()).toEqual({
      'delivered@simulator.test': ['sent', 'delivered'],
      'bounced+signup@simulator.test': ['sent', 'bounced'],
      'complained@simulator.test': ['sent', 'delivered', 'complained'],
      'suppressed@simulator.test': ['suppressed'],
      'delayed+x@simulator.test': ['sent', 'delivery_delayed'],
      'delivered@resend.dev': ['sent', 'delivered'],
      'bounced@resend.dev': ['sent', 'bounced'],
    })
    const bounced = (await eventsOf(s.h, email.id)).find((e) => e.type === 'bounced')!
    expect(bounced.data).toMatchObject({ bounce: { type: 'Permanent', diagnosticCode: [expect.stringContaining('550 5.1.1')] } })
    s.h.clock.advance(59_000)
    expect(await w.runOnce()).toBe(0)
    s.h.clock.advance(1_000)
    expect(await w.runOnce()).toBe(1)
    expect((await seq())['delayed+x@simulator.test']).toEqual(['sent', 'delivery_delayed', 'delivered'])
    const rows = await rowsOf(s.h, email.id)
    expect(Object.fromEntries(rows.map((r) => [r.recipient, r.state]))).toMatchObject({ 'suppressed@simulator.test': 'suppressed', 'bounced@resend.dev': 'bounced', 'delayed+x@simulator.test': 'delivered' })
    expect(await s.h.root.db.q.select().from(suppressions)).toHaveLength(0)
    expect(s.sink.connections).toBe(0)
    // Still usable: a second send to the bounce address plays again.
    const again = await insertEmail(s.h.root, { accountId: s.h.accountId, domain: null, to: ['bounced+signup@simulator.test'] })
    await w.runOnce()
    expect((await eventsOf(s.h, again.email.id)).map((e) => e.type)).toEqual(['queued', 'sent', 'bounced'])
    const simAttempts = await s.h.root.db.q.select().from(deliveryAttempts).where(and(eq(deliveryAttempts.emailId, email.id), eq(deliveryAttempts.outcome, 'simulated')))
    expect(simAttempts).toHaveLength(7)
  })
})
