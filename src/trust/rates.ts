import { and, eq, gte, isNotNull, sql, type SQL } from 'drizzle-orm'
import type { Executor } from '../db'
import { deliveries, emailEvents, emails } from '../db/tables'

/** Enhanced status codes of the 5.1 class: the address itself is bad (RFC 3463). */
const INVALID_RECIPIENT = sql`(${deliveries.state} = 'bounced' and ${deliveries.lastResponse} like '%5.1.%')`

/** What the real (not simulator) sends of one sender did since a time. */
export interface Rates {
  /** The key id, the account id, or `account|domain id`. */
  id: string
  sent: number
  delivered: number
  bounced: number
  invalid: number
  complained: number
}

/** Who the rates are read for: each API key, each account, or each sending domain of each account. */
const GROUPS = {
  key: [emails.apiKeyId],
  account: [emails.accountId],
  domain: [emails.accountId, emails.domainId],
} as const

/**
 * The real sends since `since` by key, account or domain, with how many bounced,
 * bounced for a bad address and drew complaints; `where` narrows the emails (one
 * account, say). Sends are counted by delivery (one per recipient).
 */
export async function sendRates(q: Executor, since: string, by: keyof typeof GROUPS, where?: SQL): Promise<Rates[]> {
  const cols = GROUPS[by]
  const id = sql<string>`${cols.length > 1 ? sql`${cols[0]} || '|' || ${cols[1]}` : cols[0]}`
  const own = and(eq(emails.simulator, false), ...cols.map((c) => isNotNull(c)), where)
  const sent = await q
    .select({
      id,
      sent: sql<number>`count(*)`,
      delivered: sql<number>`sum(case when ${deliveries.state} = 'delivered' then 1 else 0 end)`,
      bounced: sql<number>`sum(case when ${deliveries.state} = 'bounced' then 1 else 0 end)`,
      invalid: sql<number>`sum(case when ${INVALID_RECIPIENT} then 1 else 0 end)`,
    })
    .from(deliveries)
    .innerJoin(emails, eq(emails.id, deliveries.emailId))
    .where(and(gte(deliveries.createdAt, since), own))
    .groupBy(...cols)
  if (!sent.length) return []
  const complaints = await q
    .select({ id, n: sql<number>`count(*)` })
    .from(emailEvents)
    .innerJoin(emails, eq(emails.id, emailEvents.emailId))
    .where(and(eq(emailEvents.type, 'complained'), gte(emailEvents.createdAt, since), own))
    .groupBy(...cols)
  const complained = new Map(complaints.map((c) => [c.id, Number(c.n)]))
  return sent.map((r) => ({ id: r.id, sent: Number(r.sent), delivered: Number(r.delivered), bounced: Number(r.bounced), invalid: Number(r.invalid), complained: complained.get(r.id) ?? 0 }))
}

/** Percentages at or above which a share of the sends is too many; an absent one is not judged. */
export interface Thresholds {
  minSends: number
  bouncePercent: number
  complaintPercent: number
  invalidPercent?: number
}

/** Why these rates pass the thresholds, one phrase a share; empty when they do not (or there are too few sends to judge). */
export function overThresholds(r: Rates, t: Thresholds): string[] {
  if (r.sent < t.minSends) return []
  const share = (x: number) => (100 * x) / r.sent
  return [
    share(r.bounced) >= t.bouncePercent && `${r.bounced} of ${r.sent} sends bounced`,
    share(r.complained) >= t.complaintPercent && `${r.complained} of ${r.sent} sends drew complaints`,
    t.invalidPercent !== undefined && share(r.invalid) >= t.invalidPercent && `${r.invalid} of ${r.sent} recipients do not exist`,
  ].filter((x): x is string => !!x)
}
