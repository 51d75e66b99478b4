import { describe, expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import { deliveries, trustAppeals, trustChanges } from '../src/db/tables'
import { systemActor } from '../src/lib/actor'
import { DAY, HOUR, iso } from '../src/lib/clock'
import { trustCommand } from '../src/trust/command'
import { nextStep, sendRates } from '../src/trust/rates'
import { readStanding, writeChange, type Standing } from '../src/trust/standing'
import { madeDraft } from './support/broadcasts'
import { insertDomain } from './support/delivery-fixtures'
import { expectError, harness, type Harness } from './support/harness'
import { asCookie, person } from './support/people'
import { scenarios, type Scenario } from './support/scenarios'

const ORIGIN = { origin: 'http://mailroom.test' }
const CAPTURE = { MAILROOM_DELIVERY: 'capture', MAILROOM_HOSTNAME: 'mx.mailroom.test' }

/** Puts the account's standing where a test needs it, as a change of the operator's. */
async function setStanding(h: Harness, patch: Partial<Standing>, accountId = h.accountId) {
  const before = await readStanding(h.root.db.q, accountId)
  const at = iso(h.clock.now())
  await h.root.db.write((tx) => writeChange(tx, h.root, at, systemActor(accountId), { accountId, before, after: { ...before, levelSince: before.levelSince ?? at, ...patch, stored: true }, reason: 'set by the test', by: 'operator' }))
}

/** The account with its verified sending domain shop.test, standing as given. */
async function shop(h: Harness, patch?: Partial<Standing>) {
  await insertDomain(h.root, h.accountId, 'shop.test')
  if (patch) await setStanding(h, patch)
  return h
}

const mail = (to: string | string[], over: Record<string, unknown> = {}) => ({ from: 'Shop <orders@shop.test>', to, subject: 'Order', text: 'Thanks', ...over })
const batchOf = (to: string[]) => to.map((t) => mail(t))

/** `n` real sends to customer.test, delivered (capture); with `bounced`, the first ones bounce for a bad address. */
async function sendAndBounce(h: Harness, n: number, bounced: number, from = 'orders@shop.test') {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const r = await h.call('POST', '/emails', { body: mail(`c${i}@customer.test`, { from, subject: `Order ${i}` }) })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    ids.push(r.body.id)
  }
  await h.worker.runOnce()
  if (bounced) {
    await h.root.db.write((tx) => tx.update(deliveries).set({ state: 'bounced', lastCode: 550, lastResponse: '550 5.1.1 User unknown' }).where(inArray(deliveries.emailId, ids.slice(0, bounced))))
  }
  return ids
}

describe('GET /trust/standing', () => {
  scenarios([
    {
      name: 'the operator’s account has no standing row: trusted, no cap, nothing above it',
      method: 'GET',
      path: '/trust/standing',
      status: 200,
      expect: { object: 'trust_standing', level: 'trusted', state: 'active', limits: { daily_cap: null, recipients: 'any', bulk_sends: true }, next_level: null, raises_it: [], paused_domains: [], latest_appeal: null },
      check: (r) => expect(r.body.reasons[0]).toContain('No standing is recorded'),
    },
    {
      name: 'a sandboxed account sees its cap, who it may write to and what lifts the sandbox',
      method: 'GET',
      path: '/trust/standing',
      env: { MAILROOM_TRUST_SANDBOX_DAILY_CAP: '25' },
      setup: async (h) => {
        await shop(h, { level: 'sandbox' })
        await person(h, { email: 'ada@people.test' })
      },
      status: 200,
      expect: {
        level: 'sandbox',
        limits: { daily_cap: 25, sent_today: 0, remaining_today: 25, recipients: 'own', allowed_recipients: { members: ['ada@people.test'], domains: ['shop.test'] }, bulk_sends: false },
        next_level: 'new',
        history: [{ from: 'trusted', to: 'sandbox', by: 'operator' }],
      },
      check: (r) => {
        expect(r.body.raises_it.map((x: { name: string; met: boolean }) => [x.name, x.met])).toEqual([['days_at_level', false], ['verified_domain', true], ['rates', true], ['state', true]])
      },
    },
    {
      name: 'a paused domain is listed with its reason',
      method: 'GET',
      path: '/trust/standing',
      setup: (h) => shop(h, { pausedDomains: [{ domain: 'shop.test', reason: '9 of 10 sends bounced', since: '2026-03-02T10:00:00.000Z' }] }),
      status: 200,
      expect: { paused_domains: [{ domain: 'shop.test', reason: '9 of 10 sends bounced' }], limits: { recipients: 'any' } },
      check: (r) => expect(r.body.reasons.join(' ')).toContain('Sending from shop.test is paused'),
    },
  ])
})

