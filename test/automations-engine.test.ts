// Runs as a contact lives them: a trigger, waits served by the worker from their rows
// (the clock moved by hand), conditions, sends delivered through a real SMTP server,
// webhooks to a real HTTP receiver, restarts in the middle of a wait, and two workers
// racing for the same runs.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { simpleParser } from 'mailparser'
import { AutomationWorker } from '../src/automations/engine'
import { automationRuns, contacts, emails, segmentContacts } from '../src/db/tables'
import { DAY, iso } from '../src/lib/clock'
import { automation, contact, defineEvent, publishedTemplate, runFor, runsOf, sendEvent, trail } from './support/automations'
import { verifiedDomain } from './support/emails'
import { harness, type Harness } from './support/harness'
import { startSmtpSink, type SmtpSink } from './support/smtp-sink'

const T0 = Date.parse('2026-03-02T10:00:00.000Z')

/** A trigger, then the steps in order (no connections: the chain form). */
const steps = (event: string, ...rest: Record<string, unknown>[]) => [{ key: 'start', type: 'trigger', config: { event_name: event } }, ...rest]

describe('an event, a two-day wait, a condition and a send', () => {
  let sink: SmtpSink
  let dataDir: string
  beforeAll(async () => {
    sink = await startSmtpSink()
    dataDir = mkdtempSync(join(tmpdir(), 'mailroom-automations-'))
  })
  afterAll(async () => {
    await sink.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('the send happens once, delivered through SMTP, though the service restarts in the middle of the wait', async () => {
    const env = { MAILROOM_DATA_DIR: dataDir, MAILROOM_BOOTSTRAP_KEY: 'mr_automations_restart_key_0001', MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: sink.url(), MAILROOM_HOSTNAME: 'mx.mailroom.test' }
    const first = await harness(env)
    let a: { id: string }
    let ada: { id: string }
    let bob: { id: string }
    try {
      await verifiedDomain(first, 'acme.dev')
      await defineEvent(first.call, 'user.signed_up', { plan: 'string' })
      const tpl = await publishedTemplate(first.call)
      a = await automation(first.call, {
        name: 'Onboarding',
        status: 'enabled',
        steps: [
          { key: 'start', type: 'trigger', config: { event_name: 'user.signed_up' } },
          { key: 'wait', type: 'delay', config: { duration: '2 days' } },
          { key: 'is_pro', type: 'condition', config: { type: 'rule', field: 'event.plan', operator: 'eq', value: 'pro' } },
          { key: 'welcome', type: 'send_email', config: { template: { id: tpl.id, variables: { name: { var: 'contact.first_name' }, plan: { var: 'event.plan' } } } } },
        ],
        connections: [
          { from: 'start', to: 'wait', type: 'default' },
          { from: 'wait', to: 'is_pro' },
          { from: 'is_pro', to: 'welcome', type: 'condition_met' },
        ],
      })
      ada = await contact(first.call, 'ada@customer.test', { first_name: 'Ada' })
      bob = await contact(first.call, 'bob@customer.test', { first_name: 'Bob' })
      await sendEvent(first.call, 'user.signed_up', 'ada@customer.test', { plan: 'pro' })
      await sendEvent(first.call, 'user.signed_up', 'bob@customer.test', { plan: 'free' })

      expect(await first.automations.runOnce()).toBeGreaterThan(0)
      const waiting = await runsOf(first.call, a.id)
      expect(waiting.map((r) => [r.status, r.current_step, r.wake_at])).toEqual([
        ['running', 'wait', iso(T0 + 2 * DAY)],
        ['running', 'wait', iso(T0 + 2 * DAY)],
      ])
      expect(trail(runFor(waiting, ada.id))).toEqual(['start:completed', 'wait:waiting'])

      // A day in, nothing is due.
      first.clock.advance(DAY)
      expect(await first.automations.runOnce()).toBe(0)
      expect(await first.root.db.q.select().from(emails)).toEqual([])
    } finally {
      await first.close()
    }

    // The restart: a new process on the same data folder, its clock where the old one stopped.
    const second = await harness(env)
    try {
      second.clock.set(T0 + DAY)
      expect(await second.automations.runOnce()).toBe(0)
      second.clock.advance(DAY)
      // Step moves: two delays end, two conditions, one send.
      expect(await second.automations.runOnce()).toBe(5)
      await second.worker.runOnce()
      await sink.waitFor(1)
      expect(sink.messages.map((m) => m.to)).toEqual([['ada@customer.test']])
      const parsed = await simpleParser(sink.messages[0].raw)
      expect(parsed.subject).toBe('Welcome, Ada')
      expect(parsed.html).toContain('your plan is pro')

      const done = await runsOf(second.call, a!.id)
      const adaRun = runFor(done, ada!.id)
      expect(adaRun.status).toBe('completed')
      expect(trail(adaRun)).toEqual(['start:completed', 'wait:completed', 'is_pro:completed', 'welcome:completed'])
      expect(adaRun.steps[2].output).toEqual({ met: true })
      const emailId = adaRun.steps[3].output.email_id
      const email = await second.call('GET', `/emails/${emailId}`)
      expect(email.body).toMatchObject({ id: emailId, to: ['ada@customer.test'], last_event: 'delivered' })
      expect(email.body.tags).toEqual(expect.arrayContaining([{ name: 'automation_id', value: a!.id }, { name: 'automation_run_id', value: adaRun.id }]))
      const bobRun = runFor(done, bob!.id)
      expect(bobRun.status).toBe('completed')
      expect(trail(bobRun)).toEqual(['start:completed', 'wait:completed', 'is_pro:completed'])
      expect(bobRun.steps[2].output).toEqual({ met: false })

      // Nothing runs twice.
      second.clock.advance(DAY)
      expect(await second.automations.runOnce()).toBe(0)
      await second.worker.runOnce()
      expect(sink.messages).toHaveLength(1)
      expect(await second.root.db.q.select().from(emails)).toHaveLength(1)
    } finally {
      await second.close()
    }
  })
})

describe('the engine', () => {
  let h: Harness
  let tpl: { id: string }
  beforeAll(async () => {
    h = await harness()
    await verifiedDomain(h, 'acme.dev')
    tpl = await publishedTemplate(h.call)
  })
  afterAll(() => h.close())

  test('two workers racing for the same due runs send each run’s email once', async () => {
    await defineEvent(h.call, 'race.started')
    const a = await automation(h.call, { name: 'Race', status: 'enabled', steps: steps('race.started', { key: 'later', type: 'delay', config: { duration: '1 hour' } }, { key: 'mail', type: 'send_email', config: { template: { id: tpl.id } } }) })
    const people = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'].map((n) => `${n}@customer.test`)
    for (const p of people) {
      await contact(h.call, p)
      await sendEvent(h.call, 'race.started', p)
    }
    const one = new AutomationWorker(h.root, { batchSize: 2 })
    const two = new AutomationWorker(h.root, { batchSize: 3 })
    await Promise.all([one.runOnce(), two.runOnce()])
    h.clock.advance(3_600_000)
    await Promise.all([one.runOnce(), two.runOnce(), h.automations.runOnce()])
    const sent = (await h.root.db.q.select({ to: emails.to }).from(emails)).map((e) => e.to[0]).filter((to) => people.includes(to))
    expect(sent.sort()).toEqual([...people].sort())
    const runs = await runsOf(h.call, a.id)
    expect(runs.map((r) => r.status)).toEqual(people.map(() => 'completed'))
    await one.stop()
    await two.stop()
  })

  test('started in the background, the worker takes what is waiting by itself, and stop() cuts its idle wait short', async () => {
    await defineEvent(h.call, 'background.test')
    await automation(h.call, { name: 'Background', status: 'enabled', steps: steps('background.test', { key: 'name', type: 'contact_update', config: { first_name: 'Seen' } }) })
    const c = await contact(h.call, 'background@customer.test')
    await sendEvent(h.call, 'background.test', 'background@customer.test')
    // An idle worker would look again only after a minute: stop() must not wait for it.
    const worker = new AutomationWorker(h.root, { pollMs: 60_000 })
    worker.start()
    const firstName = async () => (await h.root.db.q.select({ f: contacts.firstName }).from(contacts).where(eq(contacts.id, c.id)))[0].f
    try {
      for (let i = 0; i < 200 && (await firstName()) !== 'Seen'; i++) await Bun.sleep(10)
      expect(await firstName()).toBe('Seen')
    } finally {
      await worker.stop()
    }
    expect(worker.running).toBe(false)
  })

  test('storage failing between a send and the run’s move keeps neither; the step runs again and sends once', async () => {
    await defineEvent(h.call, 'crash.test')
    const a = await automation(h.call, { name: 'Crash', status: 'enabled', steps: steps('crash.test', { key: 'mail', type: 'send_email', config: { template: { id: tpl.id } } }) })
    await contact(h.call, 'crash@customer.test')
    const worker = new AutomationWorker(h.root)
    // The commit of the send's step fails once, as a lost disk or server would make it.
    const record = (worker as unknown as { record: (...args: unknown[]) => Promise<void> }).record.bind(worker)
    let failed = 0
    ;(worker as unknown as { record: (...args: unknown[]) => Promise<void> }).record = async (...args) => {
      if ((args[3] as { type: string }).type === 'send_email' && !failed++) throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' })
      return record(...args)
    }
    await sendEvent(h.call, 'crash.test', 'crash@customer.test')
    await worker.runOnce()
    const sentTo = () => h.root.db.q.select().from(emails).where(eq(emails.to, ['crash@customer.test']))
    expect(await sentTo()).toEqual([])
    let [run] = await runsOf(h.call, a.id)
    expect(run).toMatchObject({ status: 'running', current_step: 'mail', wake_at: iso(h.clock.now() + 30_000) })
    h.clock.advance(30_000)
    await worker.runOnce()
    ;[run] = await runsOf(h.call, a.id)
    expect(run.status).toBe('completed')
    const sent = await sentTo()
    expect(sent.map((e) => e.id)).toEqual([run.steps[1].output.email_id])
    await worker.stop()
  })

  test('a run another worker leased is left alone until the lease runs out', async () => {
    await defineEvent(h.call, 'lease.test')
    const a = await automation(h.call, { name: 'Lease', status: 'enabled', steps: steps('lease.test', { key: 'mail', type: 'send_email', config: { template: { id: tpl.id } } }) })
    const c = await contact(h.call, 'leased@customer.test')
    await sendEvent(h.call, 'lease.test', 'leased@customer.test')
    // The signal makes the run; a worker that died holding it leaves its lease behind.
    const crashed = new AutomationWorker(h.root)
    await (crashed as unknown as { takeSignals(): Promise<number> }).takeSignals()
    const until = iso(h.clock.now() + 120_000)
    await h.root.db.write((tx) => tx.update(automationRuns).set({ leaseOwner: 'crashed-worker', leaseUntil: until }).where(eq(automationRuns.automationId, a.id)))
    expect(await h.automations.runOnce()).toBe(0)
    h.clock.advance(120_001)
    expect(await h.automations.runOnce()).toBe(1)
    const [run] = await runsOf(h.call, a.id)
    expect(run).toMatchObject({ status: 'completed', contact_id: c.id })
    expect(await h.root.db.q.select().from(emails).where(eq(emails.to, ['leased@customer.test']))).toHaveLength(1)
  })

  test('a run keeps the version it started on; an edit makes a new version for the runs after it', async () => {
    await defineEvent(h.call, 'version.test')
    const a = await automation(h.call, {
      name: 'Versions',
      status: 'enabled',
      steps: steps('version.test', { key: 'pause', type: 'delay', config: { duration: '1 day' } }, { key: 'name', type: 'contact_update', config: { first_name: 'One' } }),
    })
    const early = await contact(h.call, 'early@customer.test')
    await sendEvent(h.call, 'version.test', 'early@customer.test')
    await h.automations.runOnce()
    const edited = await h.call('PATCH', `/automations/${a.id}`, {
      body: { steps: steps('version.test', { key: 'pause', type: 'delay', config: { duration: '1 day' } }, { key: 'name', type: 'contact_update', config: { first_name: 'Two', last_name: { var: 'event.surname' } } }) },
    })
    expect(edited.body).toMatchObject({ version: 2 })
    const late = await contact(h.call, 'late@customer.test')
    await sendEvent(h.call, 'version.test', 'late@customer.test', { surname: 'Lovelace' })
    await h.automations.runOnce()
    h.clock.advance(DAY)
    await h.automations.runOnce()
    const names = async (id: string) => (await h.root.db.q.select({ first: contacts.firstName, last: contacts.lastName }).from(contacts).where(eq(contacts.id, id)))[0]
    expect(await names(early.id)).toEqual({ first: 'One', last: null })
    expect(await names(late.id)).toEqual({ first: 'Two', last: 'Lovelace' })
    const runs = await runsOf(h.call, a.id)
    expect([runFor(runs, early.id).version, runFor(runs, late.id).version]).toEqual([1, 2])
    expect(runFor(runs, late.id).steps[2].output).toEqual({ changed: ['first_name', 'last_name'] })
  })

  test('disabling ends the runs in progress; what happened while disabled starts nothing, even read after enabling', async () => {
    await defineEvent(h.call, 'pause.test')
    const a = await automation(h.call, { name: 'Pause', status: 'enabled', steps: steps('pause.test', { key: 'pause', type: 'delay', config: { duration: '1 day' } }, { key: 'mail', type: 'send_email', config: { template: { id: tpl.id } } }) })
    await contact(h.call, 'paused@customer.test')
    await sendEvent(h.call, 'pause.test', 'paused@customer.test')
    await h.automations.runOnce()
    expect((await h.call('POST', `/automations/${a.id}/disable`)).body).toMatchObject({ status: 'disabled' })
    const [run] = await runsOf(h.call, a.id)
    expect(run).toMatchObject({ status: 'cancelled', current_step: 'pause', wake_at: null })
    expect(trail(run)).toEqual(['start:completed', 'pause:cancelled'])
    // Sent while disabled, not read until after enabling again.
    await sendEvent(h.call, 'pause.test', 'paused@customer.test')
    h.clock.advance(1000)
    expect((await h.call('POST', `/automations/${a.id}/enable`)).body).toMatchObject({ status: 'enabled' })
    h.clock.advance(DAY)
    await h.automations.runOnce()
    expect(await runsOf(h.call, a.id)).toHaveLength(1)
    await sendEvent(h.call, 'pause.test', 'paused@customer.test')
    await h.automations.runOnce()
    expect((await runsOf(h.call, a.id)).map((r) => r.status)).toEqual(['cancelled', 'running'])
    expect(await h.root.db.q.select().from(emails).where(eq(emails.to, ['paused@customer.test']))).toEqual([])
  })

  test('a contact who unsubscribed is skipped by a send; one deleted mid-wait ends the run as cancelled', async () => {
    await defineEvent(h.call, 'skip.test')
    const a = await automation(h.call, { name: 'Skip', status: 'enabled', steps: steps('skip.test', { key: 'pause', type: 'delay', config: { duration: '1 hour' } }, { key: 'mail', type: 'send_email', config: { template: { id: tpl.id } } }) })
    const quiet = await contact(h.call, 'quiet@customer.test', { unsubscribed: true })
    const gone = await contact(h.call, 'gone@customer.test')
    await sendEvent(h.call, 'skip.test', 'quiet@customer.test')
    await sendEvent(h.call, 'skip.test', 'gone@customer.test')
    await h.automations.runOnce()
    expect((await h.call('DELETE', `/contacts/${gone.id}`)).status).toBe(200)
    h.clock.advance(3_600_000)
    await h.automations.runOnce()
    const runs = await runsOf(h.call, a.id)
    const q = runFor(runs, quiet.id)
    expect(q.status).toBe('completed')
    expect(q.steps[2]).toMatchObject({ key: 'mail', status: 'skipped', output: { reason: 'contact_unsubscribed' } })
    const g = runFor(runs, gone.id)
    expect(g).toMatchObject({ status: 'cancelled', current_step: 'mail' })
    expect(g.steps[2]).toMatchObject({ key: 'mail', status: 'cancelled', error: { code: 'not_found' } })
    expect(await h.root.db.q.select().from(emails).where(eq(emails.to, ['quiet@customer.test']))).toEqual([])
  })

  test('a send the send checks refuse fails the run with their error, and writes no email', async () => {
    await defineEvent(h.call, 'refused.test')
    const elsewhere = await publishedTemplate(h.call, { name: 'Unverified sender', from: 'Other <hi@unverified.dev>' })
    const a = await automation(h.call, { name: 'Refused', status: 'enabled', steps: steps('refused.test', { key: 'mail', type: 'send_email', config: { template: { id: elsewhere.id } } }) })
    await contact(h.call, 'refused@customer.test')
    await sendEvent(h.call, 'refused.test', 'refused@customer.test')
    await h.automations.runOnce()
    const [run] = await runsOf(h.call, a.id)
    expect(run).toMatchObject({ status: 'failed', current_step: 'mail' })
    expect(run.steps[1]).toMatchObject({ key: 'mail', status: 'failed', error: { code: 'domain_not_verified' } })
    expect(await h.root.db.q.select().from(emails).where(eq(emails.to, ['refused@customer.test']))).toEqual([])
  })

  test('a contact created or a topic answered starts runs; a trigger filter picks which', async () => {
    expect((await h.call('POST', '/contact-properties', { body: { key: 'welcomed', type: 'boolean' } })).status).toBe(201)
    const welcome = await automation(h.call, {
      name: 'Welcome new contacts',
      status: 'enabled',
      steps: steps('mailroom:contact.created', { key: 'mark', type: 'contact_update', config: { properties: { welcomed: true } } }),
    })
    const topic = (await h.call('POST', '/topics', { body: { name: 'Product news', default_subscription: 'opt_out' } })).body.id as string
    const segmentId = (await h.call('POST', '/segments', { body: { name: 'Lapsed' } })).body.id as string
    const optedOut = await automation(h.call, {
      name: 'Opted out of news',
      status: 'enabled',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'mailroom:topic.answered', filter_rule: { type: 'and', rules: [{ field: 'event.topic_id', operator: 'eq', value: topic }, { field: 'event.subscribed', operator: 'eq', value: false }] } } },
        { key: 'lapse', type: 'add_to_segment', config: { segment_id: segmentId } },
      ],
    })
    const zed = await contact(h.call, 'zed@customer.test')
    await h.automations.runOnce()
    expect((await h.call('GET', `/contacts/${zed.id}`)).body.properties).toEqual({ welcomed: true })
    expect(await runsOf(h.call, welcome.id)).toHaveLength(1)

    // Yes starts nothing (the filter); no starts one; the same no again is no new answer.
    await h.call('PATCH', `/contacts/${zed.id}/topics`, { body: { topics: [{ topic_id: topic, subscribed: true }] } })
    await h.call('PATCH', `/contacts/${zed.id}/topics`, { body: { topics: [{ topic_id: topic, subscribed: false }] } })
    await h.call('PATCH', `/contacts/${zed.id}/topics`, { body: { topics: [{ topic_id: topic, subscribed: false }] } })
    await h.automations.runOnce()
    const runs = await runsOf(h.call, optedOut.id)
    expect(runs.map((r) => [r.status, r.steps[0].output.payload])).toEqual([['completed', { topic_id: topic, subscribed: false }]])
    expect(await h.root.db.q.select({ c: segmentContacts.contactId }).from(segmentContacts).where(eq(segmentContacts.segmentId, segmentId))).toEqual([{ c: zed.id }])
  })
})

