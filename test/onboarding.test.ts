// The onboarding sender end to end: a new account with no domain of its own sends
// from Resend's onboarding address to one of its members; the message leaves as the
// operator's onboarding address, signed for the operator's domain, and reaches the
// member's MX (a real SMTP server found through a real DNS server).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { insertDomain } from './support/delivery-fixtures'
import { customerMx, type CustomerMx } from './support/customer-mx'
import type { TestDnsServer } from './support/dns-server'
import { expectError, harness, type Harness } from './support/harness'
import { PASSWORD } from './support/people'
import type { SmtpSink } from './support/smtp-sink'

let dns: TestDnsServer
let sink: SmtpSink
let h: Harness
let tenant: { accountId: string; token: string }
const member = 'ada@customer.test'

let mx: CustomerMx

beforeAll(async () => {
  mx = await customerMx()
  ;({ dns, sink } = mx)
  h = await harness({
    ...mx.env,
    MAILROOM_OPEN_SIGNUP: 'true',
    MAILROOM_ONBOARDING_FROM: 'Mailroom <onboarding@operator.test>',
    MAILROOM_ONBOARDING_DAILY_CAP: '2',
  })
  // The operator's own account holds the onboarding domain, verified: its DKIM key signs.
  await insertDomain(h.root, h.accountId, 'operator.test')
  await h.call('POST', '/accounts', { key: null, body: { email: 'operator@operator.test', password: PASSWORD } })
  const signed = await h.call('POST', '/accounts', { key: null, body: { email: member, password: PASSWORD, name: 'Ada' } })
  expect(signed.status).toBe(201)
  const key = await h.key({ accountId: signed.body.account.id, name: 'tenant' })
  tenant = { accountId: signed.body.account.id, token: key.token }
})
afterAll(async () => {
  await h.close()
  await mx.close()
})

const send = (body: Record<string, unknown>) => h.call('POST', '/emails', { key: tenant.token, body: { from: 'Ada’s app <onboarding@resend.dev>', to: member, subject: 'Hello', text: 'It works', ...body } })

test('a new account sends from the onboarding address to its member, delivered and signed for the operator’s domain', async () => {
  expect((await h.call('GET', '/trust/standing', { key: tenant.token })).body.level).toBe('sandbox')
  const sent = await send({ html: '<p>It <b>works</b></p>' })
  expect(sent.status, JSON.stringify(sent.body)).toBe(200)
  await h.worker.runOnce()
  await sink.waitFor(1)
  const [m] = sink.messages
  expect(m.to).toEqual([member])
  expect(m.from).toMatch(/^bounces\+.+@send\.operator\.test$/)
  const parsed = await simpleParser(m.raw)
  expect(parsed.from?.value[0]).toMatchObject({ address: 'onboarding@operator.test', name: 'Ada’s app' })
  expect(parsed.subject).toBe('Hello')
  expect(m.raw.toString()).toMatch(/^DKIM-Signature:[^]*?\bd=operator\.test;/im)
  const email = await h.call('GET', `/emails/${sent.body.id}`, { key: tenant.token })
  expect(email.body).toMatchObject({ from: '"Ada’s app" <onboarding@operator.test>', last_event: 'delivered' })
})

test('the onboarding sender writes only to members, only simple messages, within its daily cap', async () => {
  expectError(await send({ to: 'someone@customer.test' }), 'onboarding_recipient_not_a_member', 403)
  expectError(await send({ cc: 'bob@customer.test' }), 'onboarding_shape_refused', 422)
  expectError(await send({ to: [member, 'bob@customer.test'] }), 'onboarding_shape_refused', 422)
  expectError(await send({ attachments: [{ filename: 'a.txt', content: Buffer.from('hi').toString('base64') }] }), 'onboarding_shape_refused', 422)
  const pixel = await send({ html: '<p>Hi</p><img src="https://tracker.example/p.gif">' })
  expectError(pixel, 'onboarding_shape_refused', 422)
  expect(pixel.body.message).toContain('no <img> elements')
  expectError(await send({ click_tracking: true }), 'onboarding_shape_refused', 422)
  // The first test sent one of the two a day.
  expect((await send({})).status).toBe(200)
  const capped = await send({})
  expectError(capped, 'onboarding_daily_cap_reached', 429)
  expect(capped.body.message).toContain('resets at 2026-03-03T00:00:00.000Z')
  h.clock.advance(24 * 3_600_000)
  expect((await send({})).status).toBe(200)
})

test('without MAILROOM_ONBOARDING_FROM, or with its domain unverified, there is no onboarding sender', async () => {
  const bare = await harness()
  try {
    expectError(await bare.call('POST', '/emails', { body: { from: 'onboarding@resend.dev', to: 'a@customer.test', subject: 'x', text: 'x' } }), 'onboarding_sender_unavailable', 403)
  } finally {
    await bare.close()
  }
  const unverified = await harness({ MAILROOM_ONBOARDING_FROM: 'onboarding@nowhere.test' })
  try {
    const r = await unverified.call('POST', '/emails', { body: { from: 'onboarding@nowhere.test', to: 'a@customer.test', subject: 'x', text: 'x' } })
    expectError(r, 'onboarding_sender_unavailable', 403)
    expect(r.body.message).toContain('nowhere.test is not verified')
  } finally {
    await unverified.close()
  }
})
