import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Database, Tx } from '../db'
import { prepared, rowInserter } from '../db/prepared'
import { deliveries, deliveryAttempts, suppressions, type EmailEventType } from '../db/tables'
import { recordEvents, type NewEvent } from '../emails/events'
import type { Ids } from '../lib/ids'
import { auditSystemSuppression } from '../suppressions/service'
import type { Logger } from '../lib/log'
import type { AttemptOutcome, DeliveryRow, DeliveryState } from './types'

export interface OutcomeEvent {
  type: EmailEventType
  at: string
  data?: Record<string, unknown>
}

/** What one processed row turns into: written in one transaction with its neighbours. */
export interface Outcome {
  row: DeliveryRow
  state: DeliveryState
  /** Whether this counts as an attempt (a circuit-breaker pause does not). */
  countAttempt: boolean
  nextAttemptAt?: string
  attempt?: {
    startedAt: string
    durationMs: number
    host: string | null
    smtpCode: number | null
    enhancedCode: string | null
    response: string | null
    outcome: AttemptOutcome
  }
  events: OutcomeEvent[]
  suppress?: { reason: 'bounce' | 'complaint'; detail: string }
  at: string
}

/**
 * Every outcome of a batch settles its row in one statement: the rows' new values as
 * one JSON array ([id, state, attempts, next_attempt_at, at, attempted, code,
 * response] each), joined by id; only rows whose lease this worker still holds change,
 * and their ids come back. A statement per row cost more in drizzle's placeholder
 * filling and result mapping than in SQLite.
 */
const settleAll = prepared((q) =>
  q
    .update(deliveries)
    .set({
      state: sql`o.value ->> 1`,
      attempts: sql`o.value ->> 2`,
      nextAttemptAt: sql`o.value ->> 3`,
      leaseOwner: null,
      leaseUntil: null,
      updatedAt: sql`o.value ->> 4`,
      lastCode: sql`iif(o.value ->> 5, o.value ->> 6, ${deliveries.lastCode})`,
      lastResponse: sql`iif(o.value ->> 5, o.value ->> 7, ${deliveries.lastResponse})`,
    })
    .from(sql`json_each(${sql.placeholder('rows')}) o`)
    .where(and(sql`${deliveries.id} = o.value ->> 0`, eq(deliveries.leaseOwner, sql.placeholder('owner'))))
    .returning({ id: deliveries.id })
    .prepare(),
)
const insertAttempts = rowInserter(deliveryAttempts)
/** Rows settled by one statement (a bound JSON text of about 250 bytes each). */
const SETTLE_PER_STATEMENT = 500

/**
 * Group commit for outcomes: outcomes gather until `kickAt` of them wait (or for
 * `lingerMs` at most) and go in one transaction, which does not wait for the one
 * before it to commit: the database's own group commit takes both. Each update checks that
 * this worker still holds the row's lease; a row whose lease was lost is left to
 * its new owner.
 */
export class Recorder {
  private pending: { o: Outcome; done: (e?: unknown) => void }[] = []
  /** Transactions being written (several at once join the database's open group commit instead of queueing behind it). */
  private flushing = new Set<Promise<void>>()
  private timer: ReturnType<typeof setTimeout> | null = null
  /** Set by idle(): write what is pending without waiting for more. */
  private urgent = false
  lostLeases = 0

  constructor(
    private readonly db: Database,
    private readonly ids: Ids,
    private readonly log: Logger,
    private readonly owner: string,
    /**
     * Outcomes that start a transaction at once: the worker lets only so many messages
     * go out unrecorded (its `unrecorded` slots), so waiting for many would idle the transport.
     */
    private readonly kickAt = 500,
    /** How long an outcome waits for company before its transaction is written. */
    private readonly lingerMs = 20,
    private readonly maxBatch = 500,
  ) {}