describe('waiting for an event, and webhooks', () => {
  let h: Harness
  let receiver: ReturnType<typeof Bun.serve>
  const received: { headers: Headers; body: any }[] = []
  let answers: number[] = []
  beforeAll(async () => {
    receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        received.push({ headers: req.headers, body: await req.json() })
        return new Response('ok', { status: answers.shift() ?? 200 })
      },
    })
    h = await harness({ MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' })
    await defineEvent(h.call, 'order.placed', { order_id: 'string' })
    await defineEvent(h.call, 'payment.completed', { order_id: 'string', amount: 'number', status: 'string' })
    expect((await h.call('POST', '/contact-properties', { body: { key: 'last_payment', type: 'number' } })).status).toBe(201)
  })
  afterAll(async () => {
    await h.close()
    receiver.stop(true)
  })

  const hook = () => `http://127.0.0.1:${receiver.port}/automation`

  test('a matching event wakes the wait; a payment from before the wait, a non-matching one and a late one do not', async () => {
    const a = await automation(h.call, {
      name: 'Payment follow-up',
      status: 'enabled',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'order.placed' } },
        { key: 'paid', type: 'wait_for_event', config: { event_name: 'payment.completed', timeout: '3 days', filter_rule: { field: 'event.status', operator: 'eq', value: 'succeeded' } } },
        { key: 'big', type: 'condition', config: { field: 'wait_events.payment.completed.amount', operator: 'gte', value: 40 } },
        { key: 'note', type: 'contact_update', config: { properties: { last_payment: { var: 'wait_events.payment.completed.amount' } } } },
        { key: 'chase', type: 'webhook', config: { url: hook(), headers: { authorization: 'Bearer hook-secret' } } },
      ],
      connections: [
        { from: 'start', to: 'paid' },
        { from: 'paid', to: 'big', type: 'event_received' },
        { from: 'paid', to: 'chase', type: 'timeout' },
        { from: 'big', to: 'note', type: 'condition_met' },
      ],
    })
    const carol = await contact(h.call, 'carol@customer.test')
    const dan = await contact(h.call, 'dan@customer.test')
    const eve = await contact(h.call, 'eve@customer.test')
    // Dan's payment comes before his order: it is not what the wait waits for.
    await sendEvent(h.call, 'payment.completed', 'dan@customer.test', { order_id: 'D1', amount: 99, status: 'succeeded' })
    for (const p of ['carol', 'dan', 'eve']) await sendEvent(h.call, 'order.placed', `${p}@customer.test`, { order_id: `${p}-1` })
    await h.automations.runOnce()
    // Carol's first payment fails (no match); her second succeeds a day later.
    await sendEvent(h.call, 'payment.completed', 'carol@customer.test', { order_id: 'carol-1', amount: 42, status: 'failed' })
    await h.automations.runOnce()
    let runs = await runsOf(h.call, a.id)
    expect(runFor(runs, carol.id)).toMatchObject({ status: 'running', current_step: 'paid', wake_at: iso(T0 + 3 * DAY) })
    h.clock.advance(DAY)
    await sendEvent(h.call, 'payment.completed', 'carol@customer.test', { order_id: 'carol-1', amount: 42, status: 'succeeded' })
    await h.automations.runOnce()
    runs = await runsOf(h.call, a.id)
    const c = runFor(runs, carol.id)
    expect(c.status).toBe('completed')
    expect(trail(c)).toEqual(['start:completed', 'paid:completed', 'big:completed', 'note:completed'])
    expect(c.steps[1].output).toMatchObject({ received: true, payload: { amount: 42, status: 'succeeded' } })
    expect((await h.call('GET', `/contacts/${carol.id}`)).body.properties).toEqual({ last_payment: 42 })

    // Past the deadline: Eve's payment comes too late, though before the worker looks.
    h.clock.advance(2 * DAY + 1000)
    await sendEvent(h.call, 'payment.completed', 'eve@customer.test', { order_id: 'eve-1', amount: 10, status: 'succeeded' })
    await h.automations.runOnce()
    runs = await runsOf(h.call, a.id)
    for (const who of [dan, eve]) {
      const r = runFor(runs, who.id)
      expect(trail(r)).toEqual(['start:completed', 'paid:completed', 'chase:completed'])
      expect(r.steps[1].output).toMatchObject({ received: false })
      expect(r.steps[2].output).toMatchObject({ status: 200 })
    }
    expect(received.map((x) => x.body.data.contact.email).sort()).toEqual(['dan@customer.test', 'eve@customer.test'])
    const call = received.find((x) => x.body.data.contact.email === 'dan@customer.test')!
    expect(call.headers.get('authorization')).toBe('Bearer hook-secret')
    expect(call.headers.get('content-type')).toBe('application/json')
    expect(call.headers.get('idempotency-key')).toBe(`${runFor(runs, dan.id).id}:chase`)
    expect(call.body).toMatchObject({ type: 'automation.webhook', data: { automation_id: a.id, run_id: runFor(runs, dan.id).id, step: 'chase', event: { name: 'order.placed', payload: { order_id: 'dan-1' } } } })
  })

  test('a webhook that fails is tried again after 1 and 10 minutes; a third failure fails the run', async () => {
    await defineEvent(h.call, 'hook.test')
    const a = await automation(h.call, { name: 'Hook', status: 'enabled', steps: steps('hook.test', { key: 'tell', type: 'webhook', config: { url: hook(), timeout: '5 seconds' } }) })
    const ok = await contact(h.call, 'hook-ok@customer.test')
    received.length = 0
    answers = [500, 503]
    await sendEvent(h.call, 'hook.test', 'hook-ok@customer.test')
    await h.automations.runOnce()
    let [run] = await runsOf(h.call, a.id)
    expect(run).toMatchObject({ status: 'running', current_step: 'tell', wake_at: iso(h.clock.now() + 60_000) })
    expect(run.steps[1]).toMatchObject({ status: 'waiting', attempts: 1, error: { code: 'webhook_failed' } })
    h.clock.advance(60_000)
    await h.automations.runOnce()
    h.clock.advance(10 * 60_000)
    await h.automations.runOnce()
    ;[run] = await runsOf(h.call, a.id)
    expect(run).toMatchObject({ status: 'completed', contact_id: ok.id })
    expect(run.steps[1]).toMatchObject({ status: 'completed', attempts: 3, output: { status: 200 }, error: null })
    expect(received).toHaveLength(3)
    expect(new Set(received.map((x) => x.headers.get('idempotency-key'))).size).toBe(1)

    await contact(h.call, 'hook-down@customer.test')
    answers = [500, 500, 500]
    await sendEvent(h.call, 'hook.test', 'hook-down@customer.test')
    await h.automations.runOnce()
    h.clock.advance(60_000)
    await h.automations.runOnce()
    h.clock.advance(10 * 60_000)
    await h.automations.runOnce()
    const failed = (await runsOf(h.call, a.id))[1]
    expect(failed).toMatchObject({ status: 'failed', current_step: 'tell' })
    expect(failed.steps[1]).toMatchObject({ status: 'failed', attempts: 3, error: { code: 'webhook_failed', message: expect.stringContaining('500') } })
  })
})

