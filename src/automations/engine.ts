// The automation engine: a background worker that moves runs through their
// version's graph, one step per transaction.
//
//   signal (an event, a contact created, a topic answered; written with the change)
//     -> a run of each enabled automation it triggers (the trigger logged), and the
//        contact's runs waiting for it woken; the signal marked processed. One transaction.
//   run due (wake_at passed) --claim (lease)--> its current step:
//     condition, send_email, contact_update, contact_delete, add_to_segment
//                                    -> effect + log + move to the next step   (one transaction)
//     delay, wait_for_event (first time) -> log `waiting` + wake_at = the deadline
//     delay (woken)                  -> log completed + move on
//     wait_for_event (woken)         -> a signal since the wait began that matches: `event_received`;
//                                       none and the deadline passed: `timeout`; else back to sleep
//     webhook                        -> POST outside any transaction, then the result as above;
//                                       a failure waits 1 minute, then 10, then fails the run
//   no next step -> completed; a step that fails -> the run fails (the error in its log).
//
// A send and the run's move past it commit together, so a crash either keeps both
// or neither: the step runs again and sends once. Waits are rows with a wake_at,
// so a restart picks them up where they were.
import { and, asc, eq, gt, inArray, isNull, lt, lte, max, or } from 'drizzle-orm'
import { INSTANCE_ID } from '../instance'
import { deleteContact, updateContact } from '../contacts/service'
import { addMemberships, assertStatic, findSegment } from '../contacts/segments'
import { isTransientStorageError, type Executor, type Tx } from '../db'
import { automationRuns, automationRunSteps, automations, automationSignals, contacts, type RunStepStatus } from '../db/tables'
import { inTransaction, type Deps, type RootDeps } from '../deps'
import { sendEmail } from '../emails/send'
import { AppError } from '../errors/app-error'
import { systemActor } from '../lib/actor'
import { iso } from '../lib/clock'
import { BackgroundLoop } from '../lib/background-loop'
import { WebhookClient, type AttemptResult } from '../webhooks/client'
import { WebhookGuard } from '../webhooks/guard'
import { nextStep, parseDuration, waitOf, webhookTimeoutOf, type Outcome } from './graph'
import { contactView, holds, resolve, type RunData } from './rules'
import type { AutomationStep } from './schema'
import { versionById, type RunRow, type VersionRow } from './service'

export interface AutomationWorkerOptions {
  /** Lease owner name; unique per worker. */
  id?: string
  /** Most signals or runs taken at once. */
  batchSize?: number
  /** How long a claim holds a run (a webhook step holds it through its request). */
  leaseMs?: number
  /** How often an idle worker looks for work (real time). */
  pollMs?: number
  /** Extra certificate authorities for webhook steps (tests). */
  webhookCa?: string
}

type Step<T extends AutomationStep['type']> = Extract<AutomationStep, { type: T }>

/** Waits before a webhook step's second and third attempts. */
const WEBHOOK_RETRY_MS = [60_000, 10 * 60_000]
const WAIT_BATCH = 100
const VERSION_CACHE = 500

/** A step that needs the contact found it gone: the run ends, cancelled. */
class ContactGone extends Error {}

/** What a step came to, for the log and the move that follow it in the same transaction. */
type Result =
  | { kind: 'next'; outcome: Outcome; status?: 'completed' | 'skipped'; output: Record<string, unknown>; waitEvents?: RunRow['waitEvents']; attempts?: number }
  | { kind: 'park'; output: Record<string, unknown>; deadline?: number; wakeAt: number; waitingFor?: string; waitAfter?: number; error?: { code: string; message: string }; attempts?: number }
  | { kind: 'end'; status: 'failed' | 'cancelled'; error: { code: string; message: string }; attempts?: number }

export class AutomationWorker extends BackgroundLoop {
  readonly id: string
  private readonly batchSize: number
  private readonly leaseMs: number
  private readonly pollMs: number
  private readonly guard: WebhookGuard
  /** Versions never change, so each is read once (a bounded cache). */
  private readonly versions = new Map<string, VersionRow>()

