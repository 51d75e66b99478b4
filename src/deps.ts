import type { Config } from './config'
import { AppError } from './errors/app-error'
import { UnitOfWork, type Database, type Db } from './db'
import type { Clock } from './lib/clock'
import type { Ids } from './lib/ids'
import type { Logger } from './lib/log'
import type { TokenBuckets } from './lib/token-bucket'
import type { KeyUsage } from './api-keys/usage'
import type { RequestLog } from './logs/buffer'
import type { SignInGuard } from './sessions/guard'

/** Everything a service needs from the outside world, injected so tests can swap clock and ids. */
export interface Deps {
  db: Db
  clock: Clock
  ids: Ids
  config: Config
  log: Logger
  /** Deployment secret for signing cursors; shared by every instance on one database. */
  secret: string
  buckets: TokenBuckets
  keyUsage: KeyUsage
  requestLog: RequestLog
  /** Failed sign-ins and two-factor codes, for the sign-in check. */
  signIns: SignInGuard
}

/** The process-wide dependencies: `db` is the real database, not a request's unit of work. */
export interface RootDeps extends Deps {
  db: Database
}

/** Runs `fn` as one transaction, as a request does: its writes join, and commit together at the end. */
export async function inTransaction<T>(root: RootDeps, fn: (deps: Deps) => Promise<T>): Promise<T> {
  const unit = new UnitOfWork(root.db)
  let result: T
  try {
    result = await fn({ ...root, db: unit })
  } catch (e) {
    await unit.finish(false)
    if (e instanceof AppError && e.keep) await root.db.write(e.keep)
    throw e
  }
  await unit.finish(true)
  return result
}
