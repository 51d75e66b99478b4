import type { Client } from '@libsql/client'
import { spawn, type Subprocess } from 'bun'
import { generateKeyPairSync } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
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

const made: string[] = []
// Databases of millions of rows are gigabytes: every folder a bench makes goes when the process ends, whatever part made it.
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

export function tempDir(name: string) {
  const dir = mkdtempSync(join(tmpdir(), `mailroom-bench-${name}-`))
  made.push(dir)
  return dir
}

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

export const KEY = 'mr_bench_bench_bench_bench_bench_bench_1234'

/**
 * `bun src/index.ts` (or `cmd`, the compiled binary) on a fresh data folder unless
 * given one, with KEY as its key and rate limits out of the way.
 */
export async function startMailroom(env: Record<string, string>, dir = tempDir('server'), cmd = [BUN, 'src/index.ts']) {
  const port = await freePort()
  const p = startProcess(cmd, {
    PORT: String(port),
    MAILROOM_SMTP_PORT: '0',
    MAILROOM_DATA_DIR: dir,
    MAILROOM_BOOTSTRAP_KEY: KEY,
    MAILROOM_RATE_LIMIT: '1000000',
    MAILROOM_PUBLIC_RATE_LIMIT: '1000000',
    MAILROOM_HOSTNAME: 'bench.local',
    ...env,
  })
  try {
    await waitFor(`http://127.0.0.1:${port}/health`)
  } catch (e) {
    p.kill()
    throw new Error(`${(e as Error).message}: ${await new Response(p.stderr as ReadableStream).text()}`)
  }
  return { p, port, dir, url: `http://127.0.0.1:${port}` }
}

/** A process's resident memory now (VmRSS) and its peak so far (VmHWM), in MB (Linux). */
export function memoryMb(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(status.match(new RegExp(`${field}:\\s+(\\d+) kB`))?.[1] ?? NaN)
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 }
}

/** Postfix's smtp-sink on a loopback port, accepting and discarding (or with `dump`, appending each message to that file). */
export async function startSink(dump?: string) {
  const port = await freePort()
  const p = startProcess(['smtp-sink', ...(dump ? ['-D', dump] : []), '-u', process.env.USER ?? 'root', `127.0.0.1:${port}`, '1000'], {})
  await Bun.sleep(300)
  return { port, close: () => stop(p) }
}

export const api = (base: string, method: string, path: string, body?: unknown) =>
  fetch(base + path, { method, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })

/** A wrk script that sends one transactional email to a simulator address per request; returns its path. */
/**
 * wrk's script for `POST /emails` to a simulator address; with `tags`, each request
 * carries one of them (`category:<value>`, drawn at random), so the emails a load
 * run adds look like the ones already stored.
 */
export function sendScript(dir: string, tags: string[] = []) {
  const script = `${dir}/send.lua`
  const body = (tag: string) =>
    `{"from":"Bench <bench@bench.test>","to":"delivered@simulator.test","subject":"Bench","text":"${'Hello from the benchmark. '.repeat(8)}"${tag}}`
  const request = tags.length
    ? `local bodies = {${tags.map((t) => `'${body(`,"tags":[{"name":"category","value":"${t}"}]`)}'`).join(',')}}
request = function() return wrk.format(nil, nil, nil, bodies[math.random(#bodies)]) end
`
    : `wrk.body = '${body('')}'
`
  writeFileSync(
    script,
    `wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer ${KEY}"
wrk.headers["Content-Type"] = "application/json"
${request}`,
  )
  return script
}

/**
 * A verified sending domain with a fresh DKIM key, written straight into the
 * database: the benchmarks are about sending, not DNS. Checked just now, so the
 * periodic re-check leaves it alone for the run.
 */
export async function insertVerifiedDomain(db: Client, name: string) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const account = (await db.execute('select id from accounts limit 1')).rows[0].id as string
  const now = new Date().toISOString()
  await db.execute({
    sql: `insert into domains (id, account_id, name, region, status, custom_return_path, click_tracking, open_tracking, tls, sending_enabled, receiving_enabled,
      dkim_selector, dkim_private_key, dkim_public_key, records, verified_at, last_checked_at, created_at, updated_at)
      values (?, ?, ?, 'us', 'verified', 'send', 0, 0, 'opportunistic', 1, 0, 'bench', ?, ?, '[]', ?, ?, ?, ?)`,
    args: [crypto.randomUUID(), account, name, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, publicKey.export({ type: 'spki', format: 'der' }).toString('base64'), now, now, now, now],
  })
  return account
}