  constructor(private readonly root: RootDeps, private readonly opts: AutomationWorkerOptions = {}) {
    super()
    this.id = opts.id ?? `${INSTANCE_ID}:automations:${root.ids.uuid()}`
    this.batchSize = opts.batchSize ?? 20
    this.leaseMs = opts.leaseMs ?? 2 * 60_000
    this.pollMs = opts.pollMs ?? 500
    this.guard = new WebhookGuard(root.config)
  }

  /** Lets the step in progress finish and hands back every lease this worker holds. */
  async stop(): Promise<void> {
    await this.halt()
    await this.root.db
      .write((tx) => tx.update(automationRuns).set({ leaseOwner: null, leaseUntil: null }).where(eq(automationRuns.leaseOwner, this.id)))
      .catch((e) => this.root.log.error('could not hand back automation leases', { error: (e as Error).message }))
  }

  /** Takes every signal and every due run until none is left (tests drive it with a ManualClock); returns how many it took. */
  async runOnce(): Promise<number> {
    let total = 0
    for (;;) {
      const n = await this.tick()
      if (!n) return total
      total += n
    }
  }

  protected async run() {
    while (this.running) {
      try {
        if (!(await this.tick())) await this.sleep(this.pollMs)
      } catch (e) {
        this.root.log.error('automation loop error', { error: (e as Error).message })
        await this.sleep(1000)
      }
    }
  }

  private async tick(): Promise<number> {
    return (await this.takeSignals()) + (await this.takeRuns())
  }

  private async version(q: Executor, id: string): Promise<VersionRow> {
    let v = this.versions.get(id)
    if (!v) {
      v = await versionById(q, id)
      this.versions.set(id, v)
      if (this.versions.size > VERSION_CACHE) this.versions.delete(this.versions.keys().next().value!)
    }
    return v
  }

  // ---- signals -------------------------------------------------------------

  private async takeSignals(): Promise<number> {
    const pending = await this.root.db.q
      .select({ id: automationSignals.id })
      .from(automationSignals)
      .where(isNull(automationSignals.processedAt))
      .orderBy(asc(automationSignals.id))
      .limit(this.batchSize)
    for (const { id } of pending) {
      try {
        await inTransaction(this.root, (deps) => this.startRuns(deps, id))
      } catch (e) {
        if (isTransientStorageError(e)) throw e
        // A signal that cannot be processed must not hold up the ones behind it.
        this.root.log.error('automation signal failed', { signal_id: id, error: (e as Error).stack ?? String(e) })
        await this.root.db.write((tx) => tx.update(automationSignals).set({ processedAt: iso(this.root.clock.now()) }).where(eq(automationSignals.id, id)))
      }
    }
    return pending.length
  }

  /** One signal, once: wakes the contact's runs waiting for it and starts a run of each enabled automation it triggers. */
  private async startRuns(deps: Deps, signalId: number) {
    const at = iso(deps.clock.now())
    const [s] = await deps.db.write((tx) =>
      tx
        .update(automationSignals)
        .set({ processedAt: at })
        .where(and(eq(automationSignals.id, signalId), isNull(automationSignals.processedAt)))
        .returning(),
    )
    if (!s) return
    await deps.db.write(async (tx) => {
      await tx
        .update(automationRuns)
        .set({ wakeAt: at, updatedAt: at })
        .where(and(eq(automationRuns.accountId, s.accountId), eq(automationRuns.contactId, s.contactId), eq(automationRuns.waitingFor, s.name), eq(automationRuns.status, 'running')))
      const triggered = await tx
        .select()
        .from(automations)
        .where(and(eq(automations.accountId, s.accountId), eq(automations.triggerEvent, s.name), eq(automations.status, 'enabled')))
      if (!triggered.length) return
      const [contact] = await tx.select().from(contacts).where(and(eq(contacts.id, s.contactId), eq(contacts.accountId, s.accountId)))
      if (!contact) return
      for (const a of triggered) {
        // What happened before the automation was enabled starts nothing, however late it is read.
        if (a.enabledAt && s.createdAt < a.enabledAt) continue
        const v = await this.version(tx, a.versionId)
        const trigger = v.steps.find((x): x is Step<'trigger'> => x.type === 'trigger')!
        if (trigger.config.filter_rule && !holds(trigger.config.filter_rule, { event: s.payload, contact, waitEvents: {} })) continue
        const next = nextStep(v.connections, trigger.key, 'default')
        const runId = deps.ids.uuid()
        await tx.insert(automationRuns).values({
          id: runId,
          accountId: s.accountId,
          automationId: a.id,
          versionId: v.id,
          contactId: contact.id,
          status: next ? 'running' : 'completed',
          triggerEvent: s.name,
          triggerPayload: s.payload,
          triggerSignalId: s.id,
          waitEvents: {},
          cursor: next,
          stepSeq: 0,
          stepLogId: null,
          waitingFor: null,
          waitAfter: null,
          deadline: null,
          wakeAt: next ? at : null,
          leaseOwner: null,
          leaseUntil: null,
          startedAt: at,
          completedAt: next ? null : at,
          createdAt: at,
          updatedAt: at,
        })
        await tx.insert(automationRunSteps).values({
          id: deps.ids.uuid(),
          runId,
          accountId: s.accountId,
          stepKey: trigger.key,
          type: 'trigger',
          status: 'completed',
          attempts: 1,
          output: { event: s.name, payload: s.payload, occurrence_id: s.occurrenceId },
          error: null,
          startedAt: at,
          completedAt: at,
          createdAt: at,
        })
      }
    })
  }

