// Unsubscribe as a recipient meets it: the List-Unsubscribe address of a delivered
// message, a GET that only asks, the RFC 8058 one-click POST that records the answer
// at once, the next send under the topic skipping the address, and the preference
// page over the account's public topics.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { emails } from '../src/db/tables'
import { unsubscribeToken } from '../src/delivery/unsubscribe'
import { insertDomain, insertEmail } from './support/delivery-fixtures'
import { harness, type Harness } from './support/harness'
import { startSmtpSink, type SmtpSink } from './support/smtp-sink'

let sink: SmtpSink
let h: Harness
let news: string
let offers: string
let tips: string
let internal: string

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const page = async (url: string, init: RequestInit = {}) => {
  const res = await h.app.handle(new Request(url, init))
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text(), location: res.headers.get('location') }
}
const topicsOf = async (address: string) =>
  Object.fromEntries(((await h.call('GET', `/contacts/${address}/topics`)).body.data as { id: string; subscribed: boolean; is_default: boolean }[]).map((t) => [t.id, [t.subscribed, t.is_default]]))
const eventsOf = async (id: string) => (await h.call('GET', `/emails/${id}/events`)).body.data as { type: string; recipient: string; data: any }[]

/** Sends under a topic through the API and the MTA; answers the email id and the List-Unsubscribe HTTPS address each recipient got. */
async function sendUnder(topicId: string, to: string[]) {
  const before = sink.messages.length
  const sent = await h.call('POST', '/emails', { body: { from: 'News <news@shop.test>', to, subject: 'New things', html: '<p>Look</p>', topic_id: topicId } })
  expect(sent.status, JSON.stringify(sent.body)).toBe(200)
  await h.worker.runOnce()
  const urls: Record<string, string> = {}
  // Only this email's copies (earlier tests leave other mail in the outbox).
  const arrived = sink.messages.slice(before).filter((m) => m.raw.toString().includes(`Message-ID: <${sent.body.id}@`))
  for (const m of arrived) {
    const header = m.raw.toString().replace(/\r\n[ \t]+/g, ' ').match(/^List-Unsubscribe: <([^>]+)>, <(mailto:[^>]+)>/m)!
    urls[m.to[0]] = header[1]
  }
  return { id: sent.body.id as string, urls, arrived: arrived.map((m) => m.to[0]) }
}

beforeAll(async () => {
  sink = await startSmtpSink({ auth: { user: 'mailroom', pass: 's3cret' } })
  h = await harness({ MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: sink.url(), MAILROOM_HOSTNAME: 'mx.mailroom.test' })
  await insertDomain(h.root, h.accountId, 'shop.test')
  const topic = async (name: string, default_subscription: string, visibility: string) => (await h.call('POST', '/topics', { body: { name, default_subscription, visibility, description: `${name} mail` } })).body.id as string
  news = await topic('Product news', 'opt_out', 'public')
  offers = await topic('Offers', 'opt_in', 'public')
  tips = await topic('Tips', 'opt_out', 'public')
  internal = await topic('Internal <b>beta</b>', 'opt_out', 'private')
})
afterAll(async () => {
  await h.close()
  await sink.close()
})

