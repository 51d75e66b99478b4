import { ensureFirstAccount } from './accounts/service'
import { buildApp } from './app'
import { redactUrl } from './audit/redact'
import { AutomationWorker } from './automations/engine'
import { openRoot } from './boot'
import { BroadcastWorker } from './broadcasts/fanout'
import { ConfigError, loadConfig, type Config } from './config'
import { LARGE_BODY_LIMIT } from './http/body'
import { DeliveryWorker } from './delivery/worker'
import { Scheduler } from './jobs'
import { startInbound, type InboundListener } from './inbound/server'
import { keepAlive, retire } from './instance'
import { trustCommand } from './trust/command'
import type { Runtime } from './meta/service'
import { WebhookDispatcher } from './webhooks/dispatcher'

function configOrExit(): Config {
  try {
    return loadConfig()
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`mailroom: invalid configuration: ${e.message}`)
      process.exit(2)
    }
    throw e
  }
}

async function main() {
  const config = configOrExit()
  const root = await openRoot(config)
  // `mailroom trust set …`: the operator's decision on a standing, made on the same database; then exit.
  if (process.argv[2] === 'trust') {
    const line = await trustCommand(root, process.argv.slice(3)).catch((e: Error) => (console.error(e.message), process.exit(2)))
    console.log(line)
    root.db.close()
    return
  }
  const first = await ensureFirstAccount(root)
  // The one line a new operator needs, printed once, on stdout.
  if (first?.generated) console.log(`API key: ${first.token}`)
  // Before any worker claims: what this process's previous life (or another dead instance) held is due again.
  await keepAlive(root)
  const scheduler = new Scheduler(root).start()
  const worker = new DeliveryWorker(root)
  const automations = new AutomationWorker(root)
  const broadcasts = new BroadcastWorker(root)
  const dispatcher = new WebhookDispatcher(root)
  const runtime: Runtime = { startedAt: scheduler.startedAt, jobs: () => scheduler.jobs(), delivering: () => worker.running, dispatching: () => dispatcher.running }
  const app = buildApp(root, runtime)
  const server = app.listen({ port: config.port, maxRequestBodySize: LARGE_BODY_LIMIT + 1024 * 1024 })
  // With PORT=0 the port is known only now; links in replies must name the real one.
  if (!process.env.MAILROOM_BASE_URL && config.port === 0) config.baseUrl = `http://localhost:${server.server?.port}`
  worker.start()
  automations.start()
  broadcasts.start()
  dispatcher.start()
  // Inbound SMTP after the HTTP server; a port already taken leaves the API up and /status degraded.
  let smtp: InboundListener | undefined
  const smtpStarted = startInbound(root).then(
    (listener) => {
      smtp = listener
      runtime.smtp = () => listener.status()
    },
    (e) => {
      const detail = `the SMTP listener could not start on ${config.smtpHost}:${config.smtpPort}: ${(e as Error).message}`
      root.log.error('smtp listener did not start', { error: detail })
      runtime.smtp = () => ({ status: 'failing', port: config.smtpPort, detail })
    },
  )

  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    root.log.info('stopping', { signal })
    await server.server?.stop(false)
    // A listener still starting is closed once it is up, so its port is never left held.
    await smtpStarted
    // Sessions in progress finish (up to 5 s); a message accepted is already stored.
    await smtp?.close().catch((e) => root.log.error('smtp listener did not stop cleanly', { error: (e as Error).message }))
    scheduler.stop()
    // Messages already handed to a mail server finish; every other lease goes back for the next start.
    // The step in progress commits (or not at all); waiting runs resume from their rows at the next start.
    await automations.stop().catch((e) => root.log.error('automation worker did not stop cleanly', { error: (e as Error).message }))
    // The chunk in progress commits; the fan-out resumes from its cursor at the next start.
    await broadcasts.stop().catch((e) => root.log.error('broadcast worker did not stop cleanly', { error: (e as Error).message }))
    await worker.stop().catch((e) => root.log.error('delivery worker did not stop cleanly', { error: (e as Error).message }))
    // Webhook requests in flight finish and are recorded; undelivered events wait in the outbox for the next start.
    await dispatcher.stop().catch((e) => root.log.error('webhook dispatcher did not stop cleanly', { error: (e as Error).message }))
    await retire(root.db).catch((e) => root.log.error('could not retire this instance', { error: (e as Error).message }))
    await root.keyUsage.flush(root.db).catch((e) => root.log.error('final usage flush failed', { error: (e as Error).message }))
    await root.requestLog.flush().catch((e) => root.log.error('final request log flush failed', { error: (e as Error).message }))
    root.db.close()
    process.exit(0)
  }
  // In the same tick as listen: a SIGTERM once /health answers is a clean stop, never the default kill.
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
  await smtpStarted
  root.log.info('listening', { url: `http://localhost:${server.server?.port}`, base_url: config.baseUrl, database: redactUrl(config.databaseUrl) })
}

main().catch((e) => {
  console.error(`mailroom: failed to start: ${e instanceof Error ? e.message : String(e)}`)
  process.exit(1)
})
