// Sends with `template: {id, variables}`: the published version fills the message,
// checked through the API and, at the end, through a real SMTP server.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { emails } from '../src/db/tables'
import { expectError, harness, type Harness } from './support/harness'
import { nothingWritten, verifiedDomain } from './support/emails'
import { scenarios } from './support/scenarios'
import { startSmtpSink, type SmtpSink } from './support/smtp-sink'

const RECEIPT = {
  name: 'Receipt',
  alias: 'receipt',
  from: 'Acme <orders@acme.dev>',
  reply_to: ['help@acme.dev'],
  subject: 'Receipt for {{{NAME}}}',
  html: '<h1>Thanks, {{{NAME}}}</h1><p>Total: {{ TOTAL }} EUR</p>',
  variables: [
    { key: 'NAME', type: 'string' },
    { key: 'TOTAL', type: 'number', fallback_value: 0 },
  ],
}

async function publishedTemplate(h: Harness, body: Record<string, unknown> = {}) {
  const t = await h.call('POST', '/templates', { body: { ...RECEIPT, ...body } })
  expect(t.status, JSON.stringify(t.body)).toBe(201)
  const p = await h.call('POST', `/templates/${t.body.id}/publish`)
  expect(p.status).toBe(200)
  return p.body as { id: string; alias: string | null; current_version_id: string }
}
/** A verified acme.dev and the published Receipt template. */
const ready = async (h: Harness) => (await verifiedDomain(h), publishedTemplate(h))
const send = (over: Record<string, unknown> = {}) => ({ to: 'ada@customer.io', template: { id: 'receipt', variables: { NAME: 'Ada' } }, ...over })
const storedEmails = (h: Harness) => h.root.db.q.select().from(emails)