test('without MAILROOM_ALLOW_PRIVATE_WEBHOOKS a webhook step may not reach a private address', async () => {
  const h = await harness()
  let hits = 0
  const receiver = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => (hits++, new Response('ok')) })
  try {
    await defineEvent(h.call, 'private.test')
    const refused = await h.call('POST', '/automations', { body: { name: 'Plain http', steps: steps('private.test', { key: 'tell', type: 'webhook', config: { url: `http://127.0.0.1:${receiver.port}/` } }) } })
    expect(refused.status).toBe(422)
    expect(refused.body.message).toContain('https')
    const a = await automation(h.call, { name: 'Loopback', status: 'enabled', steps: steps('private.test', { key: 'tell', type: 'webhook', config: { url: `https://127.0.0.1:${receiver.port}/` } }) })
    await contact(h.call, 'private@customer.test')
    await sendEvent(h.call, 'private.test', 'private@customer.test')
    for (const wait of [0, 60_000, 10 * 60_000]) {
      h.clock.advance(wait)
      await h.automations.runOnce()
    }
    const [run] = await runsOf(h.call, a.id)
    expect(run.status).toBe('failed')
    expect(run.steps[1].error.message).toContain('loopback')
    expect(hits).toBe(0)
  } finally {
    receiver.stop(true)
    await h.close()
  }
})