const member = { email: 'ada@people.test' }

describe('the send gates on POST /emails and /emails/batch', () => {
  const table = (
  [
    { name: 'sandbox refuses an outside recipient', setup: (h) => shop(h, { level: 'sandbox' }), body: mail('x@customer.test'), status: 403, code: 'account_sandboxed' },
    { name: 'sandbox sends to a member', setup: async (h) => (await shop(h, { level: 'sandbox' }), person(h, member)), body: mail(member.email), status: 200 },
    { name: 'sandbox sends to its own verified domain', setup: (h) => shop(h, { level: 'sandbox' }), body: mail('desk@shop.test'), status: 200 },
    { name: 'sandbox sends to simulator addresses', setup: (h) => shop(h, { level: 'sandbox' }), body: mail('delivered@resend.dev'), status: 200 },
    { name: 'suspension refuses every send, simulator ones too', setup: (h) => shop(h, { state: 'suspended', stateReason: 'abuse report' }), body: mail('delivered@resend.dev'), status: 403, code: 'account_suspended' },
    { name: 'an account pause refuses real sends', setup: (h) => shop(h, { state: 'paused', stateReason: 'bounces' }), body: mail('x@customer.test'), status: 403, code: 'sending_paused_everywhere' },
    { name: 'an account pause lets simulator sends through', setup: (h) => shop(h, { state: 'paused', stateReason: 'bounces' }), body: mail('delivered@resend.dev'), status: 200 },
    {
      name: 'a domain pause refuses that domain',
      setup: (h) => shop(h, { pausedDomains: [{ domain: 'shop.test', reason: 'bounces', since: '2026-03-02T10:00:00.000Z' }] }),
      body: mail('x@customer.test'),
      status: 403,
      code: 'trust_paused',
    },
    {
      name: 'a domain pause leaves the other domains sending',
      setup: async (h) => (await shop(h, { pausedDomains: [{ domain: 'shop.test', reason: 'bounces', since: '2026-03-02T10:00:00.000Z' }] }), insertDomain(h.root, h.accountId, 'other.test')),
      body: mail('x@customer.test', { from: 'a@other.test' }),
      status: 200,
    },
    { name: 'review refuses an outside recipient', setup: (h) => shop(h, { state: 'review', stateReason: 'appeal' }), body: mail('x@customer.test'), status: 422, code: 'review_sandbox_recipient_only' },
    { name: 'review sends to its own domain', setup: (h) => shop(h, { state: 'review', stateReason: 'appeal' }), body: mail('desk@shop.test'), status: 200 },
    {
      name: 'the ladder caps the day',
      env: { MAILROOM_TRUST_NEW_DAILY_CAP: '2' },
      setup: async (h) => {
        await shop(h, { level: 'new' })
        for (const to of ['a@customer.test', 'b@customer.test']) expect((await h.call('POST', '/emails', { body: mail(to) })).status).toBe(200)
      },
      body: mail('c@customer.test'),
      status: 429,
      code: 'trust_throttled',
      check: (r) => expect(r.body.message).toContain('resets at 2026-03-03T00:00:00.000Z'),
    },
    {
      name: 'the operator’s trusted account is never capped',
      env: { MAILROOM_TRUST_SANDBOX_DAILY_CAP: '1', MAILROOM_TRUST_NEW_DAILY_CAP: '1', MAILROOM_TRUST_ESTABLISHED_DAILY_CAP: '1' },
      setup: async (h) => {
        await shop(h)
        expect((await h.call('POST', '/emails', { body: mail('a@customer.test') })).status).toBe(200)
      },
      body: mail(['b@customer.test', 'c@customer.test']),
      status: 200,
    },
  ] as Partial<Scenario>[]
  ).map((s) => ({ method: 'POST', path: '/emails', ...s, env: { ...CAPTURE, ...s.env } })) as Scenario[]
  scenarios([
    ...table,
    {
      name: 'preflight reports the ladder’s cap that the send would meet, and spends nothing',
      method: 'POST',
      path: '/emails/preflight',
      env: { ...CAPTURE, MAILROOM_TRUST_NEW_DAILY_CAP: '2' },
      setup: async (h) => {
        await shop(h, { level: 'new' })
        expect((await h.call('POST', '/emails', { body: mail('a@customer.test') })).status).toBe(200)
      },
      body: mail(['b@customer.test', 'c@customer.test']),
      status: 200,
      expect: { ok: false, findings: [{ code: 'trust_throttled', severity: 'error' }] },
      check: async (_r, _c, h) => {
        // One more still fits: the preflight took nothing from the day.
        expect((await h.call('POST', '/emails/preflight', { body: mail('b@customer.test') })).body).toMatchObject({ ok: true, findings: [] })
        expect((await h.call('POST', '/emails', { body: mail('b@customer.test') })).status).toBe(200)
      },
    },
    {
      name: 'review refuses a bulk batch',
      method: 'POST',
      path: '/emails/batch',
      env: { ...CAPTURE, MAILROOM_TRUST_BULK_SIZE: '1' },
      setup: (h) => shop(h, { state: 'review', stateReason: 'appeal' }),
      body: batchOf(['a@shop.test', 'b@shop.test']),
      status: 403,
      code: 'staff_review_required',
    },
    {
      name: 'a bulk batch from a domain verified today is held, with the time it clears',
      method: 'POST',
      path: '/emails/batch',
      env: { ...CAPTURE, MAILROOM_TRUST_BULK_SIZE: '1' },
      setup: (h) => shop(h, { level: 'new' }),
      body: batchOf(['a@customer.test', 'b@customer.test']),
      status: 403,
      code: 'young_domain_held',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain('held until 2026-03-03T10:00:00.000Z')
        // A single send goes now, and the batch once the domain is old enough.
        expect((await h.call('POST', '/emails/batch', { body: batchOf(['a@customer.test']) })).status).toBe(200)
        h.clock.advance(24 * HOUR)
        expect((await h.call('POST', '/emails/batch', { body: batchOf(['a@customer.test', 'b@customer.test']) })).status).toBe(200)
      },
    },
    {
      name: 'a paused account refuses a batch',
      method: 'POST',
      path: '/emails/batch',
      env: CAPTURE,
      setup: (h) => shop(h, { state: 'paused', stateReason: 'bounces' }),
      body: batchOf(['a@customer.test']),
      status: 403,
      code: 'sending_paused_everywhere',
    },
  ])
})

