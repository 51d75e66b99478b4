// The outbound MTA's state machine, one outbox row (one recipient) at a time:
//
//   queued | scheduled | deferred  --claim (lease, due, transactional first)-->
//     on the suppression list            -> suppressed   (event suppressed; no attempt)
//     simulator address                  -> the simulator's sequence (simulate.ts)
//     message cannot be built / no domain-> failed       (event failed; our error)
//     2xx (relay: relay accepted)        -> delivered    (sent on the first attempt, delivered)
//     5xx                                -> bounced      (sent?, bounced Permanent|Transient|Undetermined; hard ones suppress)
//     4xx or the destination unreachable -> deferred     (sent?, delivery_delayed on the first; next try on the schedule)
//       ... schedule spent and 48 h gone-> bounced      (Transient "gave up"; no suppression)
//     our way out is down (breaker)      -> unchanged    (lease dropped, attempts unchanged, due when the breaker closes)
//
// Every attempt (including captured and simulated ones, and network errors) is a
// delivery_attempts row with the remote reply; the row, its attempt and its events
// are written in one (group-committed) transaction that also drops the lease.
import { and, asc, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm'
import { INSTANCE_ID } from '../instance'
import type { Tx } from '../db'
import { listOf, prepared, setTo } from '../db/prepared'
import { withBroadcastContent } from '../broadcasts/personalise'
import { deliveries, domains, emailAttachments, emails, suppressions } from '../db/tables'
import type { RootDeps } from '../deps'
import { isSimulatorAddress, simulatorBehaviour } from '../emails/simulator'
import { iso } from '../lib/clock'
import { Slots } from '../lib/slots'
import { topicAllows } from '../topics/service'
import { chooseSource, sourcesFor, type Source } from '../dedicated-ips/warmup'
import { bounceAddress, composeMessage, personalCopy } from './mime'
import { Recorder, releaseLeases, type Outcome, type OutcomeEvent } from './record'
import { CircuitBreaker, classifyBounce, nextRetry } from './retry'
import { BackgroundLoop } from '../lib/background-loop'
import { simulate } from './simulate'
import { onDue } from './due'
import { createTransport, type SendResult, type Transport, type TransportOptions } from './transport'
import type { AttachmentRow, DeliveryRow, DomainRow, EmailRow } from './types'

export interface DeliveryWorkerOptions {
  /** Lease owner name; unique per worker. */
  id?: string
  /** Most rows claimed in one transaction. */
  batchSize?: number
  /** Most messages in the hands of the transport at once (default config.deliveryConcurrency). */
  concurrency?: number
  /** How long a claim holds a row; renewed while the row is being worked on. */
  leaseMs?: number
  /** How often an idle worker looks for due rows (real time). */
  pollMs?: number
  transport?: Transport
  transportOptions?: TransportOptions
  /** Circuit-breaker backoff (doubles from base to max). */
  breakerBaseMs?: number
  breakerMaxMs?: number
}

const DUE_STATES = ['queued', 'deferred', 'scheduled'] as const

// The statements every claimed batch runs: prepared once (see db/prepared.ts).
/** Up to `n` due rows of one priority, oldest due first, leased to `owner` until `until`. */
const claimDue = prepared((q) => {
  const due = q
    .select({ id: deliveries.id })
    .from(deliveries)
    .where(
      and(
        inArray(deliveries.state, [...DUE_STATES]),
        eq(deliveries.priority, sql.placeholder('priority')),
        lte(deliveries.nextAttemptAt, sql.placeholder('now')),
        or(isNull(deliveries.leaseUntil), lt(deliveries.leaseUntil, sql.placeholder('now'))),
      ),
    )
    .orderBy(asc(deliveries.nextAttemptAt))
    .limit(sql.placeholder('n'))
  return q.update(deliveries).set({ leaseOwner: setTo('owner'), leaseUntil: setTo('until') }).where(inArray(deliveries.id, due)).returning().prepare()
})
const emailsIn = prepared((q) => q.select().from(emails).where(inArray(emails.id, listOf('ids'))).prepare())
const attachmentsOf = prepared((q) => q.select().from(emailAttachments).where(inArray(emailAttachments.emailId, listOf('emailIds'))).prepare())
const domainsIn = prepared((q) => q.select().from(domains).where(inArray(domains.id, listOf('ids'))).prepare())
const suppressedIn = prepared((q) =>
  q
    .select({ accountId: suppressions.accountId, email: suppressions.email, reason: suppressions.reason })
    .from(suppressions)
    .where(and(inArray(suppressions.accountId, listOf('accountIds')), inArray(suppressions.email, listOf('emails'))))
    .prepare(),
)

/** A message ready for the transport. */
interface Built {
  email: EmailRow
  domain: DomainRow
  raw: Buffer
  /** The domain's dedicated IP, when it has one. */
  source?: Source
}

/** What a claimed batch needs, loaded once for all its rows. */
interface Batch {
  emails: Map<string, EmailRow>
  attachments: Map<string, AttachmentRow[]>
  domains: Map<string, DomainRow>
  /** Source addresses by domain id (dedicated IPs and operator pins). */
  sources: Map<string, Source>
  suppressed: Map<string, string>
  /** Rows whose recipient said no (or not yes) to the email's topic. */
  topicRefused: Set<string>
  composed: Map<string, Promise<Buffer>>
}

/**
 * The outbound MTA's worker: claims due outbox rows with a lease (transactional
 * before bulk), sends each through the transport, and records the attempt, the new
 * state and the events in group-committed transactions. Any number of workers, in
 * one process or many on one database, share the queue without sending a row twice.
 */
export class DeliveryWorker extends BackgroundLoop {
  readonly id: string
  readonly transport: Transport
  readonly breaker: CircuitBreaker
  private readonly recorder: Recorder
  private readonly batchSize: number
  private readonly concurrency: number
  private readonly leaseMs: number
  private readonly pollMs: number
  private readonly slots: Slots
  /**
   * Messages handed to the transport whose outcome is not committed yet: twice the
   * concurrency, so the transport stays busy while one set waits for its commit, and
   * the most a kill -9 can send twice.
   */
  private readonly unrecorded: Slots
  /** Rows this worker holds a lease on and has not recorded yet. */
  private readonly held = new Map<string, { priority: number; trips: number }>()
  private heartbeat: ReturnType<typeof setInterval> | null = null
  private unsubscribe: (() => void) | null = null
  private stopping = new AbortController()
  /** Claimed rows not yet through the transport (all, and bulk): what the next claim is sized by. */
  private waiting = 0
  private bulkWaiting = 0
  /** Messages handed to the transport so far (for benchmarks and status). */
  sentCount = 0

  constructor(private readonly root: RootDeps, opts: DeliveryWorkerOptions = {}) {
    super()
    this.id = opts.id ?? `${INSTANCE_ID}:${root.ids.uuid()}`
    this.transport = opts.transport ?? createTransport(root.config, opts.transportOptions)
    this.breaker = new CircuitBreaker(this.transport.breakerThreshold, opts.breakerBaseMs, opts.breakerMaxMs)
    this.concurrency = opts.concurrency ?? root.config.deliveryConcurrency
    // A transaction as soon as half the concurrency waits for its commit: each COMMIT's fsync
    // holds the event loop for milliseconds, so fewer, fuller ones; the other half of the
    // unrecorded slots keeps the transport busy meanwhile.
    this.recorder = new Recorder(root.db, root.ids, root.log, this.id, Math.max(1, this.concurrency >> 1))
    this.batchSize = opts.batchSize ?? Math.max(50, this.concurrency * 2)
    this.leaseMs = opts.leaseMs ?? 5 * 60_000
    this.pollMs = opts.pollMs ?? 200
    this.slots = new Slots(this.concurrency)
    this.unrecorded = new Slots(this.concurrency * 2)
  }

  /** Started (start()), the loop polls for due rows and keeps the transport busy. */
  protected beforeRun(): void {
    this.stopping = new AbortController()
    this.heartbeat = setInterval(() => void this.renewLeases(), Math.max(1000, Math.floor(this.leaseMs / 3)))
    this.unsubscribe = onDue(() => this.wake())
  }

  /** Stops claiming, lets messages already handed to the transport finish, records them, and hands back every other lease. The transport is closed: a stopped worker is not started again (make a new one). */
  async stop(): Promise<void> {
    this.stopping.abort()
    this.unsubscribe?.()
    this.unsubscribe = null
    await this.halt()
    if (this.heartbeat) clearInterval(this.heartbeat)
    this.heartbeat = null
    await this.recorder.idle()
    await releaseLeases(this.root.db, this.id).catch((e) => this.root.log.error('could not hand back delivery leases', { error: (e as Error).message }))
    this.held.clear()
    await this.transport.close()
  }

  /** Claims and processes every due row once (tests drive it with a ManualClock); returns how many rows it took. */
  async runOnce(): Promise<number> {
    let total = 0
    for (;;) {
      if (this.breaker.isOpen(this.root.clock.now())) break
      const claimed = await this.claim(this.breaker.probing(this.root.clock.now()) ? 1 : this.batchSize)
      if (!claimed) break
      total += claimed.rows.length
      // Every processed row leaves the due set: done, or due later.
      await this.process(claimed.rows, claimed.batch)
    }
    await this.recorder.idle()
    return total
  }

  protected async run() {
    const tasks = new Set<Promise<unknown>>()
    while (this.running) {
      try {
        const now = this.root.clock.now()
        if (this.breaker.isOpen(now)) {
          await this.sleep(Math.min(1000, this.breaker.resumeAt - now))
          continue
        }
        // After a pause one probe goes alone: a way out still down costs one message's try, not a batch's.
        const probing = this.breaker.probing(now)
        // Keep up to twice the concurrency claimed and not yet sent (one set in flight, one ready),
        // and claim in batches: wait until at least half the concurrency is free.
        const room = probing ? 1 - this.waiting : Math.min(this.batchSize, this.concurrency * 2 - this.waiting, this.concurrency * 8 - this.held.size)
        if (room < (probing ? 1 : Math.max(1, this.concurrency >> 1))) {
          await this.sleep(this.pollMs)
          continue
        }
        const claimed = await this.claim(room)
        if (!claimed) {
          await this.sleep(tasks.size ? Math.min(this.pollMs, 50) : this.pollMs)
          continue
        }
        const t = this.process(claimed.rows, claimed.batch).catch((e) => this.root.log.error('delivery batch failed', { error: (e as Error).message }))
        tasks.add(t)
        void t.finally(() => tasks.delete(t))
      } catch (e) {
        this.root.log.error('delivery loop error', { error: (e as Error).message })
        await this.sleep(1000)
      }
    }
    await Promise.all(tasks)
  }

  /**
   * Takes up to `limit` due rows with a lease, in one write transaction (so two
   * workers never take the same row): transactional first, then bulk, which may never
   * fill more than three quarters of this worker's capacity. What the rows need
   * (emails, attachments, domains, suppressions) is read in the same transaction, so
   * it is the same snapshot the rows were claimed from.
   */
  private async claim(limit: number): Promise<{ rows: DeliveryRow[]; batch: Batch } | null> {
    const now = iso(this.root.clock.now())
    const until = iso(this.root.clock.now() + this.leaseMs)
    const bulkCap = Math.max(1, Math.floor(this.concurrency * 1.5))
    const claimed = await this.root.db.write(async (tx) => {
      const take = async (priority: number, n: number) => (n <= 0 ? ([] as DeliveryRow[]) : await claimDue(tx).all({ priority, now, n, owner: this.id, until }))
      const urgent = await take(0, limit)
      const bulk = await take(1, Math.min(limit - urgent.length, bulkCap - this.bulkWaiting))
      const rows = [...urgent, ...bulk]
      return rows.length ? { rows, batch: await this.load(tx, rows) } : null
    })
    if (!claimed) return null
    const { rows, batch } = claimed
    for (const r of rows) {
      this.held.set(r.id, { priority: r.priority, trips: this.breaker.tripCount })
      this.waiting++
      if (r.priority !== 0) this.bulkWaiting++
    }
    // Oldest due first within a priority; transactional first overall.
    rows.sort((a, b) => a.priority - b.priority || (a.nextAttemptAt < b.nextAttemptAt ? -1 : a.nextAttemptAt > b.nextAttemptAt ? 1 : 0))
    return { rows, batch }
  }

  private async renewLeases() {
    if (!this.held.size) return
    const ids = [...this.held.keys()]
    const until = iso(this.root.clock.now() + this.leaseMs)
    try {
      await this.root.db.write(async (tx: Tx) => {
        for (let i = 0; i < ids.length; i += 500) {
          await tx
            .update(deliveries)
            .set({ leaseUntil: until })
            .where(and(eq(deliveries.leaseOwner, this.id), inArray(deliveries.id, ids.slice(i, i + 500))))
        }
      })
    } catch (e) {
      this.root.log.error('delivery lease renewal failed', { error: (e as Error).message })
    }
  }

  private async load(q: Tx, rows: DeliveryRow[]): Promise<Batch> {
    const emailIds = JSON.stringify([...new Set(rows.map((r) => r.emailId))])
    const emailRows = await withBroadcastContent(q, await emailsIn(q).all({ ids: emailIds }), this.root)
    const domainIds = [...new Set(emailRows.map((e) => e.domainId).filter((x): x is string => !!x))]
    const attRows = await attachmentsOf(q).all({ emailIds })
    const domainRows = domainIds.length ? await domainsIn(q).all({ ids: JSON.stringify(domainIds) }) : []
    const accountIds = [...new Set(rows.map((r) => r.accountId))]
    const recipients = [...new Set(rows.map((r) => r.recipient))]
    const supRows = await suppressedIn(q).all({ accountIds: JSON.stringify(accountIds), emails: JSON.stringify(recipients) })
    const attachments = new Map<string, AttachmentRow[]>()
    for (const a of attRows) attachments.set(a.emailId, [...(attachments.get(a.emailId) ?? []), a])
    // Mail under a topic goes only to those whose answer (or the topic default) lets it: answers may change after a send is accepted.
    const topicRefused = new Set<string>()
    const byId = new Map(emailRows.map((e) => [e.id, e]))
    for (const r of rows) {
      const topicId = byId.get(r.emailId)?.topicId
      if (topicId && !isSimulatorAddress(r.recipient) && !(await topicAllows(q, r.accountId, topicId, r.recipient))) topicRefused.add(r.id)
    }
    return {
      topicRefused,
      emails: new Map(emailRows.map((e) => [e.id, e])),
      attachments,
      domains: new Map(domainRows.map((d) => [d.id, d])),
      sources: await sourcesFor(q, this.root.config, domainRows),
      suppressed: new Map(supRows.map((s) => [`${s.accountId}\n${s.email}`, s.reason])),
      composed: new Map(),
    }
  }

  private async process(rows: DeliveryRow[], batch: Batch) {
    await Promise.all(
      rows.map(async (row) => {
        let outcome: Outcome | null = null
        // Built and signed before a transport slot is taken: the slots bound the transport, and
        // messages holding slots while they wait for the composing thread would leave it idle.
        const built = await this.build(batch, row).catch((e) => this.failed(row, this.root.clock.now(), `internal error: ${(e as Error).message}`))
        // Held until the outcome is committed: a kill -9 can then re-send (after the restart) at
        // most twice the concurrency of messages a mail server accepted and we had not recorded.
        await this.unrecorded.take()
        try {
          await this.slots.take()
          try {
            // Not started when stop() came: its lease is handed back by stop().
            if (!this.stopping.signal.aborted) outcome = await this.deliver(row, built)
          } catch (e) {
            outcome = this.failed(row, this.root.clock.now(), `internal error: ${(e as Error).message}`)
          } finally {
            // The slot bounds the transport, not the commit: the next message goes while this one is recorded.
            this.slots.give()
            this.sent(row)
          }
          if (outcome) await this.recorder.record(outcome).catch(() => {})
        } finally {
          this.unrecorded.give()
          this.forget([row])
        }
      }),
    )
  }

  /** A claimed row is through the transport (or will not go): room for the next claim. */
  private sent(r: DeliveryRow) {
    this.waiting--
    if (r.priority !== 0) this.bulkWaiting--
    if (this.waiting < this.concurrency) this.wake()
  }

  /** A row's outcome is recorded (its lease released with it). */
  private forget(rows: DeliveryRow[]) {
    for (const r of rows) this.held.delete(r.id)
  }

  /** What a row turns into before the transport: its outcome already, or the message to send. */
  private async build(batch: Batch, row: DeliveryRow): Promise<Outcome | Built> {
    const now = this.root.clock.now()
    const at = iso(now)
    const reason = batch.suppressed.get(`${row.accountId}\n${row.recipient}`)
    if (reason) {
      return {
        row,
        state: 'suppressed',
        countAttempt: false,
        events: [{ type: 'suppressed', at, data: { suppressed: { reason, message: `${row.recipient} is on the account's suppression list (${reason}); no attempt was made.` } } }],
        at,
      }
    }
    if (batch.topicRefused.has(row.id)) {
      return {
        row,
        state: 'suppressed',
        countAttempt: false,
        events: [{ type: 'suppressed', at, data: { suppressed: { reason: 'topic', message: `${row.recipient} has not agreed to mail under this email's topic; no attempt was made.` } } }],
        at,
      }
    }
    const behaviour = simulatorBehaviour(row.recipient)
    if (behaviour) return simulate(row, behaviour, now)

    const email = batch.emails.get(row.emailId)
    if (!email) return this.failed(row, now, 'the email record is missing')
    if (!email.domainId) return this.failed(row, now, 'the email has no sending domain (only simulator recipients can be sent without one)')
    const domain = batch.domains.get(email.domainId)
    if (!domain) return this.failed(row, now, 'the sending domain no longer exists')

    let raw: Buffer
    try {
      // One build (and one signature) per email, unless unsubscribe tokens or tracked links make each copy personal.
      const key = personalCopy(email, domain) ? `${email.id}\n${row.recipient}` : email.id
      let p = batch.composed.get(key)
      if (!p) {
        p = composeMessage({ email, attachments: batch.attachments.get(email.id) ?? [], domain, config: this.root.config, recipient: row.recipient, secret: this.root.secret })
        batch.composed.set(key, p)
      }
      raw = await p
    } catch (e) {
      return this.failed(row, now, `the message could not be built: ${(e as Error).message}`)
    }
    return { email, domain, raw, source: batch.sources.get(domain.id) }
  }

  /** One built row through the transport (holding a slot), to its outcome. */
  private async deliver(row: DeliveryRow, built: Outcome | Built): Promise<Outcome> {
    if ('state' in built) return built
    const { email, domain, raw } = built
    const now = this.root.clock.now()
    const at = iso(now)
    // Paused while this row waited for a slot, or claimed before the last pause while its probe is not through: straight back to the queue, nothing spent.
    if (this.breaker.isOpen(now) || (this.breaker.probing(now) && (this.held.get(row.id)?.trips ?? 0) < this.breaker.tripCount)) {
      return { row, state: row.state, countAttempt: false, nextAttemptAt: iso(Math.max(this.breaker.resumeAt, now + 1000)), events: [], at }
    }
    const source = built.source ? await chooseSource(this.root.db, built.source, now) : null
    if (source?.kind === 'hold') {
      const attempt = { startedAt: at, durationMs: 0, host: null, smtpCode: null, enhancedCode: null, response: source.detail, outcome: 'deferred' as const }
      return { row, state: row.state, countAttempt: false, nextAttemptAt: iso(source.until), attempt, events: [], at }
    }
    const started = this.root.clock.now()
    const t0 = performance.now()
    this.sentCount++
    const result = await this.transport.send({
      from: bounceAddress(row.id, domain, this.root.config),
      to: row.recipient,
      recipientDomain: row.recipientDomain,
      raw,
      requireTls: domain.tls === 'enforced',
      localAddress: source?.kind === 'bind' ? source.ip : undefined,
    })
    return this.judge(row, email, result, started, Math.round(performance.now() - t0))
  }

  /** Turns the transport's answer into the row's next state, its attempt and its events. */
  private judge(row: DeliveryRow, email: EmailRow, r: SendResult, started: number, durationMs: number): Outcome {
    const now = this.root.clock.now()
    const at = iso(now)
    const attempt = (outcome: NonNullable<Outcome['attempt']>['outcome']) => ({
      startedAt: iso(started),
      durationMs,
      host: r.host,
      smtpCode: r.code,
      enhancedCode: r.enhanced,
      response: r.response,
      outcome,
    })
    const sent: OutcomeEvent[] = row.attempts === 0 ? [{ type: 'sent', at: iso(started) }] : []

    if (r.kind === 'network' && this.breaker.failure(r.destination ?? 'unknown', now)) {
      // Our way out is down: back in the queue, attempt not counted, no events.
      this.root.log.error('delivery paused: circuit breaker open', { host: r.host, reason: r.response, resume_at: iso(this.breaker.resumeAt) })
      return { row, state: row.state, countAttempt: false, nextAttemptAt: iso(Math.max(this.breaker.resumeAt, now + 1000)), attempt: attempt('network_error'), events: [], at }
    }
    if (r.kind !== 'network') this.breaker.success()

    switch (r.kind) {
      case 'delivered':
        return {
          row,
          state: 'delivered',
          countAttempt: true,
          attempt: attempt(r.captured ? 'captured' : 'delivered'),
          events: [...sent, { type: 'delivered', at, data: r.captured ? { captured: true } : { host: r.host, response: r.response } }],
          at,
        }
      case 'bounced': {
        const b = classifyBounce(r.code, r.enhanced, r.response)
        return {
          row,
          state: 'bounced',
          countAttempt: true,
          attempt: attempt('bounced'),
          events: [...sent, { type: 'bounced', at, data: { bounce: { type: b.type, subType: b.subType, message: bounceMessage(b.type, r.response), diagnosticCode: [`smtp; ${r.response}`] } } }],
          suppress: b.suppress ? { reason: 'bounce', detail: r.response } : undefined,
          at,
        }
      }
      case 'failed':
        return { ...this.failed(row, now, r.response), attempt: attempt('failed'), countAttempt: true }
      case 'deferred':
      case 'network': {
        const attempts = row.attempts + 1
        const firstDue = Date.parse(email.scheduledAt ?? row.createdAt)
        const next = nextRetry(attempts, now, Number.isFinite(firstDue) ? firstDue : now, r.response)
        const outcome = r.kind === 'network' ? 'network_error' : 'deferred'
        if (next.giveUp) {
          return {
            row,
            state: 'bounced',
            countAttempt: true,
            attempt: attempt(outcome),
            events: [
              ...sent,
              {
                type: 'bounced',
                at,
                data: {
                  bounce: {
                    type: 'Transient',
                    subType: 'General',
                    message: `Gave up after ${attempts} attempts over ${Math.round((now - firstDue) / 3_600_000)} hours; the last reply was: ${r.response}`,
                    diagnosticCode: [`smtp; ${r.response}`],
                  },
                },
              },
            ],
            at,
          }
        }
        const nextAt = iso(now + next.delayMs)
        const delayed: OutcomeEvent[] = row.state === 'deferred' ? [] : [{ type: 'delivery_delayed', at, data: { response: r.response, next_attempt_at: nextAt } }]
        return { row, state: 'deferred', countAttempt: true, nextAttemptAt: nextAt, attempt: attempt(outcome), events: [...sent, ...delayed], at }
      }
    }
  }

  private failed(row: DeliveryRow, now: number, reason: string): Outcome {
    const at = iso(now)
    return {
      row,
      state: 'failed',
      countAttempt: false,
      attempt: { startedAt: at, durationMs: 0, host: null, smtpCode: null, enhancedCode: null, response: reason, outcome: 'failed' },
      events: [{ type: 'failed', at, data: { failed: { reason } } }],
      at,
    }
  }
}

function bounceMessage(type: string, response: string) {
  if (type === 'Permanent') return `The recipient's mail server rejected the message permanently: ${response}`
  if (type === 'Transient') return `The recipient's mail server rejected the message for a reason that may pass: ${response}`
  return `The recipient's mail server rejected the message: ${response}`
}
