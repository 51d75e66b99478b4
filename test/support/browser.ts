// The console's browser tests: Debian's chromium driven by playwright-core, against
// the real app listening on 127.0.0.1 (port 0), with the delivery worker running.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { ensureFirstAccount } from '../../src/accounts/service'
import { buildApp } from '../../src/app'
import { openRoot } from '../../src/boot'
import { loadConfig } from '../../src/config'
import { DeliveryWorker } from '../../src/delivery/worker'
import { systemClock } from '../../src/lib/clock'
import type { Runtime } from '../../src/meta/service'
import { silentLog } from './harness'

const CANDIDATES = [process.env.MAILROOM_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean) as string[]

/** Debian's chromium, or null when it is not installed. */
export const chromiumPath = CANDIDATES.find((p) => existsSync(p)) ?? null

/**
 * Locally, a machine without chromium skips the browser tests, saying so; in CI
 * (where .ci/run installs it) its absence fails them loudly instead.
 */
export const skipBrowser = chromiumPath === null && !process.env.CI
if (skipBrowser) console.warn('console browser tests skipped: chromium is not installed (apt-get install -y --no-install-recommends chromium)')

export const SCREENSHOTS = resolve(import.meta.dir, '../../test-results/console')

export async function launchChromium(): Promise<Browser> {
  if (!chromiumPath) throw new Error(`chromium is not installed (looked for ${CANDIDATES.join(', ')}); .ci/run installs it with apt-get`)
  mkdirSync(SCREENSHOTS, { recursive: true })
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    timeout: 30_000,
    // Root in a container has no user namespace for chromium's sandbox; nothing may reach out on its own.
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-default-apps', '--disable-sync', '--disable-dev-shm-usage'],
  })
}

/** The real app on a fresh data folder, listening on 127.0.0.1 with an OS-chosen port. */
export async function consoleServer(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-console-'))
  const config = loadConfig({ MAILROOM_DATA_DIR: dir, PORT: '0', MAILROOM_SMTP_PORT: '0', ...env })
  const root = await openRoot(config, { clock: systemClock, log: silentLog })
  const first = (await ensureFirstAccount(root))!
  const worker = new DeliveryWorker(root)
  const runtime: Runtime = { startedAt: Date.now(), jobs: () => [], delivering: () => worker.running, dispatching: () => false }
  const app = buildApp(root, runtime).listen({ hostname: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${app.server!.port}`
  // As src/index.ts does with PORT=0: the console's origin (the CSRF check) is known only now.
  config.baseUrl = url
  worker.start()

  async function call(method: string, path: string, body?: unknown, token = first.token) {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    })
    return { status: res.status, body: (await res.json()) as any }
  }

  return {
    url,
    root,
    token: first.token,
    accountId: first.accountId,
    call,
    async close() {
      await app.stop(true)
      await worker.stop()
      root.db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export type ConsoleServer = Awaited<ReturnType<typeof consoleServer>>

/**
 * A page with a bounded default wait, the clipboard allowed, and every request
 * it makes recorded (the test checks they all stay on the server's origin).
 */
export async function openPage(browser: Browser, origin: string, viewport = { width: 1280, height: 800 }) {
  const context: BrowserContext = await browser.newContext({ viewport, baseURL: origin })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
  const page: Page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const requests: string[] = []
  const problems: string[] = []
  page.on('request', (r) => requests.push(r.url()))
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`)
  })
  return { context, page, requests, problems }
}

export const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