describe('the broadcast gate', () => {
  const sendIt = (h: Harness, id: string) => h.call('POST', `/broadcasts/${id}/send`, { body: {} })
  const real = (h: Harness) => madeDraft(h, { from: 'News <news@shop.test>' }, ['ada@customer.test'])

  test('a paused account, a paused domain, the sandbox and review refuse a broadcast; simulator audiences go', async () => {
    const h = await shop(await harness(CAPTURE), { state: 'paused', stateReason: 'bounces' })
    try {
      const { broadcast } = await real(h)
      expectError(await sendIt(h, broadcast.id), 'sending_paused_everywhere', 403)
      // Without a domain that may send, only simulator addresses are reached: nothing of the standing's business.
      const sim = await madeDraft(h)
      expect((await sendIt(h, sim.broadcast.id)).status).toBe(200)

      await setStanding(h, { state: 'active', pausedDomains: [{ domain: 'shop.test', reason: 'bounces', since: iso(h.clock.now()) }] })
      expectError(await sendIt(h, broadcast.id), 'trust_paused', 403)
      await setStanding(h, { level: 'sandbox', pausedDomains: [] })
      expectError(await sendIt(h, broadcast.id), 'account_sandboxed', 403)
      await setStanding(h, { level: 'established', levelSince: iso(h.clock.now() - 30 * DAY), state: 'review', stateReason: 'appeal' })
      expectError(await sendIt(h, broadcast.id), 'staff_review_required', 403)
      await setStanding(h, { state: 'active' })
      expectError(await sendIt(h, broadcast.id), 'young_domain_held', 403)
      h.clock.advance(25 * HOUR)
      expect((await sendIt(h, broadcast.id)).status).toBe(200)
    } finally {
      await h.close()
    }
  })

  test('the ladder’s cap counts a broadcast’s recipients', async () => {
    const h = await shop(await harness({ ...CAPTURE, MAILROOM_TRUST_ESTABLISHED_DAILY_CAP: '1', MAILROOM_YOUNG_DOMAIN_HOURS: '0' }), { level: 'established' })
    try {
      const { broadcast } = await madeDraft(h, { from: 'News <news@shop.test>' }, ['ada@customer.test', 'bob@customer.test'])
      expectError(await sendIt(h, broadcast.id), 'trust_throttled', 429)
    } finally {
      await h.close()
    }
  })
})