  // ---- runs ----------------------------------------------------------------

  private async takeRuns(): Promise<number> {
    const now = iso(this.root.clock.now())
    const until = iso(this.root.clock.now() + this.leaseMs)
    const claimed = await this.root.db.write((tx) => {
      const due = tx
        .select({ id: automationRuns.id })
        .from(automationRuns)
        .where(and(eq(automationRuns.status, 'running'), lte(automationRuns.wakeAt, now), or(isNull(automationRuns.leaseUntil), lt(automationRuns.leaseUntil, now))))
        .orderBy(asc(automationRuns.wakeAt))
        .limit(this.batchSize)
      return tx.update(automationRuns).set({ leaseOwner: this.id, leaseUntil: until }).where(inArray(automationRuns.id, due)).returning()
    })
    await Promise.all(claimed.map((r) => this.advance(r)))
    return claimed.length
  }

  /** One step of a claimed run; what it did and where the run goes next commit together. */
  private async advance(run: RunRow) {
    const v = await this.version(this.root.db.q, run.versionId)
    const step = v.steps.find((s) => s.key === run.cursor)!
    try {
      const called = step.type === 'webhook' ? await this.callWebhook(run, step) : undefined
      await inTransaction(this.root, async (deps) => {
        const held = await this.hold(deps, run)
        if (!held) return
        let result: Result
        try {
          result = await this.execute(deps, held, step, called)
        } catch (e) {
          if (!(e instanceof ContactGone)) throw e
          result = { kind: 'end', status: 'cancelled', error: { code: 'not_found', message: `Contact ${held.contactId} was deleted; the run ends here.` } }
        }
        await this.record(deps, held, v, step, result)
      })
    } catch (e) {
      if (isTransientStorageError(e)) {
        // Storage failed for a moment: nothing was written; the step runs again shortly.
        await this.root.db
          .write((tx) => tx.update(automationRuns).set({ leaseOwner: null, leaseUntil: null, wakeAt: iso(this.root.clock.now() + 30_000) }).where(and(eq(automationRuns.id, run.id), eq(automationRuns.leaseOwner, this.id))))
          .catch(() => undefined)
        return
      }
      const error = e instanceof AppError ? { code: e.code, message: e.message } : { code: 'internal_server_error', message: 'An unexpected error stopped this step; it was logged.' }
      if (!(e instanceof AppError)) this.root.log.error('automation step failed', { run_id: run.id, step: step.key, error: (e as Error).stack ?? String(e) })
      // The step's own writes were undone with its transaction; the failure is recorded in a new one.
      await inTransaction(this.root, async (deps) => {
        const held = await this.hold(deps, run)
        if (held) await this.record(deps, held, v, step, { kind: 'end', status: 'failed', error })
      }).catch((err) => this.root.log.error('could not record an automation failure', { run_id: run.id, error: (err as Error).message }))
    }
  }