describe('POST /emails with a template: scenarios', () => {
  scenarios([
    { name: 'renders the published version: from, reply_to, subject and bodies from the template, template_id kept', method: 'POST', path: '/emails', setup: ready,
      body: send({ template: { id: 'receipt', variables: { NAME: 'Ada & <Bob>', TOTAL: 42.5 } } }), status: 200,
      check: async (r, t, h) => {
        expect(r.body).toEqual({ object: 'email', id: expect.any(String) })
        const [row] = await storedEmails(h)
        expect(row).toMatchObject({
          id: r.body.id,
          templateId: t.id,
          from: 'Acme <orders@acme.dev>',
          fromEmail: 'orders@acme.dev',
          replyTo: ['help@acme.dev'],
          subject: 'Receipt for Ada & <Bob>',
          html: '<h1>Thanks, Ada &amp; &lt;Bob&gt;</h1><p>Total: 42.5 EUR</p>',
          text: 'THANKS, ADA & <BOB>\n\nTotal: 42.5 EUR',
          lastEvent: 'queued',
        })
      } },
    { name: 'names the template by id, and takes its fallbacks for what is left out', method: 'POST', path: '/emails', setup: ready, body: (t: any) => send({ template: { id: t.id, variables: { NAME: 'Ada' } } }), status: 200,
      check: async (_r, _t, h) => expect((await storedEmails(h))[0].html).toBe('<h1>Thanks, Ada</h1><p>Total: 0 EUR</p>') },
    { name: 'the request’s own from, subject and reply_to win over the template’s', method: 'POST', path: '/emails', setup: ready,
      body: send({ from: 'Billing <billing@acme.dev>', subject: 'Your receipt', reply_to: 'billing@acme.dev' }), status: 200,
      check: async (_r, _t, h) => expect((await storedEmails(h))[0]).toMatchObject({ from: 'Billing <billing@acme.dev>', subject: 'Your receipt', replyTo: ['billing@acme.dev'], html: '<h1>Thanks, Ada</h1><p>Total: 0 EUR</p>' }) },
    { name: 'keeps the template’s own text, unescaped, or none when it is empty', method: 'POST', path: '/emails',
      setup: async (h) => (await verifiedDomain(h), publishedTemplate(h, { text: 'Thanks, {{{NAME}}}' }), publishedTemplate(h, { name: 'Bare', alias: 'bare', text: '' })),
      body: send({ template: { id: 'receipt', variables: { NAME: '<Ada>' } } }), status: 200,
      check: async (_r, _t, h) => {
        expect((await storedEmails(h))[0].text).toBe('Thanks, <Ada>')
        const bare = await h.call('POST', '/emails', { body: send({ template: { id: 'bare', variables: { NAME: 'Ada' } } }) })
        expect(bare.status).toBe(200)
        expect((await storedEmails(h)).find((e) => e.id === bare.body.id)?.text).toBeNull()
      } },
    { name: 'sends the published version, not a later draft', method: 'POST', path: '/emails',
      setup: async (h) => {
        const t = await ready(h)
        await h.call('PATCH', `/templates/${t.id}`, { body: { html: '<p>Unreviewed draft for {{{NAME}}}</p>' } })
      },
      body: send(), status: 200,
      check: async (_r, _t, h) => expect((await storedEmails(h))[0].html).toBe('<h1>Thanks, Ada</h1><p>Total: 0 EUR</p>') },
    { name: 'works for simulator sends, as other sends do', method: 'POST', path: '/emails', setup: (h) => publishedTemplate(h, { from: 'bot@unverified.dev' }), body: send({ to: 'delivered@simulator.test' }), status: 200,
      check: async (_r, t, h) => expect((await storedEmails(h))[0]).toMatchObject({ simulator: true, templateId: t.id }) },
    { name: 'refuses html beside a template, writing nothing', method: 'POST', path: '/emails', setup: ready, body: send({ html: '<p>mine</p>' }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'template' }] }, check: (_r, _t, h) => nothingWritten(h) },
    { name: 'refuses text beside a template', method: 'POST', path: '/emails', setup: ready, body: send({ text: 'mine' }), status: 422, code: 'invalid_parameter', expect: { details: [{ field: 'template' }] } },
    { name: 'refuses a template that does not exist, naming it', method: 'POST', path: '/emails', setup: ready, body: send({ template: { id: 'welcome' } }), status: 422, code: 'invalid_parameter',
      expect: { message: expect.stringContaining('`template.id` "welcome" is no template of this account'), details: [{ field: 'template.id' }] }, check: (_r, _t, h) => nothingWritten(h) },
    { name: 'refuses another account’s template', method: 'POST', path: '/emails',
      setup: async (h) => {
        await verifiedDomain(h)
        const o = await h.otherAccount()
        const t = await h.call('POST', '/templates', { key: o.token, body: RECEIPT })
        await h.call('POST', `/templates/${t.body.id}/publish`, { key: o.token })
        return t.body
      },
      body: (t: any) => send({ template: { id: t.id, variables: { NAME: 'Ada' } } }), status: 422, code: 'invalid_parameter', expect: { details: [{ field: 'template.id' }] } },
    { name: 'refuses a template that was never published, writing nothing', method: 'POST', path: '/emails',
      setup: async (h) => (await verifiedDomain(h), (await h.call('POST', '/templates', { body: RECEIPT })).body), body: send(), status: 422, code: 'template_not_published',
      expect: { message: expect.stringContaining('has no published version yet'), details: [{ field: 'template.id' }] }, check: (_r, _t, h) => nothingWritten(h) },
    { name: 'names the required variables left out, writing nothing', method: 'POST', path: '/emails',
      setup: async (h) => (await verifiedDomain(h), publishedTemplate(h, { html: '<p>{{{NAME}}} {{{CITY}}}</p>', variables: [...RECEIPT.variables, { key: 'CITY', type: 'string' }] })),
      body: send({ template: { id: 'receipt' } }), status: 422, code: 'template_variable_missing',
      expect: { message: 'The template needs `NAME`, `CITY` in `template.variables`: they are declared without a fallback_value.', details: [{ field: 'template.variables' }] },
      check: (_r, _t, h) => nothingWritten(h) },
    { name: 'refuses a variable the template does not declare', method: 'POST', path: '/emails', setup: ready, body: send({ template: { id: 'receipt', variables: { NAME: 'Ada', name: 'Ada' } } }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'template.variables.name' }] } },
    { name: 'refuses a value of the wrong type', method: 'POST', path: '/emails', setup: ready, body: send({ template: { id: 'receipt', variables: { NAME: 'Ada', TOTAL: 'lots' } } }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'template.variables.TOTAL' }] } },
    { name: 'refuses a line break in a value the subject uses', method: 'POST', path: '/emails', setup: ready, body: send({ template: { id: 'receipt', variables: { NAME: 'Ada\nBcc: x@y.io' } } }), status: 422, code: 'invalid_parameter',
      expect: { details: [{ field: 'template.variables.NAME' }] } },
    { name: 'needs a from when neither the template nor the request has one', method: 'POST', path: '/emails',
      setup: async (h) => (await verifiedDomain(h), publishedTemplate(h, { from: null })), body: send(), status: 422, code: 'missing_required_field', expect: { message: 'Missing `from` field.' } },
    { name: 'refuses a template object without an id', method: 'POST', path: '/emails', setup: ready, body: send({ template: { variables: { NAME: 'Ada' } } }), status: 400, code: 'validation_error' },
    { name: 'applies the content rules to the rendered message', method: 'POST', path: '/emails',
      setup: async (h) => (await verifiedDomain(h), publishedTemplate(h, { html: '<p>{{{NAME}}}: <a href="https://bit.ly/x">pay</a></p>' })), body: send(), status: 422, code: 'link_domain_listed' },
    { name: 'applies the send checks to the template’s from', method: 'POST', path: '/emails', setup: (h) => publishedTemplate(h), body: send(), status: 403, code: 'domain_not_verified' },
  ])
})

