import { inArray, ne } from 'drizzle-orm'
import { domains, trustStandings } from '../db/tables'
import { inTransaction, type RootDeps } from '../deps'
import { systemActor } from '../lib/actor'
import { HOUR, iso } from '../lib/clock'
import { overThresholds, sendRates } from './rates'
import { labelOf, promotion, readStanding, thresholdsOf, writeChange, type Standing } from './standing'

/** One change the review made, for the log and the tests. */
export interface Reviewed {
  accountId: string
  from: string
  to: string
}

/**
 * The scheduler's trust review. Over the window's real sends it pauses an
 * account whose rates pass the thresholds (or just the sending domains that
 * do), and lifts a pause once they are back under; then it promotes every
 * active account whose requirements for the next level are all met. Accounts
 * under review or suspended wait for a person or the operator.
 */
export async function reviewStandings(root: RootDeps): Promise<Reviewed[]> {
  const now = root.clock.now()
  const t = thresholdsOf(root.config)
  const since = iso(now - root.config.trust.windowHours * HOUR)
  const q = root.db.q
  const accountOver = new Map((await sendRates(q, since, now, 'account')).map((r) => [r.id, overThresholds(r, t)]).filter(([, x]) => x.length) as [string, string[]][])
  const domainRates = (await sendRates(q, since, now, 'domain')).map((r) => ({ accountId: r.id.split('|')[0], domainId: r.id.split('|')[1], reasons: overThresholds(r, t) })).filter((r) => r.reasons.length)
  const names = domainRates.length ? await q.select({ id: domains.id, name: domains.name }).from(domains).where(inArray(domains.id, domainRates.map((r) => r.domainId))) : []
  const domainOver = new Map<string, Map<string, string[]>>()
  for (const r of domainRates) {
    const name = names.find((n) => n.id === r.domainId)?.name
    if (name) domainOver.set(r.accountId, (domainOver.get(r.accountId) ?? new Map()).set(name, r.reasons))
  }
  const stored = await q.select().from(trustStandings).where(ne(trustStandings.state, 'suspended'))
  const ids = new Set([...accountOver.keys(), ...domainOver.keys(), ...stored.map((r) => r.accountId)])
  const out: Reviewed[] = []
  const window = `in the last ${root.config.trust.windowHours} hours`
  for (const accountId of ids) {
    await inTransaction(root, async (deps) => {
      const s = await readStanding(deps.db.q, accountId)
      if (s.state === 'suspended' || s.state === 'review') return
      const at = iso(now)
      let next: Standing = s
      let reason = ''
      const over = accountOver.get(accountId)
      if (over && s.state === 'active') {
        next = { ...s, state: 'paused', stateReason: `${over.join('; ')} ${window}`, stateSince: at }
        reason = `paused: ${next.stateReason}`
      } else if (!over && s.state === 'paused') {
        next = { ...s, state: 'active', stateReason: null, stateSince: at }
        reason = 'resumed: the rates are back under the thresholds'
      }
      const domainsOver = domainOver.get(accountId) ?? new Map<string, string[]>()
      const kept = next.pausedDomains.filter((d) => domainsOver.has(d.domain))
      const added = [...domainsOver].filter(([name]) => !kept.some((d) => d.domain === name)).map(([domain, why]) => ({ domain, reason: `${why.join('; ')} ${window}`, since: at }))
      if (kept.length !== next.pausedDomains.length || added.length) {
        next = { ...next, pausedDomains: [...kept, ...added] }
        reason = [reason, added.length && `paused ${added.map((d) => `${d.domain} (${d.reason})`).join(', ')}`, kept.length < s.pausedDomains.length && 'resumed domains back under the thresholds'].filter(Boolean).join('; ')
      }
      if (next.state === 'active' && !next.pausedDomains.length) {
        const { next: level, requirements } = await promotion(deps, accountId, next, now)
        if (level && requirements.every((r) => r.met)) {
          next = { ...next, level, levelSince: at }
          reason = [reason, `promoted to ${level}: ${requirements.map((r) => r.detail).join('; ')}`].filter(Boolean).join('; ')
        }
      }
      if (next === s) return
      await deps.db.write((tx) => writeChange(tx, deps, at, systemActor(accountId), { accountId, before: s, after: { ...next, stored: true }, reason, by: 'system' }))
      out.push({ accountId, from: labelOf(s), to: labelOf(next) })
    })
  }
  return out
}
