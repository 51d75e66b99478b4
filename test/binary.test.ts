// The compiled binary, alone in an empty folder, with only PATH, HOME, TMPDIR and
// PORT in its environment: it must carry the runtime, the code, the migrations and
// libSQL's native module inside itself.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { compile } from '../src/build/compile'
import { freePort, killAll, run, start, waitForStatus } from '../src/build/process'

const BOOT_MS = 30_000
const root = mkdtempSync(join(tmpdir(), 'mailroom-binary-'))
const appDir = join(root, 'app')
const home = join(root, 'home')
const tmp = join(root, 'tmp')
const binary = join(appDir, 'mailroom')
let built: { bytes: number; millis: number }

beforeAll(async () => {
  for (const d of [appDir, home, tmp]) mkdirSync(d)
  // Built outside dist/ so the test neither needs nor disturbs a `npm run build`.
  const out = await compile(join(root, 'build', 'mailroom'))
  built = { bytes: out.bytes, millis: out.millis }
  copyFileSync(out.outfile, binary)
  rmSync(join(root, 'build'), { recursive: true, force: true })
}, 180_000)

afterEach(() => killAll())
afterAll(() => {
  killAll()
  rmSync(root, { recursive: true, force: true })
})

const env = (port: number, extra: Record<string, string> = {}) => ({ PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, TMPDIR: tmp, PORT: String(port), MAILROOM_SMTP_PORT: '0', ...extra })

async function listKeys(url: string, key: string) {
  const res = await fetch(`${url}/api-keys`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(5000) })
  return { status: res.status, body: (await res.json()) as { data: { id: string }[] } }
}

describe('the compiled binary', () => {
  test('boots alone from an empty folder, prints one key, migrates, serves, stops on SIGTERM; a restart keeps the key', async () => {
    expect(readdirSync(appDir)).toEqual(['mailroom'])

    // First start: cold (nothing extracted to TMPDIR yet, no database).
    let port = freePort()
    let url = `http://127.0.0.1:${port}`
    const t0 = performance.now()
    let p = start([binary], { cwd: appDir, env: env(port) })
    await waitForStatus(`${url}/health`, 200, BOOT_MS)
    const coldMs = performance.now() - t0
    const [, token] = await p.waitFor(/^API key: (mr_\S+)$/m, 5000)

    const first = await listKeys(url, token)
    expect(first.status, p.report()).toBe(200)
    expect(first.body.data).toHaveLength(1)
    // Migrated: the database is in ./data beside the binary.
    expect(existsSync(join(appDir, 'data', 'mailroom.db'))).toBe(true)

    expect(await p.stop(), p.report()).toBe(0)
    expect(p.stdout(), p.report()).toBe(`API key: ${token}\n`)
    expect(p.stderr(), p.report()).not.toContain('"level":"error"')
    expect(readdirSync(appDir).sort()).toEqual(['data', 'mailroom'])

    // Second start on the same folder: no key printed, the old one still works.
    port = freePort()
    url = `http://127.0.0.1:${port}`
    const t1 = performance.now()
    p = start([binary], { cwd: appDir, env: env(port) })
    await waitForStatus(`${url}/health`, 200, BOOT_MS)
    const warmMs = performance.now() - t1
    const again = await listKeys(url, token)
    expect(again.status, p.report()).toBe(200)
    expect(again.body.data.map((k) => k.id)).toEqual(first.body.data.map((k) => k.id))
    expect(await p.stop(), p.report()).toBe(0)
    expect(p.stdout(), p.report()).toBe('')

    console.log(
      `binary: ${(built.bytes / 1024 / 1024).toFixed(1)} MB, built in ${(built.millis / 1000).toFixed(1)} s; ` +
        `spawn to GET /health 200: first start ${coldMs.toFixed(0)} ms, second start ${warmMs.toFixed(0)} ms`,
    )
  }, 90_000)

  test('without a usable TMPDIR it stops with one line saying so', async () => {
    const dir = join(root, 'no-tmp')
    mkdirSync(dir)
    const r = await run([binary], { cwd: dir, env: env(freePort(), { TMPDIR: join(root, 'does-not-exist') }) }, 30_000)
    expect(r.code).not.toBe(0)
    expect(r.stdout).toBe('')
    const lines = r.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('TMPDIR')
  }, 40_000)
})
