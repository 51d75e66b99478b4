import { and, inArray, lte, sql } from 'drizzle-orm'
import { deliveries, webhookDeliveries } from '../db/tables'
import { iso } from '../lib/clock'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'

export const VERSION = '0.1.0'

export interface Runtime {
  startedAt: number
  /** The scheduler's jobs, when the background runtime is running in this process. */
  jobs(): { name: string; next_run_at: string | null }[]
  /** Whether this process's delivery worker is taking mail from the outbox. */
  delivering(): boolean
  /** The inbound SMTP listener of this process, when one was started. */
  smtp?: () => { status: 'ok' | 'failing'; port: number; detail?: string }
  /** Whether this process's webhook dispatcher is taking events from the outbox, when one runs here. */
  dispatching?: () => boolean
}

/** Readiness: storage answers, the scheduler runs; later parts add their own checks. */
export async function status(deps: Deps, runtime: Runtime) {
  const t0 = performance.now()
  let storage: { status: 'ok' | 'failing'; latency_ms?: number; detail?: string }
  try {
    await deps.db.q.run(sql`select 1`)
    storage = { status: 'ok', latency_ms: Math.round((performance.now() - t0) * 100) / 100 }
  } catch (e) {
    storage = { status: 'failing', detail: (e as Error).message }
  }
  const jobs = runtime.jobs()
  const backlog = storage.status === 'ok' ? await dueDeliveries(deps) : 0
  const smtp = runtime.smtp?.()
  const smtpListener = smtp ?? { status: 'not_configured' as const, detail: 'no SMTP listener runs in this process' }
  const webhookBacklog = storage.status === 'ok' ? await dueWebhookEvents(deps) : 0
  const dispatcher = runtime.dispatching
    ? { status: runtime.dispatching() ? ('ok' as const) : ('failing' as const), backlog: webhookBacklog }
    : { status: 'not_configured' as const, detail: 'no webhook dispatcher runs in this process', backlog: webhookBacklog }
  const body = {
    object: 'status' as const,
    status: storage.status === 'ok' && jobs.length > 0 && runtime.delivering() && smtpListener.status !== 'failing' && dispatcher.status !== 'failing' ? ('ok' as const) : ('degraded' as const),
    version: VERSION,
    uptime_seconds: Math.floor((deps.clock.now() - runtime.startedAt) / 1000),
    checks: {
      storage,
      scheduler: { status: jobs.length ? ('ok' as const) : ('failing' as const), jobs },
      delivery: { status: runtime.delivering() ? ('ok' as const) : ('failing' as const), mode: deps.config.delivery, backlog },
      smtp_listener: smtpListener,
      webhook_dispatcher: dispatcher,
    },
  }
  if (storage.status !== 'ok') throw new AppError('service_unavailable', { message: 'Storage is not answering.', extra: { status: body } })
  return body
}

/** Outbox rows due now and not yet delivered: what the worker still has to do. */
async function dueDeliveries(deps: Deps) {
  const [{ n }] = await deps.db.q
    .select({ n: sql<number>`count(*)` })
    .from(deliveries)
    .where(and(inArray(deliveries.state, ['queued', 'deferred', 'scheduled']), lte(deliveries.nextAttemptAt, iso(deps.clock.now()))))
  return Number(n)
}

/** Webhook events due now and not yet delivered, on every endpoint. */
async function dueWebhookEvents(deps: Deps) {
  const [{ n }] = await deps.db.q
    .select({ n: sql<number>`count(*)` })
    .from(webhookDeliveries)
    .where(and(sql`${webhookDeliveries.state} = 'pending'`, lte(webhookDeliveries.nextAttemptAt, iso(deps.clock.now()))))
  return Number(n)
}