describe('one-click unsubscribe', () => {
  let first: Awaited<ReturnType<typeof sendUnder>>

  test('the GET only shows a confirmation page: nothing changes', async () => {
    first = await sendUnder(news, ['ada@customer.test', 'bob@customer.test'])
    expect(first.arrived.sort()).toEqual(['ada@customer.test', 'bob@customer.test'])
    const url = first.urls['ada@customer.test']
    expect(url).toMatch(/^http:\/\/mailroom\.test\/unsubscribe\/[A-Za-z0-9_.-]+$/)
    for (let i = 0; i < 3; i++) {
      const p = await page(url)
      expect(p.status).toBe(200)
      expect(p.type).toBe('text/html; charset=utf-8')
      expect(p.body).toContain('Stop sending “Product news” to <strong>ada@customer.test</strong>?')
      expect(p.body).toMatch(/<form method="post" action="\/unsubscribe\/[^"]+"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe<\/button>/)
      expect(p.body).not.toMatch(/<script|https?:\/\/(?!mailroom)/)
    }
    expect((await h.call('GET', '/contacts/ada@customer.test')).status).toBe(404)
    expect((await eventsOf(first.id)).some((e) => e.type === 'unsubscribed')).toBe(false)
  })

  test('the one-click POST records the answer at once and is idempotent', async () => {
    const url = first.urls['ada@customer.test']
    const p = await page(url, { method: 'POST', headers: FORM, body: 'List-Unsubscribe=One-Click' })
    expect(p.status).toBe(200)
    expect(p.body).toContain('You are unsubscribed')
    // The address had no contact: one is made so the no is remembered; the answer is absolute.
    expect((await topicsOf('ada@customer.test'))[news]).toEqual([false, false])
    const once = (await eventsOf(first.id)).filter((e) => e.type === 'unsubscribed')
    expect(once.map((e) => [e.recipient, e.data.unsubscribe.topic_id])).toEqual([['ada@customer.test', news]])

    const again = await page(url, { method: 'POST', headers: FORM, body: 'List-Unsubscribe=One-Click' })
    expect(again).toEqual(p)
    expect((await eventsOf(first.id)).filter((e) => e.type === 'unsubscribed')).toHaveLength(1)
    // Bob is untouched.
    expect((await h.call('GET', '/contacts/bob@customer.test')).status).toBe(404)
  })

  test('a multipart one-click POST (as some mailbox providers send it) works too', async () => {
    const form = new FormData()
    form.set('List-Unsubscribe', 'One-Click')
    const p = await page(first.urls['bob@customer.test'], { method: 'POST', body: form })
    expect(p.status).toBe(200)
    expect((await topicsOf('bob@customer.test'))[news]).toEqual([false, false])
  })

  test('the next send under the topic skips them', async () => {
    const next = await sendUnder(news, ['ada@customer.test', 'bob@customer.test', 'cy@customer.test'])
    expect(next.arrived).toEqual(['cy@customer.test'])
    const suppressed = (await eventsOf(next.id)).filter((e) => e.type === 'suppressed').map((e) => e.recipient)
    expect(suppressed.sort()).toEqual(['ada@customer.test', 'bob@customer.test'])
  })

  test('a tampered or foreign token gets a plain page and changes nothing', async () => {
    const cy = unsubscribeToken(h.root.secret, first.id, 'cy@customer.test')
    const [e, , mac] = cy.split('.')
    const forged = `${e}.${Buffer.from('dee@customer.test').toString('base64url')}.${mac}`
    for (const bad of [forged, `${cy.slice(0, -1)}${cy.endsWith('A') ? 'B' : 'A'}`, 'nonsense', unsubscribeToken('other-secret', first.id, 'dee@customer.test')]) {
      for (const method of ['GET', 'POST']) {
        const p = await page(`http://mailroom.test/unsubscribe/${bad}`, { method, headers: FORM, body: method === 'POST' ? 'List-Unsubscribe=One-Click' : undefined })
        expect(p.status).toBe(404)
        expect(p.body).toContain('This link is not valid')
        expect(p.body).not.toMatch(/error|stack|sql/i)
      }
      expect((await page(`http://mailroom.test/unsubscribe/${bad}/preferences`)).status).toBe(404)
    }
    expect((await h.call('GET', '/contacts/dee@customer.test')).status).toBe(404)
    expect((await h.call('GET', '/contacts/cy@customer.test')).status).toBe(404)
  })

  test('plain transactional mail has nothing to unsubscribe from', async () => {
    const sent = await h.call('POST', '/emails', { body: { from: 'orders@shop.test', to: 'ada@customer.test', subject: 'Receipt', text: 'Thanks' } })
    const p = await page(`http://mailroom.test/unsubscribe/${unsubscribeToken(h.root.secret, sent.body.id, 'ada@customer.test')}`, { method: 'POST', headers: FORM, body: 'List-Unsubscribe=One-Click' })
    expect(p.status).toBe(404)
    expect(p.body).toContain('Nothing to unsubscribe from')
  })

  test('from a broadcast without a topic: the contact is unsubscribed and the address suppressed', async () => {
    const domain = (await h.call('GET', '/domains')).body.data[0]
    const { email } = await insertEmail(h.root, { accountId: h.accountId, domain: { ...domain, id: domain.id, name: 'shop.test' } as never, to: ['eve@customer.test'], priority: 'bulk' })
    await h.root.db.write((tx) => tx.update(emails).set({ broadcastId: 'b-1' }).where(eq(emails.id, email.id)))
    const url = `http://mailroom.test/unsubscribe/${unsubscribeToken(h.root.secret, email.id, 'eve@customer.test')}`
    expect((await page(url)).body).toContain('Stop sending all mailing-list messages from this sender to <strong>eve@customer.test</strong>?')
    expect((await h.call('GET', '/suppressions/eve@customer.test')).status).toBe(404)
    for (let i = 0; i < 2; i++) expect((await page(url, { method: 'POST', headers: FORM, body: 'List-Unsubscribe=One-Click' })).status).toBe(200)
    expect((await h.call('GET', '/contacts/eve@customer.test')).body.unsubscribed).toBe(true)
    expect((await h.call('GET', '/suppressions/eve@customer.test')).body).toMatchObject({ reason: 'unsubscribe', source_email_id: email.id })
    expect((await eventsOf(email.id)).filter((e) => e.type === 'unsubscribed')).toHaveLength(1)
  })
})

