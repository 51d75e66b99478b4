import { Mutex } from '../lib/mutex'
import { BUSY_TIMEOUT_MS, openBackend, type Backend, type DB, type OpenTx, type RawStatement, type Row, type Tx } from './backend'

export type { DB, Tx } from './backend'
/** Where a query runs: the open transaction when there is one, else committed data. */
export type Executor = DB | Tx

/** What services see: read through `q`, change through `write`. */
export interface Db {
  readonly q: Executor
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>
}

/** One open transaction that many writers' segments share and commit together. */
interface Group {
  open: OpenTx
  segments: number
  openedAt: number
  /** Settles when the transaction has committed (or rejects with why it did not). */
  done: Promise<void>
  settle(commit: boolean): void
}

export interface GroupCommitOptions {
  /** Segments after which a group commits even with writers waiting. */
  maxSegments: number
  /** Age after which a group commits at the next segment end even with writers waiting. */
  maxAgeMs: number
  /** How long an idle group stays open for requests still in flight to join it. */
  joinWindowMs: number
}

/**
 * One writer's share of a group transaction: it holds the write lock from begin
 * to end and works inside a savepoint, so its failure undoes only its own writes.
 */
export class Segment {
  private ended = false

  constructor(
    private readonly db: Database,
    private readonly group: Group,
    private readonly name: string,
    private readonly release: () => void,
  ) {}

  get tx() {
    return this.group.open.tx
  }

  /** Keeps (`ok`) or undoes this segment's writes, then waits until they are durable or lost. */
  async end(ok: boolean): Promise<void> {
    if (this.ended) return
    this.ended = true
    let broken: unknown
    try {
      if (ok) await this.group.open.exec(`RELEASE ${this.name}`)
      else {
        await this.group.open.exec(`ROLLBACK TO ${this.name}`)
        await this.group.open.exec(`RELEASE ${this.name}`)
      }
    } catch (e) {
      // SQLite rolled the whole transaction back (disk full, I/O error): the group is lost.
      broken = e
    }
    if (broken !== undefined) this.db.closeGroup(this.group, false)
    else this.db.segmentEnded(this.group)
    this.release()
    if (broken !== undefined) throw broken
    await this.group.done
  }
}

/**
 * The database of one process. Writers take one lock in turn and write inside one
 * shared transaction (group commit): a writer that finishes while others wait
 * leaves the commit to the last of them, so one fsync makes many requests durable,
 * and each still waits for that commit before it answers. Readers see committed
 * data only.
 */
export class Database implements Db {
  private readonly lock = new Mutex()
  private group?: Group
  private seq = 0
  /** Requests whose unit of work has not finished: writers that may still join a group. */
  private inFlight = 0
  private joinTimer?: ReturnType<typeof setTimeout>

  constructor(
    readonly backend: Backend,
    private readonly opts: GroupCommitOptions = { maxSegments: 512, maxAgeMs: 20, joinWindowMs: 3 },
  ) {}

  static open(url: string, authToken?: string, timeoutMs?: number) {
    return new Database(openBackend(url, authToken, timeoutMs))
  }

  get q(): Executor {
    return this.backend.reader
  }

  /** A statement outside any group (migrations, maintenance). */
  execute(stmt: RawStatement | string): Promise<Row[]> {
    return this.backend.execute(typeof stmt === 'string' ? { sql: stmt } : stmt)
  }

  batch(stmts: RawStatement[]) {
    return this.backend.batch(stmts)
  }

