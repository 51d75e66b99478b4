import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { domains, emailEvents } from '../src/db/tables'
import { processRaw, storeRaw } from '../src/inbound/store'
import { autoReplyMark } from '../src/trust/loop-guard'
import { MINUTE } from '../src/lib/clock'
import { expectError, harness, type Harness } from './support/harness'
import { asCookie, person } from './support/people'
import { scenarios } from './support/scenarios'

const ORIGIN = { origin: 'http://mailroom.test' }
const TOKEN = 'mr_loopGuardLoopGuardLoopGuardLoop000000'
const body = (text = 'Your code is 123', to = 'delivered@simulator.test') => ({ from: 'Agent <agent@shop.test>', to, subject: 'Code', text })

/** A key with this loop guard that already sent the same message three times (the default repeats). */
const looping = (guard: 'off' | 'warn' | 'hold' | 'block') => async (h: Harness) => {
  await h.key({ name: 'agent', token: TOKEN, loop_guard: guard })
  for (let i = 0; i < 3; i++) expect((await h.call('POST', '/emails', { key: TOKEN, body: body() })).status).toBe(200)
}

const auth = { authorization: `Bearer ${TOKEN}` }

describe('loop guard: scenarios', () => {
  scenarios([
    { name: 'block refuses the same message to the same recipient again', method: 'POST', path: '/emails', as: 'none', headers: auth, setup: looping('block'), body: body(), status: 429, code: 'loop_detected' },
    { name: 'block lets other content through', method: 'POST', path: '/emails', as: 'none', headers: auth, setup: looping('block'), body: body('Your code is 456'), status: 200 },
    { name: 'block lets the same content to someone else through', method: 'POST', path: '/emails', as: 'none', headers: auth, setup: looping('block'), body: body(undefined, 'delivered+2@simulator.test'), status: 200 },
    { name: 'block refuses a batch that repeats it', method: 'POST', path: '/emails/batch', as: 'none', headers: auth, setup: looping('block'), body: [body('other'), body()], status: 429, code: 'loop_detected' },
    { name: 'off never looks', method: 'POST', path: '/emails', as: 'none', headers: auth, setup: looping('off'), body: body(), status: 200 },
    { name: 'hold asks a person', method: 'POST', path: '/emails', as: 'none', headers: auth, setup: looping('hold'), body: body(), status: 403, code: 'approval_required',
      check: async (r, _c, h) => {
        const action = (await h.call('GET', `/agent-actions/${r.body.agent_action_id}`)).body
        expect(action).toMatchObject({ kind: 'send_email', reason: 'loop_guard', request: { input: body() } })
      } },
    { name: 'warn sends and records the warning', method: 'POST', path: '/emails', as: 'none', headers: auth, setup: looping('warn'), body: body(), status: 200,
      check: async (r, _c, h) => {
        const [queued] = await h.root.db.q.select().from(emailEvents).where(eq(emailEvents.emailId, r.body.id))
        expect((queued.data as { warnings: { code: string }[] }).warnings.map((w) => w.code)).toContain('loop_detected')
      } },
    { name: 'the window passes', method: 'POST', path: '/emails', as: 'none', headers: auth, body: body(), status: 200,
      setup: async (h) => {
        await looping('block')(h)
        h.clock.advance(61 * MINUTE)
      } },
  ])
})

const AUTO_REPLY = [
  'From: Out of office <grace@sender.test>',
  'To: help@inbox.test',
  'Subject: Automatic reply: Code',
  'Message-ID: <ooo-1@sender.test>',
  'Auto-Submitted: auto-replied',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'I am away until Monday.',
  '',
].join('\r\n')

async function inboundAutoReply(h: Harness) {
  const d = await h.call('POST', '/domains', { body: { name: 'inbox.test', capabilities: { sending: 'enabled', receiving: 'enabled' } } })
  await h.root.db.write((tx) => tx.update(domains).set({ status: 'verified', verifiedAt: '2026-03-01T10:00:00.000Z' }).where(eq(domains.id, d.body.id)))
  const rawId = await storeRaw(h.root, { remoteAddress: '127.0.0.1', helo: 'client.test', mailFrom: 'grace@sender.test', rcptTo: ['help@inbox.test'], secure: false }, Buffer.from(AUTO_REPLY), 'mail')
  return (await processRaw(h.root, rawId)).emails[0].id
}

describe('loop guard: replies to automatic replies', () => {
  test('a key whose loop guard is on does not answer an auto-reply; with hold, a person can let it', async () => {
    const h = await harness({ MAILROOM_DNS_SERVERS: '127.0.0.1:9', MAILROOM_HOSTNAME: 'mx.mailroom.test' })
    const id = await inboundAutoReply(h)
    const blocking = await h.key({ name: 'blocking', loop_guard: 'block' })
    const r = await h.call('POST', `/emails/receiving/${id}/reply`, { key: blocking.token, body: { text: 'Thanks!' } })
    expectError(r, 'loop_detected', 429)
    expect(r.body.message).toContain('Auto-Submitted: auto-replied')
    const holding = await h.key({ name: 'holding', loop_guard: 'hold' })
    const held = await h.call('POST', `/emails/receiving/${id}/reply`, { key: holding.token, body: { text: 'Thanks!' } })
    expectError(held, 'approval_required', 403)
    const owner = await person(h)
    const approved = await h.call('POST', `/agent-actions/${held.body.agent_action_id}/approve`, asCookie(owner.cookie, ORIGIN))
    expect(approved.status, JSON.stringify(approved.body)).toBe(200)
    expect(approved.body.result).toMatchObject({ object: 'email', in_reply_to: '<ooo-1@sender.test>' })
    // A key without a loop guard answers as before.
    expect((await h.call('POST', `/emails/receiving/${id}/reply`, { body: { text: 'Thanks!' } })).status).toBe(200)
    await h.close()
  })

  test('what marks an automatic reply', () => {
    expect(autoReplyMark({ 'Auto-Submitted': 'auto-replied' })).toBe('Auto-Submitted: auto-replied')
    expect(autoReplyMark({ 'auto-submitted': 'no' })).toBeNull()
    expect(autoReplyMark({ 'X-Autoreply': 'yes' })).toBe('x-autoreply: yes')
    expect(autoReplyMark({ Precedence: 'bulk' })).toBe('Precedence: bulk')
    expect(autoReplyMark({ Precedence: 'first-class' })).toBeNull()
    expect(autoReplyMark({ Subject: 'hello' })).toBeNull()
  })
})