describe('preference page', () => {
  test('lists the public topics only, with this address’s answers and defaults', async () => {
    const sent = await sendUnder(tips, ['ada@customer.test'])
    const url = `${sent.urls['ada@customer.test']}/preferences`
    const p = await page(url)
    expect(p.status).toBe(200)
    const boxes = [...p.body.matchAll(/<input type="checkbox" name="topic" value="([^"]+)"( checked)?> ([^<]+)<\/label>/g)].map((m) => [m[3], m[1], !!m[2]])
    // Sorted by name: Offers (opt-in, unanswered: no), Product news (answered no), Tips (opt-out default: yes).
    expect(boxes).toEqual([
      ['Offers', offers, false],
      ['Product news', news, false],
      ['Tips', tips, true],
    ])
    expect(p.body).not.toContain('Internal')
    expect(p.body).not.toContain(internal)
    // The confirmation page links to it.
    expect((await page(sent.urls['ada@customer.test'])).body).toContain(`href="/unsubscribe/${sent.urls['ada@customer.test'].split('/unsubscribe/')[1]}/preferences"`)
  })

  test('saving records the changes only, never touches private topics, and answers follow the topic rules', async () => {
    const sent = await sendUnder(tips, ['ada@customer.test'])
    const url = `${sent.urls['ada@customer.test']}/preferences`
    const body = new URLSearchParams([
      ['shown', offers], ['shown', news], ['shown', tips], ['shown', internal],
      // Offers ticked (a yes), Tips left ticked (unchanged), Internal is private (ignored), Product news left off.
      ['topic', offers], ['topic', tips], ['topic', internal],
    ]).toString()
    const p = await page(url, { method: 'POST', headers: FORM, body })
    expect(p.status).toBe(200)
    expect(p.body).toContain('Your preferences are saved.')
    const t = await topicsOf('ada@customer.test')
    expect(t[offers]).toEqual([true, false])
    expect(t[news]).toEqual([false, false])
    expect(t[tips]).toEqual([true, true])
    expect(t[internal]).toEqual([true, true])
    // A changed default never rewrites an answer: Offers stays yes, News stays no; Tips was never answered, so it follows.
    await h.call('PATCH', `/topics/${offers}`, { body: { default_subscription: 'opt_out' } })
    await h.call('PATCH', `/topics/${news}`, { body: { default_subscription: 'opt_out' } })
    await h.call('PATCH', `/topics/${tips}`, { body: { default_subscription: 'opt_in' } })
    const after = await topicsOf('ada@customer.test')
    expect([after[offers], after[news], after[tips]]).toEqual([[true, false], [false, false], [false, true]])

    // Unticking the email's own topic is an unsubscribe from it, recorded on the email.
    await h.call('PATCH', `/topics/${tips}`, { body: { default_subscription: 'opt_out' } })
    await page(url, { method: 'POST', headers: FORM, body: new URLSearchParams([['shown', tips], ['topic', offers]]).toString() })
    expect((await topicsOf('ada@customer.test'))[tips]).toEqual([false, false])
    expect((await eventsOf(sent.id)).filter((e) => e.type === 'unsubscribed').map((e) => e.data.unsubscribe.topic_id)).toEqual([tips])
    // And the page shows it.
    const shown = await page(url)
    expect(shown.body).toMatch(new RegExp(`value="${tips}"> Tips`))
  })

  test('a person with no contact yet gets one only when they change something', async () => {
    const sent = await sendUnder(tips, ['fay@customer.test'])
    const url = `${sent.urls['fay@customer.test']}/preferences`
    await page(url, { method: 'POST', headers: FORM, body: new URLSearchParams([['shown', tips], ['topic', tips]]).toString() })
    expect((await h.call('GET', '/contacts/fay@customer.test')).status).toBe(404)
    // Tips is opt-out by now: left ticked it changes nothing; unticked it is an answer.
    await page(url, { method: 'POST', headers: FORM, body: new URLSearchParams([['shown', tips]]).toString() })
    expect((await topicsOf('fay@customer.test'))[tips]).toEqual([false, false])
  })
})