  async write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const seg = await this.begin()
    let result: T
    try {
      result = await fn(seg.tx)
    } catch (e) {
      await seg.end(false).catch(() => undefined)
      throw e
    }
    await seg.end(true)
    return result
  }

  /**
   * Takes the write lock and a savepoint in the open group, opening one if needed.
   * Time spent queued behind writers that waited for another connection's lock
   * counts against this writer's own wait, so a locked file answers each of them
   * within the busy timeout rather than one after another.
   */
  async begin(): Promise<Segment> {
    const deadline = performance.now() + BUSY_TIMEOUT_MS
    const release = await this.lock.acquire()
    try {
      const group = (this.group ??= await this.openGroup(deadline))
      const name = `s${++this.seq}`
      await group.open.exec(`SAVEPOINT ${name}`)
      group.segments++
      return new Segment(this, group, name, release)
    } catch (e) {
      if (this.group) this.closeGroup(this.group, false)
      release()
      throw e
    }
  }

  /** Counts a request that may write, so an idle group waits for it a moment instead of committing alone. */
  track(delta: 1 | -1) {
    this.inFlight += delta
  }

  /**
   * Called with the lock held when a segment has ended. The group commits now if
   * it is full or old; otherwise it stays open for the next writer in the queue,
   * for a few milliseconds for requests still on their way to their first write,
   * and, with no writer queued or in flight, until the event loop's next turn.
   * That turn matters: a request's queries are synchronous, so it runs from its
   * first write to its end without yielding, and requests already waiting on
   * other connections are read only after it; committing at once would give every
   * request a commit (and an fsync) of its own.
   */
  segmentEnded(group: Group) {
    const age = performance.now() - group.openedAt
    if (group.segments >= this.opts.maxSegments || age >= this.opts.maxAgeMs) return this.closeGroup(group, true)
    if (this.lock.waiting > 0) return
    const wait = this.inFlight > 1 ? this.opts.joinWindowMs : 0
    this.joinTimer ??= setTimeout(() => void this.commitIdle(group), wait)
  }

  private async commitIdle(group: Group) {
    const release = await this.lock.acquire()
    this.joinTimer = undefined
    if (this.group === group) this.closeGroup(group, true)
    release()
  }

  /** Called with the lock held: the next writer opens a fresh group. */
  closeGroup(group: Group, commit: boolean) {
    if (this.group === group) this.group = undefined
    if (this.joinTimer) clearTimeout(this.joinTimer)
    this.joinTimer = undefined
    group.settle(commit)
  }

  private async openGroup(deadline: number): Promise<Group> {
    const open = await this.backend.begin(deadline)
    let settle!: (commit: boolean) => void
    const done = new Promise<void>((resolve, reject) => {
      settle = (commit) =>
        open.finish(commit).then(resolve, (e) =>
          // Every writer of a lost group learns it as a storage failure, not as a bug of its own.
          reject(Object.assign(new Error(`the shared write transaction was lost: ${(e as Error).message}`), { code: 'GROUP_LOST', cause: e })),
        )
    })
    done.catch(() => undefined)
    return { open, segments: 0, openedAt: performance.now(), done, settle }
  }

  close() {
    this.backend.close()
  }
}

/**
 * One request's changes as one segment: begun by the first write, ended by
 * `finish` before the reply leaves (so a 2xx means committed), undone on failure.
 * Reads inside the request see its own uncommitted writes.
 */
export class UnitOfWork implements Db {
  private segment?: Promise<Segment>
  private current?: Segment
  private done = false

  constructor(private readonly db: Database) {
    db.track(1)
  }

  get q(): Executor {
    return this.current?.tx ?? this.db.q
  }

  async write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    this.segment ??= this.db.begin().then((s) => (this.current = s))
    return fn((await this.segment).tx)
  }

  /** Keeps the request's writes (running `last` inside the same transaction first) or undoes them. */
  async finish(commit: boolean, last?: (tx: Tx) => Promise<void>): Promise<void> {
    if (!this.done) {
      this.done = true
      this.db.track(-1)
    }
    if (!this.segment) {
      if (commit && last) await this.db.write(last)
      return
    }
    const seg = await this.segment
    this.segment = undefined
    this.current = undefined
    if (commit && last) {
      try {
        await last(seg.tx)
      } catch (e) {
        await seg.end(false).catch(() => undefined)
        throw e
      }
    }
    await seg.end(commit)
  }
}
const TRANSIENT = /^(SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|PROTOCOL)|CLIENT_CLOSED|SERVER_ERROR|HRANA_|STREAM_|TRANSACTION_TIMEOUT|GROUP_LOST|STORAGE_TIMEOUT)/

/**
 * A storage failure that waiting can cure (lock, disk full, server unreachable),
 * as opposed to a bug: callers answer `service_unavailable`, never a 500.
 */
export function isTransientStorageError(e: unknown): boolean {
  const err = e as { code?: string; cause?: unknown; message?: string } | null
  if (!err || typeof err !== 'object') return false
  if (typeof err.code === 'string' && TRANSIENT.test(err.code)) return true
  if (/ECONNREFUSED|ECONNRESET|fetch failed|Unable to connect/i.test(err.message ?? '')) return true
  return err.cause !== undefined && err.cause !== e && isTransientStorageError(err.cause)
}
