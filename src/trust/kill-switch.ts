import { and, inArray, isNull } from 'drizzle-orm'
import { pauseKey } from '../api-keys/service'
import { apiKeys } from '../db/tables'
import type { RootDeps } from '../deps'
import { MINUTE, iso } from '../lib/clock'
import { overThresholds, sendRates } from './rates'

/**
 * The trust system's kill switch, run by the scheduler: a live key whose real
 * (not simulator) sends of the last window bounce, draw complaints or hit
 * invalid addresses above the operator's percentages is paused until a person
 * resumes it. Keys with fewer sends than the minimum are not judged.
 */
export async function runKillSwitch(root: RootDeps) {
  const c = root.config.controls
  const now = root.clock.now()
  const since = iso(now - c.killSwitchWindowMinutes * MINUTE)
  const thresholds = { minSends: c.killSwitchMinSends, bouncePercent: c.killSwitchBouncePercent, complaintPercent: c.killSwitchComplaintPercent, invalidPercent: c.killSwitchInvalidPercent }
  const judged = (await sendRates(root.db.q, since, now, 'key')).map((r) => ({ id: r.id, reasons: overThresholds(r, thresholds) })).filter((r) => r.reasons.length)
  if (!judged.length) return []
  const live = await root.db.q
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(inArray(apiKeys.id, judged.map((r) => r.id)), isNull(apiKeys.pausedAt), isNull(apiKeys.revokedAt)))
  const paused: string[] = []
  for (const r of judged) {
    if (!live.some((k) => k.id === r.id)) continue
    await pauseKey(root, r.id, `${r.reasons.join('; ')} in the last ${c.killSwitchWindowMinutes} minutes`)
    paused.push(r.id)
  }
  return paused
}
