import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'

/** What a pool's thread answers: `{ id, output }` or `{ id, error }`. */
export interface ThreadReply<O> {
  id: number
  output?: O
  error?: string
}

export interface ThreadPoolOptions<I, O> {
  /** The worker's code (see `workerEntry`); null runs every job here. */
  entry: string | null
  /** The same work on this thread: when the pool cannot start or a thread died. */
  here: (input: I) => Promise<O>
  /** Undoes what structured cloning did to the output (a Buffer arrives as a plain Uint8Array). */
  decode?: (output: O) => O
  size?: number
}

/**
 * CPU work moved off the event loop onto worker threads (one per spare core, at most
 * four), each job to the least busy thread and answered by id. A pool that cannot
 * start (a build without the worker file) or whose thread dies runs its jobs on
 * this thread, those waiting included, so the work never stops.
 */
export class ThreadPool<I, O> {
  private workers: { w: Worker; busy: number }[] = []
  private jobs = new Map<number, { input: I; resolve(o: O): void; reject(e: Error): void }>()
  private seq = 0
  private broken = false
  private readonly size: number

  constructor(private readonly opts: ThreadPoolOptions<I, O>) {
    this.size = opts.size ?? Math.max(1, Math.min(4, availableParallelism() - 1))
  }

  run(input: I): Promise<O> {
    if (this.broken) return this.opts.here(input)
    if (!this.workers.length && !this.start()) return this.opts.here(input)
    const id = ++this.seq
    const slot = this.workers.reduce((a, b) => (b.busy < a.busy ? b : a))
    slot.busy++
    return new Promise<O>((resolve, reject) => {
      const done = () => void slot.busy--
      this.jobs.set(id, { input, resolve: (o) => (done(), resolve(o)), reject: (e) => (done(), reject(e)) })
      slot.w.postMessage({ id, input })
    })
  }

  private start(): boolean {
    if (!this.opts.entry) {
      this.broken = true
      return false
    }
    try {
      for (let i = 0; i < this.size; i++) {
        const w = new Worker(this.opts.entry)
        w.unref()
        w.onmessage = (e: MessageEvent<ThreadReply<O>>) => {
          const job = this.jobs.get(e.data.id)
          if (!job) return
          this.jobs.delete(e.data.id)
          if (e.data.error === undefined) job.resolve(this.opts.decode ? this.opts.decode(e.data.output as O) : (e.data.output as O))
          else job.reject(new Error(e.data.error))
        }
        w.onerror = () => this.fail()
        this.workers.push({ w, busy: 0 })
      }
      return true
    } catch {
      this.fail()
      return false
    }
  }

  private fail() {
    if (this.broken) return
    this.broken = true
    for (const { w } of this.workers) w.terminate()
    this.workers = []
    const waiting = [...this.jobs.values()]
    this.jobs.clear()
    for (const j of waiting) this.opts.here(j.input).then(j.resolve, j.reject)
  }
}

/**
 * Where a worker's code is: `source` (a URL beside the caller) when running from
 * source; in a compiled binary, `compiled` (a path inside it, present only when the
 * build lists the worker as an entrypoint of its own). Null: run on this thread.
 */
export function workerEntry(callerPath: string, source: URL, compiled: string): string | null {
  if (!callerPath.includes('$bunfs')) return source.href
  const path = join(dirname(callerPath), compiled)
  return existsSync(path) ? path : null
}

/** The worker side: answers each `{ id, input }` with `work(input)` or its error. */
export function serveThread<I, O>(work: (input: I) => Promise<O>) {
  const scope = globalThis as unknown as Worker
  scope.onmessage = async (e: MessageEvent<{ id: number; input: I }>) => {
    const { id, input } = e.data
    try {
      scope.postMessage({ id, output: await work(input) } satisfies ThreadReply<O>)
    } catch (err) {
      scope.postMessage({ id, error: (err as Error).message } satisfies ThreadReply<O>)
    }
  }
}
