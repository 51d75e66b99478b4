// The webhook dispatcher's state machine, one outbox row (one event for one endpoint) at a time:
//
//   pending --claim (due, lease, endpoint enabled, no earlier pending row of its order key,
//                    endpoint below its concurrency)--> POST, signed
//     any 2xx                                   -> delivered
//     anything else (or no answer, or an address
//       that is not allowed)                    -> pending, due after the next step of the schedule
//                                                  (a 429's or 503's Retry-After, if longer); later
//                                                  rows of its order key wait until then too
//       ... the schedule's 8 attempts spent     -> failed (replay makes it pending again)
//
// Every attempt is a webhook_attempts row; the row, its attempt and the endpoint's failure
// clock are written in one transaction that also drops the lease. An endpoint whose attempts
// have all failed for 5 days is disabled, with an audit entry by the system.
import { aliasedTable, and, asc, eq, gt, inArray, isNull, lt, lte, notExists, or, sql } from 'drizzle-orm'
import { INSTANCE_ID } from '../instance'
import { recordChangeIn } from '../audit/record'
import type { Tx } from '../db'
import { listOf, prepared, rowInserter, setTo } from '../db/prepared'
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../db/tables'
import type { RootDeps } from '../deps'
import { systemActor } from '../lib/actor'
import { DAY, HOUR, iso } from '../lib/clock'
import { afterIo } from '../lib/nap'
import { Slots } from '../lib/slots'
import { WebhookClient, type AttemptResult, type ClientOptions } from './client'
import { BackgroundLoop } from '../lib/background-loop'
import { WebhookGuard } from './guard'
import { toWebhook } from './shape'
import { signatureHeaders } from './sign'

/** When attempt n (0-based) is made, after the failure of attempt n-1: Svix's schedule, which Resend receivers know. */
export const RETRY_SCHEDULE_MS = [0, 5_000, 5 * 60_000, 30 * 60_000, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]
/** A Retry-After beyond this is read as this. */
const MAX_RETRY_AFTER_MS = 10 * HOUR
/** An endpoint whose every attempt failed for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * DAY

export interface DispatcherOptions extends ClientOptions {
  /** Lease owner name; unique per dispatcher. */
  id?: string
  /** Requests in flight at once, all endpoints together. */
  concurrency?: number
  /** Requests in flight at once to one endpoint (default MAILROOM_WEBHOOK_CONCURRENCY). */
  perEndpoint?: number
  /** How long a claim holds a row: longer than a row can wait for a slot and then take. */
  leaseMs?: number
  /** How often an idle dispatcher looks for due rows (real time). */
  pollMs?: number
}

const earlier = aliasedTable(webhookDeliveries, 'earlier')

/** What sending to an endpoint needs, for endpoints that take events. */
const endpointColumns = {
  id: webhookEndpoints.id,
  url: webhookEndpoints.url,
  secret: webhookEndpoints.secret,
  previousSecret: webhookEndpoints.previousSecret,
  previousSecretExpiresAt: webhookEndpoints.previousSecretExpiresAt,
  compat: webhookEndpoints.webhookCompat,
}
const enabledEndpoints = prepared((q) => q.select(endpointColumns).from(webhookEndpoints).where(eq(webhookEndpoints.disabled, false)).prepare())
const enabledEndpointsIn = prepared((q) =>
  q
    .select(endpointColumns)
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.disabled, false), inArray(webhookEndpoints.id, listOf('ids'))))
    .prepare(),
)
/**
 * One endpoint's due rows, oldest due first: not leased, and not behind an earlier
 * pending row of the same order key. The literal `'pending'` lets SQLite use the
 * partial indexes (the endpoint's due rows, and its pending rows by order key).
 */
const dueRowsOf = prepared((q) =>
  q
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.endpointId, sql.placeholder('endpoint')),
        sql`${webhookDeliveries.state} = 'pending'`,
        lte(webhookDeliveries.nextAttemptAt, sql.placeholder('now')),
        or(isNull(webhookDeliveries.leaseUntil), lt(webhookDeliveries.leaseUntil, sql.placeholder('now'))),
        notExists(
          q
            .select({ one: sql`1` })
            .from(earlier)
            .where(and(sql`${earlier.state} = 'pending'`, eq(earlier.endpointId, webhookDeliveries.endpointId), eq(earlier.orderKey, webhookDeliveries.orderKey), lt(earlier.id, webhookDeliveries.id))),
        ),
      ),
    )
    .orderBy(asc(webhookDeliveries.nextAttemptAt), asc(webhookDeliveries.id))
    .limit(sql.placeholder('n'))
    .prepare(),
)
const lease = prepared((q) =>
  q
    .update(webhookDeliveries)
    .set({ leaseOwner: setTo('owner'), leaseUntil: setTo('until') })
    .where(inArray(webhookDeliveries.id, listOf('ids')))
    .returning({ id: webhookDeliveries.id, accountId: webhookDeliveries.accountId, endpointId: webhookDeliveries.endpointId, orderKey: webhookDeliveries.orderKey, payload: webhookDeliveries.payload, retries: webhookDeliveries.retries })
    .prepare(),
)
/**
 * Later pending rows of a failed row's order key wait for its next attempt: moved
 * to that time, they stay out of the due rows instead of being read on every claim.
 */