describe('POST /trust/appeal', () => {
  const pausedWith = (bounced: number) => async (h: Harness) => {
    await shop(h)
    await sendAndBounce(h, 10, bounced)
    await setStanding(h, { state: 'paused', stateReason: 'bounces' })
  }
  const appeal = { reason: 'We removed the bad list and fixed the import.' }
  const env = { ...CAPTURE, MAILROOM_TRUST_MIN_SENDS: '10' }
  scenarios(
    (
    [
      { name: 'a key can never appeal', as: 'full', body: appeal, status: 403, code: 'human_action_required' },
      { name: 'a sending key cannot either', as: 'sending', body: appeal, status: 403, code: 'human_action_required' },
      { name: 'needs a reason', as: {}, body: {}, status: 400, code: 'validation_error' },
      { name: 'nothing to review on a trusted account', as: {}, body: appeal, status: 201, expect: { object: 'trust_appeal', status: 'decided', standing: { level: 'trusted' } } },
      {
        name: 'lifts a pause at once when the rates are back under the thresholds, audited',
        as: {},
        setup: pausedWith(0),
        body: appeal,
        status: 201,
        expect: { status: 'granted', reason: appeal.reason, standing: { state: 'active', latest_appeal: { status: 'granted' } } },
        check: async (r, _c, h) => {
          expect(r.body.standing.history[0]).toMatchObject({ from: 'paused', to: 'trusted', by: expect.stringMatching(/@people\.test$/) })
          expect((await h.call('POST', '/emails', { body: mail('x@customer.test') })).status).toBe(200)
          const audit = await h.call('GET', '/audit', { query: { resource: 'trust_standing' } })
          expect(audit.body.data[0]).toMatchObject({ resource: 'trust_standing', action: 'changed', actor: { kind: 'session' } })
        },
      },
      {
        name: 'keeps the appeal for the operator and puts the account under review while the rates are still over',
        as: {},
        setup: pausedWith(5),
        body: appeal,
        status: 403,
        code: 'staff_review_required',
        check: async (r, _c, h) => {
          expect(r.body.appeal_id).toBeString()
          expect(r.body.message).toContain('5 of 10 sends bounced')
          const s = await h.call('GET', '/trust/standing')
          expect(s.body).toMatchObject({ state: 'review', latest_appeal: { id: r.body.appeal_id, status: 'pending', reason: appeal.reason }, limits: { recipients: 'own', bulk_sends: false } })
          expectError(await h.call('POST', '/emails', { body: mail('x@customer.test') }), 'review_sandbox_recipient_only', 422)
          expect((await h.call('POST', '/emails', { body: mail('desk@shop.test') })).status).toBe(200)
        },
      },
      { name: 'a suspension waits for the operator', as: {}, setup: (h) => shop(h, { state: 'suspended', stateReason: 'abuse' }), body: appeal, status: 403, code: 'staff_review_required' },
      {
        name: 'a sandbox without a verified domain waits for the operator',
        as: {},
        env: { MAILROOM_TRUST_PROMOTE_DAYS: '0' },
        setup: (h) => setStanding(h, { level: 'sandbox' }),
        body: appeal,
        status: 403,
        code: 'staff_review_required',
        check: (r) => expect(r.body.message).toContain('no verified sending domain yet'),
      },
      {
        name: 'a sandbox whose requirements are met moves up at once',
        as: {},
        env: { MAILROOM_TRUST_PROMOTE_DAYS: '0' },
        setup: (h) => shop(h, { level: 'sandbox' }),
        body: appeal,
        status: 201,
        expect: { status: 'granted', standing: { level: 'new', next_level: 'established' } },
      },
    ] as Partial<Scenario>[]
    ).map((s) => ({ method: 'POST', path: '/trust/appeal', headers: ORIGIN, ...s, env: { ...env, ...s.env } })) as Scenario[],
  )
})

