// The broadcast worker: a background loop, durable through its rows.
//
//   scheduled, its time come    -> sending starts: recipients counted, content frozen, quota spent (queued);
//                                  a refusal cancels it with the reason in `error`
//   queued (lease held)         -> one chunk of members, in id order from `fanout_cursor`, per transaction:
//                                  INSERT … SELECT their emails and outbox rows (bulk priority);
//                                  suppressed addresses get an email refused as `suppressed`.
//                                  The last chunk makes it `sending`.
//   sending, nothing left queued -> sent
//
// Every chunk is one short transaction and the loop yields to the event loop
// between chunks, so requests (transactional sends above all) take the write lock
// in between. A restart finds the cursor where the last committed chunk left it.
import { and, asc, eq, gt, isNull, lt, lte, or, sql } from 'drizzle-orm'
import { INSTANCE_ID } from '../instance'
import { definitions } from '../contact-properties/service'
import type { Executor, Tx } from '../db'
import { broadcasts, contacts, domains, emails, segmentContacts, topics } from '../db/tables'
import type { RootDeps } from '../deps'
import { recordEvents } from '../emails/events'
import { AppError } from '../errors/app-error'
import { iso } from '../lib/clock'
import { BackgroundLoop } from '../lib/background-loop'
import { afterIo } from '../lib/nap'
import { filterOf } from '../segments/rules'
import { findSegment, isStatic } from '../contacts/segments'
import { suppressed, willing, type Audience } from './audience'
import { enqueue, insertEmails, suppressedOf, type EmailSpec } from './bulk'
import { propertyKeys, subjectSql } from './personalise'
import { startScheduled, type BroadcastRow } from './service'

export interface BroadcastWorkerOptions {
  /** Lease owner name; unique per worker. */
  id?: string
  /** Members per fan-out transaction; left out, the size follows the load (see `pace`). */
  chunkSize?: number
  /** How long a claim holds a broadcast; renewed by every chunk. */
  leaseMs?: number
  /** How often an idle worker looks for work (real time). */
  pollMs?: number
}

/** How often (real time) sending broadcasts are checked for a queue left empty. */
const SETTLE_MS = 1000
/** Bounds of a chunk's own time (ms) and size (members) when the size follows the load. */
const CHUNK_MS = { min: 50, max: 100 }
const CHUNK_SIZE = { min: 200, start: 1000, max: 5000 }

export class BroadcastWorker extends BackgroundLoop {
  readonly id: string
  private chunkSize: number
  private readonly paced: boolean
  /** When the last chunk's work ended (real time), for the time others had since. */
  private chunkEnded = -Infinity
  private readonly leaseMs: number
  private readonly pollMs: number
  private settledAt = -Infinity

  constructor(private readonly root: RootDeps, opts: BroadcastWorkerOptions = {}) {
    super()
    this.id = opts.id ?? `${INSTANCE_ID}:broadcasts:${root.ids.uuid()}`
    this.chunkSize = opts.chunkSize ?? CHUNK_SIZE.start
    this.paced = opts.chunkSize === undefined
    this.leaseMs = opts.leaseMs ?? 60_000
    this.pollMs = opts.pollMs ?? 500
  }

  /** Lets the chunk in progress commit and hands back the lease. */
  async stop(): Promise<void> {
    await this.halt()
    await this.root.db
      .write((tx) => tx.update(broadcasts).set({ leaseOwner: null, leaseUntil: null }).where(eq(broadcasts.leaseOwner, this.id)))
      .catch((e) => this.root.log.error('could not hand back broadcast leases', { error: (e as Error).message }))
  }

  /** Does the work there is now, or its first `maxSteps` steps (tests drive it with a ManualClock); returns how many steps it took. */
  async runOnce(maxSteps = Infinity): Promise<number> {
    let total = 0
    while (total < maxSteps) {
      const n = await this.tick(true)
      if (!n) break
      total += n
    }
    return total
  }

  protected async run() {
    while (this.running) {
      try {
        if (await this.tick()) await afterIo()
        else await this.sleep(this.pollMs)
      } catch (e) {
        this.root.log.error('broadcast loop error', { error: (e as Error).message })
        await this.sleep(1000)
      }
    }
  }