describe('Template sends in batches, lint and preflight', () => {
  let h: Harness
  beforeAll(async () => {
    h = await harness()
    await ready(h)
    await publishedTemplate(h, { name: 'Welcome', alias: 'welcome', subject: 'Welcome', html: '<p>Welcome!</p>', variables: [] })
  })
  afterAll(() => h.close())

  test('a batch mixes templates and plain emails; strict mode names the bad item', async () => {
    const ok = await h.call('POST', '/emails/batch', {
      body: [send(), send({ to: 'bob@customer.io', template: { id: 'receipt', variables: { NAME: 'Bob', TOTAL: 3 } } }), send({ template: { id: 'welcome' } }), { from: 'a@acme.dev', to: 'c@customer.io', subject: 'Plain', text: 'Hi' }],
    })
    expect(ok.status, JSON.stringify(ok.body)).toBe(200)
    const rows = await storedEmails(h)
    const byId = new Map(rows.map((r) => [r.id, r]))
    expect(ok.body.data.map((d: { id: string }) => byId.get(d.id)?.subject)).toEqual(['Receipt for Ada', 'Receipt for Bob', 'Welcome', 'Plain'])
    expect(byId.get(ok.body.data[3].id)?.templateId).toBeNull()

    const strict = await h.call('POST', '/emails/batch', { body: [send(), send({ template: { id: 'receipt' } })] })
    expectError(strict, 'template_variable_missing', 422)
    expect(strict.body).toMatchObject({ index: 1, details: [{ field: '[1].template.variables' }] })
    expect(await storedEmails(h)).toHaveLength(rows.length)

    const permissive = await h.call('POST', '/emails/batch', { headers: { 'x-batch-validation': 'permissive' }, body: [send({ template: { id: 'nope' } }), send()] })
    expect(permissive.status).toBe(200)
    expect(permissive.body.data).toHaveLength(1)
    expect(permissive.body.errors).toEqual([{ index: 0, code: 'invalid_parameter', message: expect.stringContaining('"nope" is no template') }])
  })

  test('lint renders the template and checks the result; preflight reports template findings without sending', async () => {
    const lint = await h.call('POST', '/emails/lint', { body: send() })
    expect(lint.body).toMatchObject({ object: 'lint', ok: true, sizes: { html_bytes: Buffer.byteLength('<h1>Thanks, Ada</h1><p>Total: 0 EUR</p>') } })
    const badLint = await h.call('POST', '/emails/lint', { body: send({ template: { id: 'receipt', variables: { TOTAL: 'x' } } }) })
    expect(badLint.body.ok).toBe(false)
    expect(badLint.body.findings.map((f: { code: string; field: string }) => [f.code, f.field])).toEqual([
      ['invalid_parameter', 'template.variables.TOTAL'],
      ['template_variable_missing', 'template.variables'],
    ])
    const before = (await storedEmails(h)).length
    const preflight = await h.call('POST', '/emails/preflight', { body: send({ template: { id: 'welcome', variables: { NAME: 'Ada' } } }) })
    expect(preflight.body.ok).toBe(false)
    expect(preflight.body.findings[0]).toMatchObject({ code: 'invalid_parameter', field: 'template.variables.NAME' })
    const fine = await h.call('POST', '/emails/preflight', { body: send() })
    expect(fine.body).toMatchObject({ ok: true, domain: { name: 'acme.dev' } })
    expect(await storedEmails(h)).toHaveLength(before)
  })
})

describe('a template send arrives rendered through a real SMTP server', () => {
  let sink: SmtpSink
  let h: Harness
  beforeAll(async () => {
    sink = await startSmtpSink({ auth: { user: 'mailroom', pass: 's3cret' } })
    h = await harness({ MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: sink.url(), MAILROOM_HOSTNAME: 'mx.mailroom.test' })
    await ready(h)
  })
  afterAll(async () => {
    await h.close()
    await sink.close()
  })

  test('subject, escaped html, derived text, from and reply-to as rendered', async () => {
    const sent = await h.call('POST', '/emails', { body: send({ to: 'Ada <ada@customer.io>', template: { id: 'receipt', variables: { NAME: 'Ada <script>', TOTAL: 12 } } }) })
    expect(sent.status, JSON.stringify(sent.body)).toBe(200)
    await h.worker.runOnce()
    await sink.waitFor(1)
    const [m] = sink.messages
    expect(m.to).toEqual(['ada@customer.io'])
    const parsed = await simpleParser(m.raw)
    expect(parsed.subject).toBe('Receipt for Ada <script>')
    expect(parsed.from?.value).toEqual([{ name: 'Acme', address: 'orders@acme.dev' }])
    expect(parsed.replyTo?.text).toBe('help@acme.dev')
    expect(parsed.html).toBe('<h1>Thanks, Ada &lt;script&gt;</h1><p>Total: 12 EUR</p>')
    expect(parsed.text?.trim()).toBe('THANKS, ADA <SCRIPT>\n\nTotal: 12 EUR')
    expect((await h.call('GET', `/emails/${sent.body.id}`)).body.last_event).toBe('delivered')
  })
})