  record(o: Outcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ o, done: (e) => (e ? reject(e) : resolve()) })
      this.schedule()
    })
  }

  /** Resolves once everything recorded so far is committed. */
  async idle() {
    this.urgent = true
    try {
      while (this.flushing.size || this.pending.length) {
        this.kick()
        await Promise.all(this.flushing)
      }
    } finally {
      this.urgent = false
    }
  }

  /** A transaction now when enough outcomes wait (or someone waits for all), even while others are being written; else after the linger. */
  private schedule() {
    if (!this.pending.length) return
    if (this.urgent || this.pending.length >= this.kickAt) this.kick()
    else this.timer ??= setTimeout(() => this.kick(), this.lingerMs)
  }

  private kick() {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    if (!this.pending.length) return
    const flush: Promise<void> = this.drain().finally(() => {
      this.flushing.delete(flush)
      // Outcomes that came in while the last batch was written.
      this.schedule()
    })
    this.flushing.add(flush)
  }

  private async drain() {
    const batch = this.pending.splice(0, this.maxBatch)
    let error: unknown
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await this.db.write((tx) => this.apply(tx, batch.map((b) => b.o)))
        error = undefined
        break
      } catch (e) {
        error = e
        await Bun.sleep(50 * 2 ** attempt)
      }
    }
    if (error) this.log.error('delivery outcomes could not be recorded; their rows will be retried when the lease expires', { error: (error as Error).message, rows: batch.length })
    for (const b of batch) b.done(error)
  }

  private async apply(tx: Tx, outcomes: Outcome[]) {
    const values = outcomes.map((o) => {
      const r = o.row
      const last = o.attempt
      const response = !last ? null : last.outcome === 'captured' ? '250 captured (MAILROOM_DELIVERY=capture)' : last.response === null ? null : truncate(last.response, 2000)
      return [r.id, o.state, r.attempts + (o.countAttempt ? 1 : 0), o.nextAttemptAt ?? r.nextAttemptAt, o.at, last ? 1 : 0, last?.smtpCode ?? null, response]
    })
    const settled = new Set<string>()
    for (let i = 0; i < values.length; i += SETTLE_PER_STATEMENT) {
      for (const { id } of await settleAll(tx).all({ rows: JSON.stringify(values.slice(i, i + SETTLE_PER_STATEMENT)), owner: this.owner })) settled.add(id)
    }
    const attempts: (typeof deliveryAttempts.$inferInsert)[] = []
    const events: NewEvent[] = []
    for (const o of outcomes) {
      const r = o.row
      if (!settled.has(r.id)) {
        this.lostLeases++
        this.log.error('delivery lease lost before its outcome was recorded', { delivery_id: r.id, state: o.state })
        continue
      }
      if (o.attempt) attempts.push({ id: this.ids.uuid(), deliveryId: r.id, emailId: r.emailId, ...o.attempt, worker: this.owner })
      for (const e of o.events) events.push({ accountId: r.accountId, emailId: r.emailId, type: e.type, recipient: r.recipient, data: e.data ?? {}, at: e.at })
      if (o.suppress) {
        const [made] = await tx
          .insert(suppressions)
          .values({ id: this.ids.uuid(), accountId: r.accountId, email: r.recipient, reason: o.suppress.reason, sourceEmailId: r.emailId, detail: truncate(o.suppress.detail, 1000), createdAt: o.at })
          .onConflictDoNothing()
          .returning()
        if (made) await auditSystemSuppression(tx, this.ids, o.at, made)
      }
    }
    // The batch's events and attempts each in a few multi-row statements.
    await recordEvents(tx, this.ids, events)
    await insertAttempts(tx, attempts)
  }
}

/** Hands back the leases this worker still holds (on stop), so another worker takes the rows at once. */
export async function releaseLeases(db: Database, owner: string, ids?: string[]) {
  if (ids && !ids.length) return
  await db.write((tx) =>
    tx
      .update(deliveries)
      .set({ leaseOwner: null, leaseUntil: null })
      .where(ids ? and(eq(deliveries.leaseOwner, owner), inArray(deliveries.id, ids)) : eq(deliveries.leaseOwner, owner)),
  )
}

function truncate(s: string, n: number) {
  return s.length > n ? s.slice(0, n) : s
}
