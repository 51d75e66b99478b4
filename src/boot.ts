import { mkdirSync } from 'node:fs'
import { deploymentSecret } from './accounts/service'
import { KeyUsage } from './api-keys/usage'
import type { Config } from './config'
import { Database } from './db'
import { migrate } from './db/migrate'
import type { RootDeps } from './deps'
import { systemClock, type Clock } from './lib/clock'
import { uuidV7, type Ids } from './lib/ids'
import { jsonLogger, type Logger } from './lib/log'
import { TokenBuckets } from './lib/token-bucket'
import { RequestLog } from './logs/buffer'
import { SignInGuard } from './sessions/guard'

export interface BootOptions {
  clock?: Clock
  ids?: Ids
  log?: Logger
}

/** Opens storage, applies the embedded migrations, and assembles the process's dependencies. */
export async function openRoot(config: Config, opts: BootOptions = {}): Promise<RootDeps> {
  if (config.databaseUrl.startsWith('file:')) mkdirSync(config.dataDir, { recursive: true })
  const db = Database.open(config.databaseUrl, config.databaseAuthToken, config.databaseTimeoutMs)
  await migrate(db)
  const clock = opts.clock ?? systemClock
  const log = opts.log ?? jsonLogger()
  return {
    db,
    clock,
    ids: opts.ids ?? uuidV7(clock),
    config,
    log,
    secret: await deploymentSecret(db),
    buckets: new TokenBuckets(config.rateLimiterEntries),
    keyUsage: new KeyUsage(),
    requestLog: new RequestLog(db, log),
    signIns: new SignInGuard(),
  }
}