const holdBack = prepared((q) =>
  q
    .update(webhookDeliveries)
    .set({ nextAttemptAt: setTo('next') })
    .where(
      and(
        eq(webhookDeliveries.endpointId, sql.placeholder('endpoint')),
        eq(webhookDeliveries.orderKey, sql.placeholder('key')),
        sql`${webhookDeliveries.state} = 'pending'`,
        gt(webhookDeliveries.id, sql.placeholder('id')),
        lt(webhookDeliveries.nextAttemptAt, sql.placeholder('next')),
      ),
    )
    .prepare(),
)
const settle = prepared((q) =>
  q
    .update(webhookDeliveries)
    .set({
      state: setTo('state'),
      retries: setTo('retries'),
      attempts: sql`${webhookDeliveries.attempts} + 1`,
      nextAttemptAt: setTo('next'),
      lastStatus: setTo('status'),
      deliveredAt: setTo('deliveredAt'),
      leaseOwner: null,
      leaseUntil: null,
      updatedAt: setTo('at'),
    })
    .where(and(eq(webhookDeliveries.id, sql.placeholder('id')), eq(webhookDeliveries.leaseOwner, sql.placeholder('owner'))))
    .returning({ id: webhookDeliveries.id })
    .prepare(),
)
const insertAttempts = rowInserter(webhookAttempts)

type EndpointTarget = Awaited<ReturnType<ReturnType<typeof enabledEndpoints>['all']>>[number]
type Leased = Awaited<ReturnType<ReturnType<typeof lease>['all']>>[number]
type Claimed = Leased & { endpoint: EndpointTarget; leaseUntil: number }

interface Outcome {
  row: Claimed
  result: AttemptResult
  startedAt: number
  at: number
}

/**
 * The webhook outbox's worker: claims due rows with a lease, POSTs each signed
 * body to its endpoint, and records every attempt and the row's next state in
 * group-committed transactions. Each endpoint has up to twice its concurrency
 * leased: one set in flight, one waiting, so a finished request is followed by the
 * next at once, and the transaction that records finished attempts also claims the
 * next rows of their endpoints. Idle endpoints are looked at every `pollMs`. Any
 * number of dispatchers, in one process or many on one database, share the outbox
 * without sending a row twice at once; a row recorded as delivered is never sent
 * again unless replayed.
 */
export class WebhookDispatcher extends BackgroundLoop {
  readonly id: string
  private readonly client: WebhookClient
  private readonly concurrency: number
  private readonly perEndpoint: number
  private readonly leaseMs: number
  private readonly pollMs: number
  private readonly timeoutMs: number
  /** Each endpoint's request slots, while it has rows leased here. */
  private readonly slots = new Map<string, { slots: Slots; held: number }>()
  /** Rows leased here whose request is not over: a claim never takes them again, even when a hand-moved clock outruns their lease. */
  private readonly held = new Set<string>()
  private readonly tasks = new Set<Promise<void>>()
  private pending: { o: Outcome; done: () => void }[] = []
  private flushing: Promise<void> | null = null
  /** Set by stop(): rows still waiting for a slot are not sent. */
  private stopping = false
  /** runOnce() calls in progress: claims follow recorded attempts while one runs, as while running. */
  private draining = 0
  /** Where the next poll starts in the list of endpoints, so no endpoint is always served last. */
  private turn = 0
  /** Attempts made so far (runOnce() answers its share). */
  private attemptCount = 0

  constructor(private readonly root: RootDeps, opts: DispatcherOptions = {}) {
    super()
    this.id = opts.id ?? `${INSTANCE_ID}:webhooks:${root.ids.uuid()}`
    this.client = new WebhookClient(new WebhookGuard(root.config), opts)
    this.concurrency = opts.concurrency ?? 100
    this.perEndpoint = opts.perEndpoint ?? root.config.webhookConcurrency
    this.leaseMs = opts.leaseMs ?? 120_000
    this.pollMs = opts.pollMs ?? 200
    this.timeoutMs = opts.timeoutMs ?? 15_000
  }

  protected beforeRun(): void {
    this.stopping = false
  }