  private async tick(force = false): Promise<number> {
    return (await this.startDue()) + (await this.fanOut()) + (await this.settle(force))
  }

  private async startDue(): Promise<number> {
    const due = await this.root.db.q
      .select({ id: broadcasts.id })
      .from(broadcasts)
      .where(and(eq(broadcasts.status, 'scheduled'), lte(broadcasts.scheduledAt, iso(this.root.clock.now()))))
      .orderBy(asc(broadcasts.scheduledAt))
      .limit(20)
    for (const { id } of due) await startScheduled(this.root, id)
    return due.length
  }

  /**
   * One chunk of one queued broadcast whose lease is free (or ours), claimed and
   * written in one transaction; an idle worker only reads, and takes no write lock.
   */
  private async fanOut(): Promise<number> {
    const now = iso(this.root.clock.now())
    const claimable = (q: Executor) =>
      q
        .select()
        .from(broadcasts)
        .where(and(eq(broadcasts.status, 'queued'), or(isNull(broadcasts.leaseUntil), lt(broadcasts.leaseUntil, now), eq(broadcasts.leaseOwner, this.id))))
        .orderBy(asc(broadcasts.startedAt))
        .limit(1)
    if (!(await claimable(this.root.db.q)).length) return 0
    return this.root.db.write(async (tx) => {
      const [b] = await claimable(tx)
      if (!b) return 0
      const started = performance.now()
      try {
        await this.chunk(tx, b)
      } catch (e) {
        if (!(e instanceof AppError)) throw e
        await this.stopEarly(tx, b, e)
      }
      this.pace(started, performance.now())
      return 1
    })
  }

  /**
   * Sizes the next chunk so its work takes about as long as everything else had
   * between the last two chunks (50 to 100 ms): a quiet server fans out in short
   * chunks, and requests waiting in between still get about half the time when the
   * server is busy, while the fan-out keeps the other half and finishes.
   */
  private pace(started: number, ended: number) {
    const others = started - this.chunkEnded
    this.chunkEnded = ended
    if (!this.paced) return
    const target = Math.min(CHUNK_MS.max, Math.max(CHUNK_MS.min, others))
    const next = (this.chunkSize * target) / Math.max(1, ended - started)
    this.chunkSize = Math.round(Math.min(CHUNK_SIZE.max, Math.max(CHUNK_SIZE.min, (this.chunkSize + next) / 2)))
  }

  /**
   * A chunk refused (its segment is gone, which `segment_in_use` should have
   * prevented): the fan-out stops where it is, what it wrote goes out, and the
   * reason is kept on the broadcast.
   */
  private async stopEarly(tx: Tx, b: BroadcastRow, e: AppError) {
    const at = iso(this.root.clock.now())
    const message = `${e.message} Sending stopped after ${b.enqueued} emails.`
    await tx
      .update(broadcasts)
      .set({ status: 'sending', recipientCount: b.enqueued, leaseOwner: null, leaseUntil: null, error: { code: e.code, message }, updatedAt: at })
      .where(eq(broadcasts.id, b.id))
  }

