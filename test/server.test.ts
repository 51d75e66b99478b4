// The real server process (`bun src/index.ts`, as `npm start` runs it) on loopback:
// the first-key rule, configuration errors, and what survives a restart.
import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, killAll, listeningUrl, run, start, waitForStatus, type Started } from '../src/build/process'

const ENTRY = resolve(import.meta.dir, '../src/index.ts')
const BOOT_MS = 20_000
const dirs: string[] = []

function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-server-'))
  dirs.push(dir)
  return dir
}

afterEach(() => killAll())
afterAll(() => {
  killAll()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** Bun keeps caches under HOME: one apart from the working folders, so they stay exactly as the server leaves them. */
const home = tempDir()

/** Only what a shell would give it, plus the settings under test: no MAILROOM_* leaks in from the runner. */
function envFor(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: tmpdir(), MAILROOM_SMTP_PORT: '0', ...extra }
}

async function boot(cwd: string, extra: Record<string, string> = {}): Promise<{ p: Started; url: string }> {
  const p = start([process.execPath, ENTRY], { cwd, env: envFor({ PORT: String(freePort()), ...extra }) })
  try {
    return { p, url: await listeningUrl(p, BOOT_MS) }
  } catch (e) {
    p.kill()
    throw e
  }
}

async function call(url: string, method: string, path: string, o: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...o.headers }
  if (o.key) headers.authorization = `Bearer ${o.key}`
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url + path, {
    method,
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
    signal: AbortSignal.timeout(5000),
  })
  const text = await res.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: res.status, body, headers: res.headers }
}

const errorLines = (stderr: string) => stderr.split('\n').filter((l) => l.includes('"level":"error"'))

describe('the server process', () => {
  test('first start prints one key and keeps data in ./data; a restart prints none and keeps keys and idempotency keys', async () => {
    const cwd = tempDir()

    // First start, from an empty folder, with no MAILROOM_* settings at all.
    let { p, url } = await boot(cwd)
    const [, token] = await p.waitFor(/^API key: (\S+)$/m, BOOT_MS)
    expect(token).toMatch(/^mr_[A-Za-z0-9_-]{20,}$/)
    expect(existsSync(join(cwd, 'data', 'mailroom.db'))).toBe(true)

    expect((await call(url, 'GET', '/health')).status).toBe(200)
    expect((await call(url, 'GET', '/api-keys')).body.code).toBe('missing_api_key')
    const list = await call(url, 'GET', '/api-keys', { key: token })
    expect(list.status).toBe(200)
    expect(list.body.data).toHaveLength(1)

    const idem = { 'Idempotency-Key': 'k1' }
    const created = await call(url, 'POST', '/api-keys', { key: token, body: { name: 'made before restart' }, headers: idem })
    expect(created.status).toBe(201)
    expect(created.headers.get('idempotent-replayed')).toBeNull()
    const { id: createdId, token: createdToken } = created.body

    expect(await p.stop()).toBe(0)
    // Exactly one line on stdout, and it is the key.
    expect(p.stdout()).toBe(`API key: ${token}\n`)
    expect(errorLines(p.stderr())).toEqual([])

    // Second start on the same folder.
    ;({ p, url } = await boot(cwd))
    const again = await call(url, 'GET', '/api-keys', { key: token })
    expect(again.status).toBe(200)
    expect(again.body.data.map((k: { id: string }) => k.id)).toContain(createdId)
    expect((await call(url, 'GET', '/api-keys', { key: createdToken })).status).toBe(200)

    // The idempotency key outlives the process: same request replays, another body conflicts.
    const replay = await call(url, 'POST', '/api-keys', { key: token, body: { name: 'made before restart' }, headers: idem })
    expect(replay.status).toBe(201)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(replay.body.id).toBe(createdId)
    const mismatch = await call(url, 'POST', '/api-keys', { key: token, body: { name: 'something else' }, headers: idem })
    expect(mismatch.status).toBe(409)
    expect(mismatch.body.code).toBe('idempotency_payload_mismatch')
    // Neither call made a key.
    expect((await call(url, 'GET', '/api-keys', { key: token })).body.data).toHaveLength(2)

    expect(await p.stop()).toBe(0)
    expect(p.stdout()).toBe('')
    expect(errorLines(p.stderr())).toEqual([])
  }, 60_000)

  // The HTTP port answers before the SMTP listener and the workers are up: a SIGTERM
  // from a supervisor (or a test) in that window is a stop like any other, not a kill.
  test('a SIGTERM the moment /health first answers stops it cleanly with exit 0', async () => {
    for (let round = 0; round < 3; round++) {
      const port = freePort()
      const p = start([process.execPath, ENTRY], { cwd: tempDir(), env: envFor({ PORT: String(port) }) })
      await waitForStatus(`http://127.0.0.1:${port}/health`, 200, BOOT_MS)
      expect(await p.stop()).toBe(0)
      expect(p.stderr()).toContain('"msg":"stopping"')
      expect(errorLines(p.stderr())).toEqual([])
    }
  }, 60_000)

  test('MAILROOM_BOOTSTRAP_KEY becomes the first key and nothing is printed', async () => {
    const cwd = tempDir()
    const dataDir = join(cwd, 'elsewhere')
    const bootstrap = 'mr_operator_chosen_bootstrap_key_0123'
    const { p, url } = await boot(cwd, { MAILROOM_BOOTSTRAP_KEY: bootstrap, MAILROOM_DATA_DIR: dataDir })
    const list = await call(url, 'GET', '/api-keys', { key: bootstrap })
    expect(list.status).toBe(200)
    expect(list.body.data).toHaveLength(1)
    expect(existsSync(join(dataDir, 'mailroom.db'))).toBe(true)
    expect(existsSync(join(cwd, 'data'))).toBe(false)
    expect(await p.stop()).toBe(0)
    expect(p.stdout()).toBe('')
  }, 30_000)

  const invalid: [setting: string, value: string][] = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['MAILROOM_DATABASE_URL', 'ftp://db.example/mailroom'],
    ['MAILROOM_BASE_URL', 'ftp://mail.example'],
    ['MAILROOM_BOOTSTRAP_KEY', 'too-short'],
    ['MAILROOM_RATE_LIMIT', '0'],
    ['MAILROOM_PUBLIC_RATE_LIMIT', 'lots'],
    ['MAILROOM_TRUST_PROXY', 'maybe'],
    ['MAILROOM_DAILY_QUOTA', '-5'],
    ['MAILROOM_MONTHLY_QUOTA', '1.5'],
  ]
  test.each(invalid)('%s=%s stops with exit 2 and one line naming the setting', async (setting, value) => {
    const cwd = tempDir()
    const r = await run([process.execPath, ENTRY], { cwd, env: envFor({ [setting]: value }) }, 15_000)
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
    const lines = r.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(setting)
    // The value is quoted back to help, except a secret, which is never echoed.
    if (setting === 'MAILROOM_BOOTSTRAP_KEY') expect(lines[0]).not.toContain(value)
    else expect(lines[0]).toContain(value)
    // Nothing was created before the configuration was read.
    expect(readdirSync(cwd)).toEqual([])
  }, 20_000)
})
