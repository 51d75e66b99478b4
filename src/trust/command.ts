import { accounts, TRUST_LEVELS, type TrustLevel } from '../db/tables'
import { eq } from 'drizzle-orm'
import type { RootDeps } from '../deps'
import { systemActor } from '../lib/actor'
import { iso } from '../lib/clock'
import { settleAppeals } from './service'
import { labelOf, readStanding, writeChange, type Standing } from './standing'

export const TRUST_USAGE = `usage: mailroom trust set <account-id> <level or state> [reason…]
  levels: ${TRUST_LEVELS.join(', ')} (the account's place on the ladder; its day count starts again)
  states: active (lifts a pause, review or suspension, and every domain pause), suspended`

/**
 * The operator's decision on an account's standing (there is no staff API): a
 * level, `active` or `suspended`. Pending appeals of the account are settled
 * with it. Answers the line to print; throws with the usage on bad arguments.
 */
export async function trustCommand(root: RootDeps, args: string[]): Promise<string> {
  const [verb, accountId, target, ...why] = args
  const isLevel = TRUST_LEVELS.includes(target as TrustLevel)
  if (verb !== 'set' || !accountId || !(isLevel || target === 'active' || target === 'suspended')) throw new Error(TRUST_USAGE)
  const [account] = await root.db.q.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId))
  if (!account) throw new Error(`no account ${accountId}`)
  const at = iso(root.clock.now())
  const before = await readStanding(root.db.q, accountId)
  const reason = why.join(' ') || `set to ${target} by the operator`
  const after: Standing = isLevel
    ? { ...before, level: target as TrustLevel, levelSince: at, stored: true }
    : target === 'active'
      ? { ...before, state: 'active', stateReason: null, stateSince: at, pausedDomains: [], stored: true }
      : { ...before, state: 'suspended', stateReason: reason, stateSince: at, stored: true }
  await root.db.write(async (tx) => {
    await writeChange(tx, root, at, systemActor(accountId), { accountId, before, after, reason, by: 'operator' })
    await settleAppeals(tx, accountId, `the operator set the account to ${target}: ${reason}`, at)
  })
  return `${accountId}: ${labelOf(before)} -> ${labelOf(after)}`
}
