// Click and open tracking: links rewritten to signed redirect addresses, the open
// pixel, and what the redirect and pixel record. Emails are inserted directly (open
// tracking is refused on API sends but exists for broadcasts) and composed by the
// MTA's own composer, so the links followed are the ones a recipient would get.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { simpleParser } from 'mailparser'
import { emails } from '../src/db/tables'
import { composeMessage, personalCopy } from '../src/delivery/mime'
import type { DomainRow, EmailRow } from '../src/delivery/types'
import { clickToken, decodeAttribute, openToken, readClickToken, readOpenToken, trackHtml, trackingBase } from '../src/tracking/links'
import { insertDomain, insertEmail } from './support/delivery-fixtures'
import { harness, type Harness } from './support/harness'

const SECRET = 'test-secret'

describe('links', () => {
  const o = { base: 'https://links.acme.test', secret: SECRET, emailId: 'e1', recipient: 'Ada@Customer.test', click: true, open: false }

  test('web links become signed click addresses carrying the exact original URL; other links stay as written', () => {
    const html = `<p><a href="https://shop.test/a?x=1&amp;y=2#top">A</a> <a class="b" href='http://shop.test/b'>B</a> <A HREF=https://shop.test/c>C</A>
<a href="mailto:help@acme.test">mail</a> <a href="#anchor">in</a> <a href="/relative">rel</a> <a href="tel:+1">tel</a> <a href="javascript:x">x</a></p>`
    const out = trackHtml(html, o)
    const hrefs = [...out.matchAll(/href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/gi)].map((m) => m[1] ?? m[2] ?? m[3])
    expect(hrefs.slice(3)).toEqual(['mailto:help@acme.test', '#anchor', '/relative', 'tel:+1', 'javascript:x'])
    const targets = hrefs.slice(0, 3).map((h) => {
      expect(h.startsWith('https://links.acme.test/t/c/')).toBe(true)
      return readClickToken(SECRET, h.slice('https://links.acme.test/t/c/'.length))
    })
    expect(targets).toEqual([
      { emailId: 'e1', recipient: 'ada@customer.test', url: 'https://shop.test/a?x=1&y=2#top' },
      { emailId: 'e1', recipient: 'ada@customer.test', url: 'http://shop.test/b' },
      { emailId: 'e1', recipient: 'ada@customer.test', url: 'https://shop.test/c' },
    ])
    // Everything else is left byte for byte.
    expect(out.replace(/"https:\/\/links\.acme\.test\/t\/c\/[^"]+"/g, 'X')).toBe(
      html.replace(`"https://shop.test/a?x=1&amp;y=2#top"`, 'X').replace(`'http://shop.test/b'`, 'X').replace('https://shop.test/c', 'X'),
    )
  })

  test('the pixel goes before </body>, or at the end without one; nothing changes with tracking off', () => {
    const withBody = trackHtml('<html><body><p>Hi</p></body></html>', { ...o, click: false, open: true })
    expect(withBody).toMatch(/<p>Hi<\/p><img src="https:\/\/links\.acme\.test\/t\/o\/[^"]+" width="1" height="1" alt=""[^>]*><\/body><\/html>$/)
    const bare = trackHtml('<p>Hi</p>', { ...o, click: false, open: true })
    expect(bare.startsWith('<p>Hi</p><img ')).toBe(true)
    const token = bare.match(/\/t\/o\/([^"]+)"/)![1]
    expect(readOpenToken(SECRET, token)).toEqual({ emailId: 'e1', recipient: 'ada@customer.test' })
    expect(trackHtml('<a href="https://x.test">x</a>', { ...o, click: false, open: false })).toBe('<a href="https://x.test">x</a>')
  })

  test('a token altered anywhere, or signed with another secret, reads as nothing', () => {
    const token = clickToken(SECRET, 'e1', 'ada@customer.test', 'https://shop.test/')
    expect(readClickToken(SECRET, token)).not.toBeNull()
    const [e, r, u, mac] = token.split('.')
    const evil = Buffer.from('https://evil.test/').toString('base64url')
    const other = Buffer.from('bob@customer.test').toString('base64url')
    for (const bad of [`${e}.${r}.${evil}.${mac}`, `${e}.${other}.${u}.${mac}`, `${e}.${r}.${u}.${mac.slice(0, -1)}A`, `${e}.${r}.${u}`, `${token}.x`, '', '...', 'a.b.c.d']) {
      expect(readClickToken(SECRET, bad)).toBeNull()
    }
    expect(readClickToken('another-secret', token)).toBeNull()
    // An open token is no click token and the other way round.
    expect(readClickToken(SECRET, openToken(SECRET, 'e1', 'ada@customer.test'))).toBeNull()
    expect(readOpenToken(SECRET, token)).toBeNull()
    // A genuine token never leads anywhere but the web.
    expect(readClickToken(SECRET, clickToken(SECRET, 'e1', 'a@b.test', 'javascript:alert(1)'))).toBeNull()
  })

  test('attribute values are read as a browser reads them', () => {
    expect(decodeAttribute('a&amp;b&#38;c&#x26;d&quot;&unknown;')).toBe('a&b&c&d"&unknown;')
  })

  test('the tracking host is used only once its CNAME verified', () => {
    const records = [{ record: 'Tracking' as const, name: 'links.acme.test', type: 'CNAME' as const, value: 'mx', ttl: 'Auto', status: 'verified' as const, required: false }]
    expect(trackingBase({ name: 'acme.test', trackingSubdomain: 'links', records })).toBe('https://links.acme.test')
    expect(trackingBase({ name: 'acme.test', trackingSubdomain: 'links', records: [{ ...records[0], status: 'pending' }] })).toBeNull()
    expect(trackingBase({ name: 'acme.test', trackingSubdomain: null, records })).toBeNull()
    expect(trackingBase(null)).toBeNull()
  })
})

describe('the redirect and the pixel', () => {
  let h: Harness
  let domain: DomainRow
  let email: EmailRow

  const verifiedTracking = (name: string) => ({
    trackingSubdomain: 'links',
    clickTracking: true,
    records: [{ record: 'Tracking' as const, name: `links.${name}`, type: 'CNAME' as const, value: 'mx.mailroom.test', ttl: 'Auto', status: 'verified' as const, required: false }],
  })

  /** The HTML part of the copy a recipient gets. */
  async function htmlFor(e: EmailRow, d: DomainRow | null, recipient: string) {
    const raw = await composeMessage({ email: e, attachments: [], domain: d, config: h.config, recipient, secret: h.root.secret })
    return (await simpleParser(raw)).html as string
  }
  const linksIn = (html: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1])
  const get = (url: string, init: RequestInit = {}) => h.app.handle(new Request(url, init))
  const events = async (id: string) => (await h.call('GET', `/emails/${id}/events`)).body.data as { type: string; recipient: string; data: any }[]

  beforeAll(async () => {
    h = await harness()
    domain = await insertDomain(h.root, h.accountId, 'acme.test', verifiedTracking('acme.test'))
    const made = await insertEmail(h.root, {
      accountId: h.accountId,
      domain,
      to: ['ada@customer.test', 'Bob <bob@customer.test>'],
      html: '<html><body><p>See <a href="https://shop.test/deal?id=7&amp;ref=mail">the deal</a> or <a href="mailto:help@acme.test">write</a>.</p></body></html>',
    })
    await h.root.db.write((tx) => tx.update(emails).set({ clickTracking: true, openTracking: true }).where(eq(emails.id, made.email.id)))
    email = { ...made.email, clickTracking: true, openTracking: true }
  })
  afterAll(() => h.close())

  test('each recipient gets links and a pixel of their own; mailto stays', async () => {
    expect(personalCopy(email, domain)).toBe(true)
    const ada = linksIn(await htmlFor(email, domain, 'ada@customer.test'))
    const bob = linksIn(await htmlFor(email, domain, 'bob@customer.test'))
    expect(ada[0]).toMatch(/^https:\/\/links\.acme\.test\/t\/c\//)
    expect(ada[1]).toBe('mailto:help@acme.test')
    expect(bob[0]).not.toBe(ada[0])
    expect(await htmlFor(email, domain, 'ada@customer.test')).toMatch(/<img src="https:\/\/links\.acme\.test\/t\/o\//)
    // The text part is sent as written.
    const raw = await composeMessage({ email, attachments: [], domain, config: h.config, recipient: 'ada@customer.test', secret: h.root.secret })
    expect((await simpleParser(raw)).text?.trim()).toBe('Hello there')
  })

  test('a click redirects only to the original address and counts once per recipient and link', async () => {
    const ada = linksIn(await htmlFor(email, domain, 'ada@customer.test'))[0]
    const bob = linksIn(await htmlFor(email, domain, 'bob@customer.test'))[0]
    const first = await get(ada, { headers: { 'user-agent': 'Mail/1.0' } })
    expect(first.status).toBe(302)
    expect(first.headers.get('location')).toBe('https://shop.test/deal?id=7&ref=mail')
    expect(first.headers.get('cache-control')).toContain('no-store')
    // A URL in the query string is never followed.
    const again = await get(`${ada}?url=https://evil.test/&redirect=https://evil.test/`)
    expect(again.status).toBe(302)
    expect(again.headers.get('location')).toBe('https://shop.test/deal?id=7&ref=mail')
    // The same path on this server's base URL works as well as on the tracking host.
    expect((await get(ada.replace('https://links.acme.test', 'http://mailroom.test'))).headers.get('location')).toBe('https://shop.test/deal?id=7&ref=mail')
    await get(bob)

    const clicks = (await events(email.id)).filter((e) => e.type === 'clicked')
    expect(clicks).toHaveLength(4)
    expect(clicks.map((c) => [c.recipient, c.data.unique])).toEqual([
      ['ada@customer.test', true],
      ['ada@customer.test', false],
      ['ada@customer.test', false],
      ['bob@customer.test', true],
    ])
    expect(clicks[0].data.click).toEqual({ link: 'https://shop.test/deal?id=7&ref=mail', timestamp: '2026-03-02T10:00:00.000Z', userAgent: 'Mail/1.0', ipAddress: expect.any(String) })
    expect((await h.call('GET', `/emails/${email.id}`)).body.last_event).toBe('clicked')
  })

  test('a tampered or unknown click address answers a plain page: no redirect, no event, nothing internal', async () => {
    const ada = linksIn(await htmlFor(email, domain, 'ada@customer.test'))[0]
    const token = ada.split('/t/c/')[1]
    const [e, r, , mac] = token.split('.')
    const evil = `${e}.${r}.${Buffer.from('https://evil.test/').toString('base64url')}.${mac}`
    const before = (await events(email.id)).length
    for (const bad of [evil, `${token.slice(0, -2)}xx`, 'nonsense', `${token}.more`]) {
      const res = await get(`http://mailroom.test/t/c/${bad}`)
      expect(res.status).toBe(404)
      expect(res.headers.get('location')).toBeNull()
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
      const body = await res.text()
      expect(body).toContain('This link is not valid')
      expect(body).not.toMatch(/error|stack|sql|mailroom/i)
    }
    expect((await events(email.id)).length).toBe(before)
  })

  test('HEAD (link scanners) answers and records nothing', async () => {
    const ada = linksIn(await htmlFor(email, domain, 'ada@customer.test'))[0]
    const pixel = (await htmlFor(email, domain, 'ada@customer.test')).match(/<img src="([^"]+)"/)![1]
    const before = (await events(email.id)).length
    const head = await get(ada, { method: 'HEAD' })
    expect(head.status).toBe(302)
    expect(head.headers.get('location')).toBe('https://shop.test/deal?id=7&ref=mail')
    expect((await get(pixel, { method: 'HEAD' })).status).toBe(200)
    expect((await get('http://mailroom.test/t/c/nonsense', { method: 'HEAD' })).status).toBe(404)
    expect((await events(email.id)).length).toBe(before)
  })

  test('the pixel is an uncached 1×1 GIF; the first open per recipient is the unique one', async () => {
    const pixel = (await htmlFor(email, domain, 'ada@customer.test')).match(/<img src="([^"]+)"/)![1]
    for (let i = 0; i < 2; i++) {
      const res = await get(pixel, { headers: { 'user-agent': 'Proxy/2' } })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('image/gif')
      expect(res.headers.get('cache-control')).toContain('no-store')
      const bytes = Buffer.from(await res.arrayBuffer())
      expect(bytes.subarray(0, 6).toString()).toBe('GIF89a')
      expect([bytes.readUInt16LE(6), bytes.readUInt16LE(8)]).toEqual([1, 1])
    }
    const opens = (await events(email.id)).filter((e) => e.type === 'opened')
    expect(opens.map((o) => [o.recipient, o.data.unique])).toEqual([
      ['ada@customer.test', true],
      ['ada@customer.test', false],
    ])
    expect(opens[0].data.open).toMatchObject({ timestamp: expect.any(String), userAgent: 'Proxy/2' })
    const tampered = await get(pixel.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')))
    expect(tampered.status).toBe(404)
    expect((await events(email.id)).filter((e) => e.type === 'opened')).toHaveLength(2)
  })

  test('no tracking without a verified tracking host, or when the email did not ask for it', async () => {
    const plain = await insertDomain(h.root, h.accountId, 'plain.test', { ...verifiedTracking('plain.test'), records: [] })
    const { email: e } = await insertEmail(h.root, { accountId: h.accountId, domain: plain, to: ['ada@customer.test'], html: '<a href="https://shop.test/">x</a>' })
    const tracked = { ...e, clickTracking: true, openTracking: true }
    expect(await htmlFor(tracked, plain, 'ada@customer.test')).toBe('<a href="https://shop.test/">x</a>')
    expect(personalCopy(tracked, plain)).toBe(false)
    const off = { ...email, clickTracking: false, openTracking: false }
    expect(linksIn(await htmlFor(off, domain, 'ada@customer.test'))[0]).toBe('https://shop.test/deal?id=7&amp;ref=mail')
  })

  test('the tracking addresses are not API operations', async () => {
    const spec = (await h.call('GET', '/openapi.json')).body
    expect(Object.keys(spec.paths).filter((p) => p.startsWith('/t/') || p.startsWith('/unsubscribe'))).toEqual([])
  })

  test('a genuine token of a deleted email still leads to its link, recording nothing', async () => {
    const url = `http://mailroom.test/t/c/${clickToken(h.root.secret, '00000000-0000-0000-0000-000000000000', 'ada@customer.test', 'https://shop.test/x')}`
    const res = await get(url)
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('https://shop.test/x')
  })
})