  /** The run, still leased by this worker at the same step (else a disable, a delete or another worker came first). */
  private async hold(deps: Deps, run: RunRow): Promise<RunRow | undefined> {
    const [held] = await deps.db.write((tx) =>
      tx
        .update(automationRuns)
        .set({ updatedAt: iso(deps.clock.now()) })
        .where(and(eq(automationRuns.id, run.id), eq(automationRuns.leaseOwner, this.id), eq(automationRuns.stepSeq, run.stepSeq), eq(automationRuns.status, 'running')))
        .returning(),
    )
    return held
  }

  private async data(q: Executor, run: RunRow): Promise<RunData> {
    const [contact] = await q.select().from(contacts).where(and(eq(contacts.id, run.contactId), eq(contacts.accountId, run.accountId)))
    return { event: run.triggerPayload, contact: contact ?? null, waitEvents: run.waitEvents }
  }

  private async execute(deps: Deps, run: RunRow, step: AutomationStep, called?: AttemptResult): Promise<Result> {
    const now = deps.clock.now()
    const data = await this.data(deps.db.q, run)
    const actor = systemActor(run.accountId)
    const contact = () => {
      if (!data.contact) throw new ContactGone()
      return data.contact
    }
    switch (step.type) {
      case 'trigger':
        throw new Error('a run never stands on its trigger: it starts on the step after it')
      case 'delay': {
        if (run.stepLogId) return { kind: 'next', outcome: 'default', output: { waited_until: run.deadline } }
        const until = now + parseDuration(step.config.duration, 'duration')
        return { kind: 'park', output: { until: iso(until) }, deadline: until, wakeAt: until }
      }
      case 'wait_for_event':
        return this.waitForEvent(deps.db.q, run, step, data, now)
      case 'condition': {
        const met = holds(step.config, data)
        return { kind: 'next', outcome: met ? 'condition_met' : 'condition_not_met', output: { met } }
      }
      case 'send_email': {
        const c = step.config
        const to = contact()
        if (to.unsubscribed) return { kind: 'next', outcome: 'default', status: 'skipped', output: { reason: 'contact_unsubscribed' } }
        const variables: Record<string, string | number | boolean> = {}
        for (const [k, raw] of Object.entries(c.template.variables ?? {})) {
          const value = resolve(raw, data)
          if (value === undefined || value === null) continue
          variables[k] = typeof value === 'object' ? JSON.stringify(value) : (value as string | number | boolean)
        }
        const sent = await sendEmail(deps, actor, {
          to: to.email,
          template: { id: c.template.id, variables },
          ...(c.from !== undefined ? { from: c.from } : {}),
          ...(c.subject !== undefined ? { subject: c.subject } : {}),
          ...(c.reply_to !== undefined ? { reply_to: c.reply_to } : {}),
          ...(c.topic_id !== undefined ? { topic_id: c.topic_id } : {}),
          tags: [
            { name: 'automation_id', value: run.automationId },
            { name: 'automation_run_id', value: run.id },
          ],
        })
        return { kind: 'next', outcome: 'default', output: { email_id: sent.id, template_id: c.template.id } }
      }
      case 'contact_update': {
        const to = contact()
        const input = contactChange(step, data)
        await updateContact(deps, actor, to.id, input)
        return { kind: 'next', outcome: 'default', output: { changed: Object.keys(input) } }
      }
      case 'contact_delete': {
        const gone = contact()
        await deleteContact(deps, actor, gone.id)
        return { kind: 'next', outcome: 'default', output: { contact_id: gone.id } }
      }
      case 'add_to_segment': {
        const to = contact()
        const seg = await findSegment(deps.db.q, run.accountId, step.config.segment_id)
        assertStatic(seg)
        await deps.db.write((tx) => addMemberships(tx, run.accountId, to.id, [seg.id], iso(now)))
        return { kind: 'next', outcome: 'default', output: { segment_id: seg.id } }
      }
      case 'webhook':
        return this.webhookResult(deps.db.q, run, called!, now)
    }
  }

