import { spawn, type Subprocess } from 'bun'
import { mkdtempSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const ROOT = join(import.meta.dir, '../..')
export const BUN = process.execPath

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
    s.on('error', reject)
  })
}

export const tempDir = (name: string) => mkdtempSync(join(tmpdir(), `mailroom-bench-${name}-`))

export async function waitFor(url: string, timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    try {
      if ((await fetch(url)).ok) return
    } catch {
      // not listening yet
    }
    await Bun.sleep(50)
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`)
}

export function has(cmd: string) {
  return Bun.which(cmd) !== null
}

export interface WrkResult {
  requestsPerSec: number
  p50ms: number
  p99ms: number
  non2xx: number
}

const toMs = (v: string) => {
  const n = parseFloat(v)
  return v.endsWith('us') ? n / 1000 : v.endsWith('ms') ? n : v.endsWith('s') ? n * 1000 : n
}

/** Runs wrk with latency percentiles; `script` is a Lua file for POST bodies. */
export async function wrk(url: string, opts: { connections?: number; seconds?: number; script?: string; threads?: number } = {}): Promise<WrkResult> {
  const args = ['wrk', `-t${opts.threads ?? 2}`, `-c${opts.connections ?? 50}`, `-d${opts.seconds ?? 5}s`, '--latency']
  if (opts.script) args.push('-s', opts.script)
  args.push(url)
  const p = spawn(args, { stdout: 'pipe', stderr: 'pipe' })
  const out = await new Response(p.stdout).text()
  await p.exited
  const rps = Number(out.match(/Requests\/sec:\s+([\d.]+)/)?.[1] ?? 0)
  const p50 = out.match(/^\s+50%\s+([\d.]+\w+)/m)?.[1]
  const p99 = out.match(/^\s+99%\s+([\d.]+\w+)/m)?.[1]
  const non2xx = Number(out.match(/Non-2xx or 3xx responses:\s+(\d+)/)?.[1] ?? 0)
  return { requestsPerSec: rps, p50ms: p50 ? toMs(p50) : NaN, p99ms: p99 ? toMs(p99) : NaN, non2xx }
}

export function startProcess(cmd: string[], env: Record<string, string>, cwd = ROOT): Subprocess {
  return spawn(cmd, { cwd, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TMPDIR: process.env.TMPDIR ?? '/tmp', ...env }, stdout: 'pipe', stderr: 'pipe' })
}

export async function stop(p: Subprocess) {
  p.kill('SIGTERM')
  const timer = setTimeout(() => p.kill('SIGKILL'), 5000)
  await p.exited
  clearTimeout(timer)
}

export const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a')
