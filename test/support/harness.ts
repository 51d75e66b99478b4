import { expect } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureFirstAccount } from '../../src/accounts/service'
import { insertKey } from '../../src/api-keys/service'
import { buildApp } from '../../src/app'
import { openRoot } from '../../src/boot'
import { loadConfig, type Config } from '../../src/config'
import { accounts } from '../../src/db/tables'
import type { RootDeps } from '../../src/deps'
import type { ErrorCode } from '../../src/errors/catalogue'
import { ManualClock, iso } from '../../src/lib/clock'
import type { Logger } from '../../src/lib/log'
import { AutomationWorker } from '../../src/automations/engine'
import { DeliveryWorker } from '../../src/delivery/worker'
import { Scheduler } from '../../src/jobs'
import { startInbound, type InboundListener } from '../../src/inbound/server'
import type { Runtime } from '../../src/meta/service'
import { WebhookDispatcher } from '../../src/webhooks/dispatcher'

export interface Reply<T = any> {
  status: number
  body: T
  headers: Headers
}

export interface CallOptions {
  /** A token, or null for no Authorization header. Defaults to the owner's full_access key. */
  key?: string | null
  body?: unknown
  /** Raw body text (sent as is, with the given headers). */
  raw?: string
  headers?: Record<string, string>
  query?: Record<string, string | number | boolean | undefined>
}

export const silentLog: Logger & { errors: string[] } = {
  errors: [],
  info() {},
  error(msg, fields) {
    silentLog.errors.push(`${msg} ${JSON.stringify(fields)}`)
  },
}

/**
 * The real app on a fresh database in a temp folder, with a hand-moved clock,
 * the owner account and its first key. Requests go through `app.handle`.
 */
export async function harness(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-test-'))
  // No blocklist zones unless a test sets them: adding a domain would otherwise ask the public DBL through the system's resolver.
  const config: Config = loadConfig({ MAILROOM_DATA_DIR: dir, MAILROOM_BASE_URL: 'http://mailroom.test', MAILROOM_DNSBL_ZONES: '', MAILROOM_DBL_ZONES: '', ...env })
  const clock = new ManualClock('2026-03-02T10:00:00.000Z')
  const root: RootDeps = await openRoot(config, { clock, log: silentLog })
  // A harness opened on the data folder of an earlier one (a restart) finds its owner; the key is MAILROOM_BOOTSTRAP_KEY.
  const first = (await ensureFirstAccount(root)) ?? { accountId: (await root.db.q.select().from(accounts).limit(1))[0].id, token: config.bootstrapKey!, generated: false }
  const scheduler = new Scheduler(root).start()
  // Not started: tests drive delivery with `worker.runOnce()` and the manual clock.
  const worker = new DeliveryWorker(root)
  // Not started: tests move runs with `automations.runOnce()`.
  const automations = new AutomationWorker(root)
  // Not started either: tests drive webhooks with `dispatcher.runOnce()`.
  const dispatcher = new WebhookDispatcher(root)
  const runtime: Runtime = { startedAt: scheduler.startedAt, jobs: () => scheduler.jobs(), delivering: () => true, dispatching: () => true }
  const listeners: InboundListener[] = []
  const app = buildApp(root, runtime)

  async function call<T = any>(method: string, path: string, o: CallOptions = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...o.headers }
    const key = o.key === undefined ? first.token : o.key
    if (key !== null) headers.authorization = `Bearer ${key}`
    let body: string | undefined = o.raw
    if (o.body !== undefined) {
      body = JSON.stringify(o.body)
      headers['content-type'] ??= 'application/json'
    }
    const qs = o.query
      ? '?' + new URLSearchParams(Object.entries(o.query).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)] as [string, string])).toString()
      : ''
    const res = await app.handle(new Request(`http://localhost${path}${qs}`, { method, headers, body }))
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // not JSON (HTML pages, CSV): the text itself
    }
    return { status: res.status, body: parsed as T, headers: res.headers }
  }

  /** A new key on the owner's account (or another), made directly through the service. */
  async function key(opts: Parameters<typeof insertKey>[1] extends infer K ? Partial<K> : never = {}) {
    const { row, token } = await insertKey(root, { accountId: first.accountId, name: 'test key', ...opts } as Parameters<typeof insertKey>[1])
    return { id: row.id, token }
  }

  /** A second tenant with its own full_access key, for isolation tests. */
  async function otherAccount() {
    const id = root.ids.uuid()
    const now = iso(clock.now())
    await root.db.write((tx) => tx.insert(accounts).values({ id, name: 'Other', createdAt: now, updatedAt: now }))
    const { row, token } = await insertKey(root, { accountId: id, name: 'other owner' })
    return { accountId: id, keyId: row.id, token }
  }

  return {
    app,
    root,
    clock,
    config,
    dir,
    token: first.token,
    accountId: first.accountId,
    scheduler,
    runtime,
    worker,
    automations,
    dispatcher,
    call,
    key,
    otherAccount,
    /** Starts the inbound SMTP listener on 127.0.0.1 and a free port (optional; /status reports it). */
    async listen() {
      const l = await startInbound(root, { port: 0, host: '127.0.0.1' })
      listeners.push(l)
      runtime.smtp = () => l.status()
      return l
    },
    async close() {
      for (const l of listeners) await l.close(100)
      scheduler.stop()
      await worker.stop()
      await automations.stop()
      await dispatcher.stop()
      root.db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export type Harness = Awaited<ReturnType<typeof harness>>

/** Checks the whole error envelope, not only the code. */
export function expectError(r: Reply, code: ErrorCode, status?: number) {
  expect({ status: r.status, code: r.body?.code }).toEqual({ status: status ?? r.status, code })
  // A copy: bun's toMatchObject leaves asymmetric matchers behind in the object it checks.
  expect(structuredClone(r.body)).toMatchObject({ code, message: expect.any(String), fix: expect.any(String), docs_url: `http://mailroom.test/docs/errors/${code}`, name: expect.any(String), statusCode: r.status })
  expect(r.headers.get('x-request-id')).toBeTruthy()
  expect(r.headers.get('ratelimit-limit')).toBeTruthy()
}