  /**
   * The first visit starts the wait: its deadline, and the last signal before it
   * (later ones are what it waits for). Later visits (an event for the contact
   * came, or the deadline passed) look at the signals since, in order.
   */
  private async waitForEvent(q: Executor, run: RunRow, step: Step<'wait_for_event'>, data: RunData, now: number): Promise<Result> {
    const name = step.config.event_name
    if (!run.stepLogId) {
      const [{ last }] = await q.select({ last: max(automationSignals.id) }).from(automationSignals)
      const deadline = now + waitOf(step)
      return { kind: 'park', output: { event_name: name, timeout_at: iso(deadline) }, deadline, wakeAt: deadline, waitingFor: name, waitAfter: last ?? 0 }
    }
    const deadline = Date.parse(run.deadline!)
    let after = run.waitAfter ?? 0
    for (;;) {
      const batch = await q
        .select()
        .from(automationSignals)
        .where(and(eq(automationSignals.accountId, run.accountId), eq(automationSignals.contactId, run.contactId), eq(automationSignals.name, name), gt(automationSignals.id, after)))
        .orderBy(asc(automationSignals.id))
        .limit(WAIT_BATCH)
      for (const s of batch) {
        // Only what came before the timeout counts, however late the worker looks.
        if (Date.parse(s.createdAt) > deadline) break
        after = s.id
        const filter = step.config.filter_rule
        // In a wait's filter, as in Resend's, `event.` is the event waited for.
        if (filter && !holds(filter, { ...data, event: s.payload })) continue
        return {
          kind: 'next',
          outcome: 'event_received',
          output: { received: true, occurrence_id: s.occurrenceId, payload: s.payload },
          waitEvents: { ...run.waitEvents, [name]: s.payload },
        }
      }
      if (batch.length < WAIT_BATCH || Date.parse(batch[batch.length - 1].createdAt) > deadline) break
    }
    if (now >= deadline) return { kind: 'next', outcome: 'timeout', output: { received: false, timed_out_at: run.deadline } }
    return { kind: 'park', output: { event_name: name, timeout_at: run.deadline }, deadline, wakeAt: deadline, waitingFor: name, waitAfter: after }
  }

  /** The run's data as a webhook step posts it, read outside any transaction (the POST takes its time). */
  private async callWebhook(run: RunRow, step: Step<'webhook'>): Promise<AttemptResult> {
    const data = await this.data(this.root.db.q, run)
    const at = iso(this.root.clock.now())
    const body = JSON.stringify({
      type: 'automation.webhook',
      created_at: at,
      data: {
        automation_id: run.automationId,
        run_id: run.id,
        step: step.key,
        contact: data.contact ? contactView(data.contact) : null,
        event: { name: run.triggerEvent, payload: run.triggerPayload },
        wait_events: run.waitEvents,
      },
    })
    const client = new WebhookClient(this.guard, { timeoutMs: webhookTimeoutOf(step), ...(this.opts.webhookCa ? { ca: this.opts.webhookCa } : {}) })
    // The same key on every attempt: a receiver can tell a retry (or a repeat after a crash) from a new call.
    return client.post(step.config.url, { ...step.config.headers, 'idempotency-key': `${run.id}:${step.key}` }, body, () => this.root.clock.now())
  }

  private async webhookResult(q: Executor, run: RunRow, r: AttemptResult, now: number): Promise<Result> {
    const [log] = run.stepLogId ? await q.select({ attempts: automationRunSteps.attempts }).from(automationRunSteps).where(eq(automationRunSteps.id, run.stepLogId)) : []
    const attempts = (log?.attempts ?? 0) + 1
    const response = r.response.slice(0, 500)
    if (r.ok) return { kind: 'next', outcome: 'default', output: { status: r.status, response }, attempts }
    const error = { code: 'webhook_failed', message: r.status === null ? response : `The endpoint answered ${r.status}: ${response}` }
    const wait = WEBHOOK_RETRY_MS[attempts - 1]
    if (wait === undefined) return { kind: 'end', status: 'failed', error, attempts }
    const retryAt = now + Math.max(wait, r.retryAfterMs ?? 0)
    return { kind: 'park', output: { next_attempt_at: iso(retryAt) }, wakeAt: retryAt, error, attempts }
  }