  /** Stops claiming, lets the requests in flight finish and be recorded, and hands back the leases of rows not yet sent. */
  async stop(): Promise<void> {
    this.stopping = true
    await this.halt()
    await this.idle()
    await this.root.db
      .write((tx) => tx.update(webhookDeliveries).set({ leaseOwner: null, leaseUntil: null }).where(and(eq(webhookDeliveries.leaseOwner, this.id), sql`${webhookDeliveries.state} = 'pending'`)))
      .catch((e) => this.root.log.error('could not hand back webhook leases', { error: (e as Error).message }))
    this.stopping = false
  }

  /** Sends every due row, and what becomes due as earlier rows of its order key are done (tests drive it with a ManualClock); returns how many attempts it made. */
  async runOnce(): Promise<number> {
    const before = this.attemptCount
    this.draining++
    try {
      for (;;) {
        const rows = await this.root.db.write((tx) => this.claimIn(tx, null))
        this.take(rows)
        if (rows.length) continue
        if (!this.tasks.size) break
        await Promise.race(this.tasks)
      }
    } finally {
      this.draining--
    }
    return this.attemptCount - before
  }

  protected async run() {
    while (this.running) {
      try {
        this.take(await this.root.db.write((tx) => this.claimIn(tx, null)))
      } catch (e) {
        this.root.log.error('webhook dispatch loop error', { error: (e as Error).message })
      }
      await this.sleep(this.pollMs)
    }
  }

  /** Resolves once every row taken so far is sent (or handed back) and recorded. */
  async idle() {
    while (this.tasks.size) await Promise.all(this.tasks)
  }

  /**
   * Leases due rows in the caller's write transaction, within each endpoint's room
   * (twice its concurrency, less what it holds) and the dispatcher's: of the given
   * endpoints (those whose attempts were just recorded), or of every enabled
   * endpoint (`null`, a poll).
   */
  private async claimIn(tx: Tx, only: string[] | null): Promise<Claimed[]> {
    let room = this.concurrency * 2 - this.held.size
    if (room <= 0 || (only && !only.length)) return []
    const now = this.root.clock.now()
    const endpoints = only ? await enabledEndpointsIn(tx).all({ ids: JSON.stringify(only) }) : await enabledEndpoints(tx).all()
    if (!endpoints.length) return []
    const start = this.turn++ % endpoints.length
    const ids: string[] = []
    for (let i = 0; i < endpoints.length && room > 0; i++) {
      const e = endpoints[(start + i) % endpoints.length]!
      const free = Math.min(room, this.perEndpoint * 2 - (this.slots.get(e.id)?.held ?? 0))
      if (free <= 0) continue
      const due = await dueRowsOf(tx).all({ endpoint: e.id, now: iso(now), n: free + this.held.size })
      let left = free
      for (const d of due) {
        if (left <= 0) break
        if (this.held.has(d.id)) continue
        ids.push(d.id)
        left--
      }
      room -= free - left
    }
    if (!ids.length) return []
    const byId = new Map(endpoints.map((e) => [e.id, e]))
    const until = now + this.leaseMs
    const leased = await lease(tx).all({ ids: JSON.stringify(ids), owner: this.id, until: iso(until) })
    return leased.map((r) => ({ ...r, endpoint: byId.get(r.endpointId)!, leaseUntil: until }))
  }

  /** Holds claimed rows here: each is sent when its endpoint has a free slot. */
  private take(rows: Claimed[]) {
    for (const row of rows) {
      this.held.add(row.id)
      let e = this.slots.get(row.endpointId)
      if (!e) this.slots.set(row.endpointId, (e = { slots: new Slots(this.perEndpoint), held: 0 }))
      e.held++
      const task = this.attempt(row, e)
        .catch((err) => this.root.log.error('webhook attempt could not be recorded; the row is retried when its lease ends', { delivery_id: row.id, error: (err as Error).message }))
        .finally(() => this.tasks.delete(task))
      this.tasks.add(task)
    }
  }

  /** A row's request is over (or will not be made): its room goes to the next claim, which its own record is written with. */
  private release(row: Claimed, e: { slots: Slots; held: number }) {
    e.slots.give()
    this.held.delete(row.id)
    if (--e.held === 0 && this.slots.get(row.endpointId) === e) this.slots.delete(row.endpointId)
  }

  private async attempt(row: Claimed, e: { slots: Slots; held: number }) {
    await e.slots.take()
    const startedAt = this.root.clock.now()
    // Stopping, or waited so long that the lease could end before an answer: left for the next claim.
    if (this.stopping || startedAt + this.timeoutMs > row.leaseUntil) return this.release(row, e)
    let result: AttemptResult
    try {
      this.attemptCount++
      const headers = signatureHeaders(row.endpoint, row.id, startedAt, row.payload, row.endpoint.compat)
      result = await this.client.post(row.endpoint.url, headers, row.payload, () => this.root.clock.now())
    } finally {
      this.release(row, e)
    }
    await this.record({ row, result, startedAt, at: this.root.clock.now() })
  }

