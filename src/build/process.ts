// Starts and stops real mailroom processes (from source or the compiled binary) for
// the process-level tests and checks: every wait is bounded, output is collected
// for the failure message, and nothing is left running.
import type { Subprocess } from 'bun'

export interface ProcessOptions {
  cwd: string
  /** The whole environment of the child (nothing is inherited). */
  env: Record<string, string>
}

export interface Started {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  /** Everything the process wrote so far. */
  stdout(): string
  stderr(): string
  /** The command, its exit code and its output so far: the message of a failed expectation about it. */
  report(): string
  /** Resolves with the first match in stdout or stderr; fails after `ms` or when the process ends first. */
  waitFor(re: RegExp, ms: number): Promise<RegExpMatchArray>
  /** SIGTERM, then waits up to `ms` for the exit code; SIGKILL and failure if it does not stop. */
  stop(ms?: number): Promise<number>
  /** Ends it at once (cleanup after a failed test). */
  kill(): void
}

const live = new Set<Subprocess>()

/** Kills every process these helpers started and that is still running. */
export function killAll() {
  for (const p of live) if (p.exitCode === null && !p.killed) p.kill('SIGKILL')
  live.clear()
}
process.on('exit', killAll)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function timeoutAfter<T>(ms: number, what: () => string): { promise: Promise<T>; cancel(): void } {
  let timer: ReturnType<typeof setTimeout>
  const promise = new Promise<T>((_, reject) => {
    timer = setTimeout(() => reject(new Error(what())), ms)
  })
  return { promise, cancel: () => clearTimeout(timer) }
}

async function collect(stream: ReadableStream<Uint8Array>, push: (s: string) => void) {
  const decoder = new TextDecoder()
  try {
    for await (const chunk of stream) push(decoder.decode(chunk, { stream: true }))
  } catch {
    // the stream ends with the process
  }
}

export function start(cmd: string[], opts: ProcessOptions): Started {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  live.add(proc)
  let out = ''
  let err = ''
  const drained = Promise.all([collect(proc.stdout, (s) => (out += s)), collect(proc.stderr, (s) => (err += s))])
  const describe = () => `${cmd.join(' ')} (exit ${proc.exitCode ?? 'running'})\n--- stdout\n${out}\n--- stderr\n${err.slice(-4000)}`
  void proc.exited.then(() => live.delete(proc))

  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    report: describe,
    async waitFor(re, ms) {
      const deadline = Date.now() + ms
      for (;;) {
        const m = out.match(re) ?? err.match(re)
        if (m) return m
        if (proc.exitCode !== null) {
          await drained
          const late = out.match(re) ?? err.match(re)
          if (late) return late
          throw new Error(`process ended before printing ${re}: ${describe()}`)
        }
        if (Date.now() > deadline) throw new Error(`no ${re} within ${ms} ms: ${describe()}`)
        await sleep(20)
      }
    },
    async stop(ms = 10_000) {
      if (proc.exitCode === null) proc.kill('SIGTERM')
      const t = timeoutAfter<number>(ms, () => `did not stop within ${ms} ms of SIGTERM: ${describe()}`)
      try {
        const code = await Promise.race([proc.exited, t.promise])
        await Promise.race([drained, sleep(1000)])
        return code
      } catch (e) {
        proc.kill('SIGKILL')
        throw e
      } finally {
        t.cancel()
      }
    },
    kill() {
      if (proc.exitCode === null) proc.kill('SIGKILL')
    },
  }
}

/** Runs a command to its end (bounded by `ms`) and returns its exit code and output. */
export async function run(cmd: string[], opts: ProcessOptions, ms: number): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = start(cmd, opts)
  const t = timeoutAfter<number>(ms, () => `${cmd.join(' ')} did not finish within ${ms} ms:\n${p.stdout()}\n${p.stderr()}`)
  try {
    const code = await Promise.race([p.proc.exited, t.promise])
    await p.stop(5000)
    return { code, stdout: p.stdout(), stderr: p.stderr() }
  } catch (e) {
    p.kill()
    throw e
  } finally {
    t.cancel()
  }
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort(): number {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = server.port
  server.stop(true)
  return port
}

/** Waits for the `listening` log line of src/index.ts and returns the loopback base URL. */
export async function listeningUrl(p: Started, ms: number): Promise<string> {
  const m = await p.waitFor(/"msg":"listening","url":"http:\/\/localhost:(\d+)"/, ms)
  return `http://127.0.0.1:${m[1]}`
}

/** Polls `url` until it answers `status` (or `ms` passes). */
export async function waitForStatus(url: string, status: number, ms: number): Promise<Response> {
  const deadline = Date.now() + ms
  let last: unknown
  for (;;) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) })
      if (res.status === status) return res
      last = `status ${res.status}`
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer ${status} within ${ms} ms (last: ${String(last)})`)
    await sleep(25)
  }
}