describe('the trust review job', () => {
  test('pauses an account whose bounces pass the threshold, refuses every send path, and resumes once the window is clean', async () => {
    const h = await shop(await harness({ ...CAPTURE, MAILROOM_TRUST_MIN_SENDS: '10' }))
    try {
      await sendAndBounce(h, 10, 0)
      expect(await h.scheduler.runNow('trust-review')).toEqual([])
      await sendAndBounce(h, 10, 10)
      expect(await h.scheduler.runNow('trust-review')).toEqual([{ accountId: h.accountId, from: 'trusted', to: 'paused, paused:shop.test' }])
      expectError(await h.call('POST', '/emails', { body: mail('x@customer.test') }), 'sending_paused_everywhere', 403)
      expectError(await h.call('POST', '/emails/batch', { body: batchOf(['x@customer.test']) }), 'sending_paused_everywhere', 403)
      const { broadcast } = await madeDraft(h, { from: 'News <news@shop.test>' }, ['ada@customer.test'])
      expectError(await h.call('POST', `/broadcasts/${broadcast.id}/send`, { body: {} }), 'sending_paused_everywhere', 403)
      const standing = (await h.call('GET', '/trust/standing')).body
      expect(standing).toMatchObject({ state: 'paused', rates: { sent: 20, bounced: 10, bounce_percent: 50 } })
      expect(standing.state_since).toBe(iso(h.clock.now()))
      h.clock.advance(25 * HOUR)
      expect(await h.scheduler.runNow('trust-review')).toEqual([{ accountId: h.accountId, from: 'paused, paused:shop.test', to: 'trusted' }])
      expect((await h.call('POST', '/emails', { body: mail('x@customer.test') })).status).toBe(200)
    } finally {
      await h.close()
    }
  })

  test('pauses only the domain whose rates pass, when the account as a whole stays under', async () => {
    const h = await shop(await harness({ ...CAPTURE, MAILROOM_TRUST_MIN_SENDS: '10', MAILROOM_TRUST_BOUNCE_PERCENT: '15' }))
    try {
      await insertDomain(h.root, h.accountId, 'good.test')
      await sendAndBounce(h, 10, 2)
      await sendAndBounce(h, 10, 0, 'orders@good.test')
      expect(await h.scheduler.runNow('trust-review')).toEqual([{ accountId: h.accountId, from: 'trusted', to: 'trusted, paused:shop.test' }])
      expectError(await h.call('POST', '/emails', { body: mail('x@customer.test') }), 'trust_paused', 403)
      expect((await h.call('POST', '/emails', { body: mail('x@customer.test', { from: 'a@good.test' }) })).status).toBe(200)
    } finally {
      await h.close()
    }
  })

  test('promotes after the days at a level, a verified domain out of the sandbox and delivered sends above it', async () => {
    const h = await harness({ ...CAPTURE, MAILROOM_TRUST_PROMOTE_SENDS: '3' })
    try {
      await setStanding(h, { level: 'sandbox' })
      h.clock.advance(8 * DAY)
      // No verified domain yet: it stays in the sandbox.
      expect(await h.scheduler.runNow('trust-review')).toEqual([])
      await insertDomain(h.root, h.accountId, 'shop.test')
      expect(await h.scheduler.runNow('trust-review')).toEqual([{ accountId: h.accountId, from: 'sandbox', to: 'new' }])
      h.clock.advance(8 * DAY)
      expect(await h.scheduler.runNow('trust-review')).toEqual([])
      await sendAndBounce(h, 3, 0)
      expect(await h.scheduler.runNow('trust-review')).toEqual([{ accountId: h.accountId, from: 'new', to: 'established' }])
      const history = await h.root.db.q.select().from(trustChanges).where(eq(trustChanges.accountId, h.accountId))
      expect(history.at(-1)!.reason).toContain('promoted to established: 8 of 7 days at new')
    } finally {
      await h.close()
    }
  })
})