  /** Queues an outcome for the next transaction: outcomes arriving while one is written go together in the next. */
  private record(o: Outcome): Promise<void> {
    return new Promise((done) => {
      this.pending.push({ o, done })
      if (!this.flushing) this.flushing = this.flush()
    })
  }

  /** Writes the outcomes gathered so far and, in the same transaction, claims the next rows of their endpoints. */
  private async flush() {
    // After the I/O callbacks already due: the answers that came in together are written together.
    await afterIo()
    while (this.pending.length) {
      const batch = this.pending.splice(0, 500)
      const outcomes = batch.map((b) => b.o)
      let next: Claimed[] = []
      try {
        next = await this.root.db.write(async (tx) => {
          await this.apply(tx, outcomes)
          return (this.running || this.draining) && !this.stopping ? this.claimIn(tx, [...new Set(outcomes.map((o) => o.row.endpointId))]) : []
        })
      } catch (e) {
        this.root.log.error('webhook outcomes could not be recorded; their rows are retried when their leases end', { error: (e as Error).message, rows: batch.length })
      }
      // The next rows are taken before this batch's waiters resume, so runOnce() never sees a moment with nothing to wait for.
      this.take(next)
      for (const b of batch) b.done()
    }
    this.flushing = null
  }

  private async apply(tx: Tx, outcomes: Outcome[]) {
    const attempts: (typeof webhookAttempts.$inferInsert)[] = []
    /** Each endpoint's last outcome in this batch: it decides the endpoint's failure clock. */
    const lastByEndpoint = new Map<string, { ok: boolean; at: number; accountId: string }>()
    for (const { row, result, startedAt, at } of outcomes) {
      const next = result.ok ? null : nextAttempt(row.retries + 1, at, result.retryAfterMs)
      const state = result.ok ? 'delivered' : next === null ? 'failed' : 'pending'
      const updated = await settle(tx).all({
        id: row.id,
        owner: this.id,
        state,
        retries: row.retries + 1,
        next: iso(next ?? at),
        status: result.status,
        deliveredAt: result.ok ? iso(at) : null,
        at: iso(at),
      })
      // Lost its lease, or the endpoint was deleted meanwhile: nothing of it to record.
      if (!updated.length) continue
      if (next !== null && row.orderKey !== null) await holdBack(tx).run({ endpoint: row.endpointId, key: row.orderKey, id: row.id, next: iso(next) })
      attempts.push({
        id: this.root.ids.uuid(),
        deliveryId: row.id,
        endpointId: row.endpointId,
        startedAt: iso(startedAt),
        durationMs: result.durationMs,
        status: result.status,
        response: result.response,
        outcome: result.ok ? 'succeeded' : 'failed',
      })
      lastByEndpoint.set(row.endpointId, { ok: result.ok, at, accountId: row.accountId })
    }
    await insertAttempts(tx, attempts)
    for (const [endpointId, last] of lastByEndpoint) await this.trackFailures(tx, endpointId, last)
  }

  /** A success stops the endpoint's failure clock; a failure starts it, and after 5 days of it the endpoint is disabled. */
  private async trackFailures(tx: Tx, endpointId: string, last: { ok: boolean; at: number; accountId: string }) {
    if (last.ok) {
      await tx.update(webhookEndpoints).set({ failingSince: null }).where(and(eq(webhookEndpoints.id, endpointId), sql`${webhookEndpoints.failingSince} is not null`))
      return
    }
    const at = iso(last.at)
    await tx.update(webhookEndpoints).set({ failingSince: at }).where(and(eq(webhookEndpoints.id, endpointId), isNull(webhookEndpoints.failingSince)))
    const [before] = await tx
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.disabled, false), lte(webhookEndpoints.failingSince, iso(last.at - DISABLE_AFTER_MS))))
    if (!before) return
    const after = { ...before, disabled: true, disabledReason: 'failing' as const, updatedAt: at }
    await tx.update(webhookEndpoints).set({ disabled: true, disabledReason: 'failing', updatedAt: at }).where(eq(webhookEndpoints.id, endpointId))
    await recordChangeIn(tx, this.root.ids, at, systemActor(last.accountId), { resource: 'webhook', resourceId: endpointId, action: 'disabled', before: toWebhook(before), after: toWebhook(after) })
    this.root.log.error('webhook endpoint disabled after 5 days of failed deliveries', { webhook_id: endpointId, failing_since: before.failingSince })
  }
}

/**
 * When the next attempt is due after `made` attempts failed, or null when the
 * schedule is spent. A Retry-After (429, 503) longer than the step is honoured.
 */
export function nextAttempt(made: number, now: number, retryAfterMs?: number): number | null {
  if (made >= RETRY_SCHEDULE_MS.length) return null
  const step = RETRY_SCHEDULE_MS[made]!
  return now + Math.max(step, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS))
}
