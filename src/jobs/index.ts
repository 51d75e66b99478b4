import { Cron } from 'croner'
import { lt } from 'drizzle-orm'
import { expireActions } from '../agent-actions/service'
import { purgeSignals } from '../automations/signals'
import type { RootDeps } from '../deps'
import type { Database } from '../db'
import { apiKeyUsage, jobTicks } from '../db/tables'
import { recheckDomains } from '../domains/service'
import { runBlocklistChecks } from '../deliverability/blocklists'
import { purgeExpired } from '../http/idempotency'
import { INSTANCE_ID, keepAlive } from '../instance'
import { DAY, iso } from '../lib/clock'
import { purgeRequestLogs } from '../logs/buffer'
import { purgeSessions } from '../sessions/service'
import { purgeSupportAttachments } from '../support/service'
import { purgeWebhookLog } from '../webhooks/retention'
import { runKillSwitch } from '../trust/kill-switch'
import { reviewStandings } from '../trust/review'

/** The scheduler's jobs, as data: what runs, when (croner pattern, seconds first), and how. */
export interface Job {
  name: string
  pattern: string
  run(root: RootDeps): Promise<unknown>
  /** Runs on every instance (it flushes this process's own memory); other jobs run once per tick across all instances on the database. */
  everyInstance?: true
}

export const JOBS: Job[] = [
  { name: 'flush-key-usage', pattern: '*/5 * * * * *', run: (r) => r.keyUsage.flush(r.db), everyInstance: true },
  { name: 'instance-heartbeat', pattern: '*/5 * * * * *', run: (r) => keepAlive(r), everyInstance: true },
  { name: 'purge-idempotency-keys', pattern: '0 17 * * * *', run: (r) => purgeExpired(r.db, r.clock.now()) },
  {
    name: 'purge-key-usage',
    pattern: '0 23 3 * * *',
    run: (r) => r.db.write((tx) => tx.delete(apiKeyUsage).where(lt(apiKeyUsage.day, iso(r.clock.now() - 31 * DAY).slice(0, 10)))),
  },
  { name: 'recheck-domains', pattern: '0 */5 * * * *', run: (r) => recheckDomains(r) },
  { name: 'purge-automation-signals', pattern: '0 29 * * * *', run: (r) => purgeSignals(r.db, r.clock.now()) },
  { name: 'flush-request-logs', pattern: '* * * * * *', run: (r) => r.requestLog.flush(), everyInstance: true },
  { name: 'purge-request-logs', pattern: '0 41 * * * *', run: (r) => purgeRequestLogs(r.db, r.clock.now()) },
  { name: 'purge-webhook-log', pattern: '0 53 * * * *', run: (r) => purgeWebhookLog(r.db, r.clock.now()) },
  { name: 'purge-console-sessions', pattern: '0 11 * * * *', run: (r) => purgeSessions(r.db, r.clock.now()) },
  { name: 'expire-agent-actions', pattern: '0 * * * * *', run: (r) => expireActions(r) },
  { name: 'kill-switch', pattern: '30 * * * * *', run: (r) => runKillSwitch(r) },
  { name: 'trust-review', pattern: '45 */5 * * * *', run: (r) => reviewStandings(r) },
  { name: 'check-blocklists', pattern: '0 7 4 * * *', run: (r) => runBlocklistChecks(r) },
  { name: 'purge-support-attachments', pattern: '0 37 * * * *', run: (r) => purgeSupportAttachments(r.db, r.clock.now()) },
]

/**
 * Takes the run of `name` scheduled at `tick` for `owner`, unless an instance took
 * it already: the row moves forward only to a later tick, in one statement.
 */
export async function claimTick(db: Database, name: string, tick: string, owner: string): Promise<boolean> {
  const won = await db.write((tx) =>
    tx
      .insert(jobTicks)
      .values({ name, tick, owner })
      .onConflictDoUpdate({ target: jobTicks.name, set: { tick, owner }, setWhere: lt(jobTicks.tick, tick) })
      .returning({ name: jobTicks.name }),
  )
  return won.length > 0
}

/**
 * Runs the jobs in this process; a job never overlaps itself, and a failure is
 * logged, not fatal. Instances on one database share the deployment-wide jobs: at
 * each tick the first to claim it runs it (so a purge, a review or a notice
 * happens once), while a stopped instance leaves the next tick to the others.
 */
export class Scheduler {
  private crons: { name: string; cron: Cron }[] = []
  readonly startedAt: number
  readonly id = `${INSTANCE_ID}:jobs:${crypto.randomUUID().slice(0, 8)}`

  constructor(private readonly root: RootDeps, private readonly jobs_: Job[] = JOBS) {
    this.startedAt = root.clock.now()
  }

  start() {
    // Croner's own job names are global to the process; ours stay per scheduler.
    this.crons = this.jobs_.map((job) => ({
      name: job.name,
      cron: new Cron(job.pattern, { protect: true, timezone: 'UTC' }, async (self: Cron) => {
        try {
          // Croner fires just after the pattern's instant: the second it falls in names the tick on every instance.
          const tick = new Date(Math.floor((self.currentRun() ?? new Date()).getTime() / 1000) * 1000).toISOString()
          if (!job.everyInstance && !(await claimTick(this.root.db, job.name, tick, this.id))) return
          await job.run(this.root)
        } catch (e) {
          this.root.log.error('job failed', { job: job.name, error: (e as Error).message })
        }
      }),
    }))
    return this
  }

  /** Runs one job now (tests, and the final flush at shutdown). */
  runNow(name: string) {
    const job = this.jobs_.find((j) => j.name === name)
    if (!job) throw new Error(`no job ${name}`)
    return job.run(this.root)
  }

  jobs() {
    return this.crons.map((c) => ({ name: c.name, next_run_at: c.cron.nextRun()?.toISOString() ?? null }))
  }

  stop() {
    for (const c of this.crons) c.cron.stop()
    this.crons = []
  }
}