  /**
   * Writes the emails of the next `chunkSize` segment members after the cursor and
   * moves the cursor, holding the lease, in the transaction `tx` (a cancel takes
   * the same write lock, so it comes wholly before or after a chunk).
   */
  private async chunk(tx: Tx, b: BroadcastRow) {
    const { ids, clock, config } = this.root
    const now = clock.now()
    const at = iso(now)
    const [topic] = b.topicId ? await tx.select({ id: topics.id, defaultSubscription: topics.defaultSubscription }).from(topics).where(eq(topics.id, b.topicId)) : []
    // A topic deleted since sending started took its answers with it: the segment decides alone, as delivery does.
    const audience: Audience = { accountId: b.accountId, segmentId: b.segmentId, topic: topic ?? null }
    const members = await this.nextMembers(tx, b, new Date(now))
    const inChunk = and(willing(audience), sql`${contacts.id} in (select value from json_each(${JSON.stringify(members)}))`)!
    const [domain] = b.domainId ? await tx.select().from(domains).where(eq(domains.id, b.domainId)) : []
    const spec: EmailSpec = {
      host: config.hostname,
      subject: subjectSql(b.subject, await definitions(tx, b.accountId, propertyKeys(b.subject))),
      tracking: { open: !!domain?.openTracking, click: !!domain?.clickTracking },
      at,
    }
    const queued = await insertEmails(tx, ids, b, sql`${inChunk} and not ${suppressed(audience)}`, spec)
    const n = await enqueue(tx, ids, b, queued, at)
    // Suppressed addresses are refused here, as delivery would refuse them: an email each, with its `suppressed` event.
    const refused = await suppressedOf(tx, b, await insertEmails(tx, ids, b, sql`${inChunk} and ${suppressed(audience)}`, spec))
    await recordEvents(
      tx,
      ids,
      refused.map((r) => ({
        accountId: b.accountId,
        emailId: r.id,
        type: 'suppressed' as const,
        recipient: r.email,
        data: { suppressed: { reason: r.reason, message: `${r.email} is on the account's suppression list (${r.reason}); no attempt was made.` } },
        at,
      })),
    )
    const enqueued = b.enqueued + n
    const done = members.length < this.chunkSize
    await tx
      .update(broadcasts)
      .set({
        fanoutCursor: members.at(-1) ?? b.fanoutCursor,
        enqueued,
        leaseOwner: this.id,
        leaseUntil: iso(now + this.leaseMs),
        ...(done ? { status: 'sending' as const, recipientCount: enqueued, leaseOwner: null, leaseUntil: null } : {}),
        updatedAt: at,
      })
      .where(eq(broadcasts.id, b.id))
  }

  /**
   * The ids of the next `chunkSize` members after the cursor, in id order: the
   * segment's condition is evaluated by this one statement per chunk. A static
   * segment's members are its membership rows, walked by their key, so a chunk
   * costs the same at the start of a large segment as at its end.
   */
  private async nextMembers(tx: Tx, b: BroadcastRow, now: Date): Promise<string[]> {
    const segment = await findSegment(tx, b.accountId, b.segmentId)
    const rows = isStatic(segment)
      ? await tx
          .select({ id: segmentContacts.contactId })
          .from(segmentContacts)
          .where(and(eq(segmentContacts.segmentId, segment.id), b.fanoutCursor ? gt(segmentContacts.contactId, b.fanoutCursor) : undefined))
          .orderBy(asc(segmentContacts.contactId))
          .limit(this.chunkSize)
      : await tx
          .select({ id: contacts.id })
          .from(contacts)
          .where(and(await filterOf(tx, segment, now), b.fanoutCursor ? gt(contacts.id, b.fanoutCursor) : undefined))
          .orderBy(asc(contacts.id))
          .limit(this.chunkSize)
    return rows.map((r) => r.id)
  }

  /** Sending broadcasts whose last message has left the queue become sent. */
  private async settle(force: boolean): Promise<number> {
    if (!force && performance.now() - this.settledAt < SETTLE_MS) return 0
    this.settledAt = performance.now()
    const sending = await this.root.db.q.select({ id: broadcasts.id }).from(broadcasts).where(eq(broadcasts.status, 'sending'))
    let n = 0
    for (const { id } of sending) {
      // Driven from the queue's own index (waiting bulk rows), so a busy queue answers at its first row of this broadcast.
      const [waiting] = await this.root.db.q.all<{ one: number }>(sql`
        select 1 as one from deliveries d cross join ${emails} e on e.id = d.email_id
        where d.state in ('queued', 'deferred', 'scheduled') and d.priority = 1 and e.broadcast_id = ${id} limit 1`)
      if (waiting) continue
      const at = iso(this.root.clock.now())
      await this.root.db.write((tx) => tx.update(broadcasts).set({ status: 'sent', sentAt: at, updatedAt: at }).where(and(eq(broadcasts.id, id), eq(broadcasts.status, 'sending'))))
      n++
    }
    return n
  }
}