  /** Logs the step and moves the run: on, to sleep, or to its end. */
  private async record(deps: Deps, run: RunRow, v: VersionRow, step: AutomationStep, r: Result) {
    const at = iso(deps.clock.now())
    await deps.db.write(async (tx) => {
      const status: LogChange['status'] = r.kind === 'park' ? 'waiting' : r.kind === 'next' ? (r.status ?? 'completed') : r.status
      const log = {
        status,
        attempts: r.attempts,
        output: r.kind === 'end' ? null : r.output,
        error: r.kind === 'next' ? null : (r.error ?? null),
        completedAt: r.kind === 'park' ? null : at,
      }
      const logId = await writeLog(tx, deps, run, step, log, at)
      const base = { leaseOwner: null, leaseUntil: null, updatedAt: at }
      if (r.kind === 'park') {
        await tx
          .update(automationRuns)
          .set({ ...base, stepLogId: logId, deadline: r.deadline === undefined ? null : iso(r.deadline), wakeAt: iso(r.wakeAt), waitingFor: r.waitingFor ?? null, waitAfter: r.waitAfter ?? null })
          .where(eq(automationRuns.id, run.id))
        return
      }
      const next = r.kind === 'next' ? nextStep(v.connections, step.key, r.outcome) : null
      const moved = { stepSeq: run.stepSeq + 1, stepLogId: null, waitingFor: null, waitAfter: null, deadline: null }
      await tx
        .update(automationRuns)
        .set(
          next
            ? { ...base, ...moved, cursor: next, wakeAt: at, ...(r.kind === 'next' && r.waitEvents ? { waitEvents: r.waitEvents } : {}) }
            : { ...base, ...moved, status: r.kind === 'next' ? 'completed' : r.status, cursor: r.kind === 'next' ? null : run.cursor, wakeAt: null, completedAt: at, ...(r.kind === 'next' && r.waitEvents ? { waitEvents: r.waitEvents } : {}) },
        )
        .where(eq(automationRuns.id, run.id))
    })
  }
}

interface LogChange {
  status: RunStepStatus
  attempts?: number
  output: Record<string, unknown> | null
  error: { code: string; message: string } | null
  completedAt: string | null
}

/** The step's log row: the one its wait started, else a new one. */
async function writeLog(tx: Tx, deps: Deps, run: RunRow, step: AutomationStep, c: LogChange, at: string): Promise<string> {
  if (run.stepLogId) {
    const [had] = await tx.select({ attempts: automationRunSteps.attempts, output: automationRunSteps.output }).from(automationRunSteps).where(eq(automationRunSteps.id, run.stepLogId))
    await tx
      .update(automationRunSteps)
      .set({ status: c.status, attempts: c.attempts ?? had?.attempts ?? 1, output: c.output ?? had?.output ?? null, error: c.error, completedAt: c.completedAt })
      .where(eq(automationRunSteps.id, run.stepLogId))
    return run.stepLogId
  }
  const id = deps.ids.uuid()
  await tx.insert(automationRunSteps).values({ id, runId: run.id, accountId: run.accountId, stepKey: step.key, type: step.type, status: c.status, attempts: c.attempts ?? 1, output: c.output, error: c.error, startedAt: at, completedAt: c.completedAt, createdAt: at })
  return id
}

/** A contact_update step's change with its references read; a reference that reads nothing leaves its field alone. */
function contactChange(step: Step<'contact_update'>, data: RunData) {
  const c = step.config
  const text = (v: unknown) => (v === null ? null : typeof v === 'object' ? JSON.stringify(v) : String(v))
  const input: { first_name?: string | null; last_name?: string | null; unsubscribed?: boolean; properties?: Record<string, string | number | boolean | null> } = {}
  const first = resolve(c.first_name, data)
  if (first !== undefined) input.first_name = text(first)
  const last = resolve(c.last_name, data)
  if (last !== undefined) input.last_name = text(last)
  const unsub = resolve(c.unsubscribed, data)
  if (unsub !== undefined) {
    if (typeof unsub !== 'boolean' && unsub !== 'true' && unsub !== 'false') {
      throw new AppError('invalid_parameter', { message: `\`unsubscribed\` read ${JSON.stringify(unsub)}, which is not a boolean.` })
    }
    input.unsubscribed = unsub === true || unsub === 'true'
  }
  if (c.properties) {
    const props: Record<string, string | number | boolean | null> = {}
    for (const [k, raw] of Object.entries(c.properties)) {
      const value = resolve(raw, data)
      if (value === undefined) continue
      props[k] = value === null || typeof value !== 'object' ? (value as string | number | boolean | null) : JSON.stringify(value)
    }
    if (Object.keys(props).length) input.properties = props
  }
  return input
}
