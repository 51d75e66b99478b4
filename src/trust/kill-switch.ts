import { and, eq, gte, inArray, isNull, sql } from 'drizzle-orm'
import { pauseKey } from '../api-keys/service'
import { apiKeys, deliveries, emailEvents, emails } from '../db/tables'
import type { RootDeps } from '../deps'
import { MINUTE, iso } from '../lib/clock'

/** Enhanced status codes of the 5.1 class: the address itself is bad (RFC 3463). */
const INVALID_RECIPIENT = sql`(${deliveries.state} = 'bounced' and ${deliveries.lastResponse} like '%5.1.%')`

/**
 * The trust system's kill switch, run by the scheduler: a live key whose real
 * (not simulator) sends of the last window bounce, draw complaints or hit
 * invalid addresses above the operator's percentages is paused until a person
 * resumes it. Keys with fewer sends than the minimum are not judged.
 */
export async function runKillSwitch(root: RootDeps) {
  const c = root.config.controls
  const since = iso(root.clock.now() - c.killSwitchWindowMinutes * MINUTE)
  const live = and(eq(apiKeys.id, emails.apiKeyId), isNull(apiKeys.pausedAt), isNull(apiKeys.revokedAt))
  const sent = await root.db.q
    .select({
      keyId: apiKeys.id,
      sent: sql<number>`count(*)`,
      bounced: sql<number>`sum(case when ${deliveries.state} = 'bounced' then 1 else 0 end)`,
      invalid: sql<number>`sum(case when ${INVALID_RECIPIENT} then 1 else 0 end)`,
    })
    .from(deliveries)
    .innerJoin(emails, eq(emails.id, deliveries.emailId))
    .innerJoin(apiKeys, live)
    .where(and(gte(deliveries.createdAt, since), eq(emails.simulator, false)))
    .groupBy(apiKeys.id)
  const judged = sent.filter((r) => Number(r.sent) >= c.killSwitchMinSends)
  if (!judged.length) return []
  const complaints = await root.db.q
    .select({ keyId: emails.apiKeyId, n: sql<number>`count(*)` })
    .from(emailEvents)
    .innerJoin(emails, eq(emails.id, emailEvents.emailId))
    .where(and(eq(emailEvents.type, 'complained'), gte(emailEvents.createdAt, since), inArray(emails.apiKeyId, judged.map((r) => r.keyId))))
    .groupBy(emails.apiKeyId)
  const paused: string[] = []
  for (const r of judged) {
    const n = Number(r.sent)
    const share = (x: number) => (100 * x) / n
    const complained = Number(complaints.find((x) => x.keyId === r.keyId)?.n ?? 0)
    const reasons = [
      share(Number(r.bounced)) >= c.killSwitchBouncePercent && `${r.bounced} of ${n} sends bounced`,
      share(complained) >= c.killSwitchComplaintPercent && `${complained} of ${n} sends drew complaints`,
      share(Number(r.invalid)) >= c.killSwitchInvalidPercent && `${r.invalid} of ${n} recipients do not exist`,
    ].filter(Boolean)
    if (!reasons.length) continue
    await pauseKey(root, r.keyId, `${reasons.join('; ')} in the last ${c.killSwitchWindowMinutes} minutes`)
    paused.push(r.keyId)
  }
  return paused
}