describe('sign-up and the operator’s command', () => {
  test('an account from open sign-up starts at the start level; the first account stays trusted', async () => {
    const h = await harness({ MAILROOM_OPEN_SIGNUP: 'true', MAILROOM_TRUST_START_LEVEL: 'new' })
    try {
      const pass = 'correct horse battery staple'
      const first = await h.call('POST', '/accounts', { key: null, body: { email: 'op@people.test', password: pass } })
      expect(first.body.account.id).toBe(h.accountId)
      const second = await h.call('POST', '/accounts', { key: null, body: { email: 'tenant@people.test', password: pass } })
      expect(second.status).toBe(201)
      expect((await readStanding(h.root.db.q, h.accountId)).level).toBe('trusted')
      expect(await readStanding(h.root.db.q, second.body.account.id)).toMatchObject({ level: 'new', state: 'active', stored: true })
    } finally {
      await h.close()
    }
  })

  test('`mailroom trust set` suspends, lifts and moves an account, settling its pending appeals', async () => {
    const h = await shop(await harness(CAPTURE), { state: 'suspended', stateReason: 'abuse' })
    try {
      const owner = await person(h)
      expectError(await h.call('POST', '/trust/appeal', { ...asCookie(owner.cookie, ORIGIN), body: { reason: 'a mistake' } }), 'staff_review_required', 403)
      expect(await trustCommand(h.root, ['set', h.accountId, 'active', 'reviewed the report'])).toBe(`${h.accountId}: suspended -> trusted`)
      const [a] = await h.root.db.q.select().from(trustAppeals)
      expect(a).toMatchObject({ status: 'decided', outcome: 'the operator set the account to active: reviewed the report' })
      // The cache heard of the change: the next send goes.
      expect((await h.call('POST', '/emails', { body: mail('x@customer.test') })).status).toBe(200)
      expect(await trustCommand(h.root, ['set', h.accountId, 'sandbox'])).toBe(`${h.accountId}: trusted -> sandbox`)
      expectError(await h.call('POST', '/emails', { body: mail('x@customer.test') }), 'account_sandboxed', 403)
      await expect(trustCommand(h.root, ['set', h.accountId, 'gold'])).rejects.toThrow('usage: mailroom trust set')
    } finally {
      await h.close()
    }
  })
})

// The rates are read an hour at a time (the event loop let go between hours); the
// hours must add up to the whole window exactly: nothing before `since`, nothing
// counted twice at a boundary, and the hour still open included.
test('send rates over a window of many hours count every send in it once, and none before it', async () => {
  const h = await shop(await harness(CAPTURE))
  const start = h.clock.now()
  // Sends at 0, 1, ... 29 hours: one exactly on an hour boundary of the window, the last in its open hour.
  for (let i = 0; i < 30; i++) {
    h.clock.set(start + i * HOUR)
    expect((await h.call('POST', '/emails', { body: mail(`c${i}@customer.test`) })).status).toBe(200)
  }
  const now = start + 29 * HOUR + 30 * 60_000
  const since = iso(start + 5 * HOUR)
  const [rates] = await sendRates(h.root.db.q, since, now, 'account')
  const expected = (await h.root.db.q.select({ id: deliveries.id }).from(deliveries)).length - 5
  expect(expected).toBe(25)
  expect(rates).toMatchObject({ id: h.accountId, sent: 25 })
  // The same through the old single read: one hour window past `now` gives one statement.
  const [once] = await sendRates(h.root.db.q, since, Date.parse(since), 'account')
  expect(once.sent).toBe(25)
  await h.close()
})

test('send rates over a quiet two months widen their steps and still count every send once', async () => {
  const h = await shop(await harness(CAPTURE))
  const start = h.clock.now()
  // Sends on days 0, 1, 2, 3, 5, 8, 13, 21, 34 and 55, each at a time that lands on some step's edge or inside one.
  const days = [0, 1, 2, 3, 5, 8, 13, 21, 34, 55]
  for (const [i, d] of days.entries()) {
    h.clock.set(start + d * DAY + (i % 3) * HOUR)
    expect((await h.call('POST', '/emails', { body: mail(`q${i}@customer.test`) })).status).toBe(200)
  }
  const now = start + 60 * DAY
  expect((await sendRates(h.root.db.q, iso(start), now, 'account'))[0]).toMatchObject({ id: h.accountId, sent: 10 })
  expect((await sendRates(h.root.db.q, iso(start + 3 * DAY), now, 'account'))[0].sent).toBe(7)
  await h.close()
})

test('rate steps follow the rows: a quiet month is a dozen statements, a busy hour is split', () => {
  let steps = 0
  for (let at = 0, width = HOUR; at < 30 * DAY; at += width, width = nextStep(width, 10)) steps++
  expect(steps).toBeLessThanOrEqual(12)
  expect(nextStep(HOUR, 42_000)).toBe(HOUR / 2)
  expect(nextStep(HOUR, 15_000)).toBe(HOUR)
  expect(nextStep(7 * DAY, 0)).toBe(7 * DAY)
  expect(nextStep(60_000, 1_000_000)).toBe(60_000)
})
