import { and, eq, gte, isNotNull, lt, sql, type SQL } from 'drizzle-orm'
import type { Executor } from '../db'
import { deliveries, emailEvents, emails } from '../db/tables'
import { HOUR, iso } from '../lib/clock'
import { afterIo } from '../lib/nap'

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
 * account, say). Sends are counted by delivery (one per recipient). The window is
 * read an hour at a time up to `now` (the last hour open-ended), with the event loop
 * let go between hours: a day of a busy sender read in one statement held every
 * other request for 40-90 ms (the trust review at a million stored emails).
 */
export async function sendRates(q: Executor, since: string, now: number, by: keyof typeof GROUPS, where?: SQL): Promise<Rates[]> {
  const cols = GROUPS[by]
  const id = sql<string>`${cols.length > 1 ? sql`${cols[0]} || '|' || ${cols[1]}` : cols[0]}`
  const own = and(eq(emails.simulator, false), ...cols.map((c) => isNotNull(c)), where)
  const totals = new Map<string, Rates>()
  for (let from = since; ; ) {
    const to = Date.parse(from) + HOUR < now ? iso(Date.parse(from) + HOUR) : null
    const part = await q
      .select({
        id,
        sent: sql<number>`count(*)`,
        delivered: sql<number>`sum(case when ${deliveries.state} = 'delivered' then 1 else 0 end)`,
        bounced: sql<number>`sum(case when ${deliveries.state} = 'bounced' then 1 else 0 end)`,
        invalid: sql<number>`sum(case when ${INVALID_RECIPIENT} then 1 else 0 end)`,
      })
      .from(deliveries)
      .innerJoin(emails, eq(emails.id, deliveries.emailId))
      .where(and(gte(deliveries.createdAt, from), to ? lt(deliveries.createdAt, to) : undefined, own))
      .groupBy(...cols)
    for (const r of part) {
      const t = totals.get(r.id) ?? { id: r.id, sent: 0, delivered: 0, bounced: 0, invalid: 0, complained: 0 }
      t.sent += Number(r.sent)
      t.delivered += Number(r.delivered)
      t.bounced += Number(r.bounced)
      t.invalid += Number(r.invalid)
      totals.set(r.id, t)
    }
    if (!to) break
    from = to
    await afterIo()
  }
  if (!totals.size) return []
  const complaints = await q
    .select({ id, n: sql<number>`count(*)` })
    .from(emailEvents)
    .innerJoin(emails, eq(emails.id, emailEvents.emailId))
    .where(and(eq(emailEvents.type, 'complained'), gte(emailEvents.createdAt, since), own))
    .groupBy(...cols)
  for (const c of complaints) {
    const t = totals.get(c.id)
    if (t) t.complained = Number(c.n)
  }
  return [...totals.values()]
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
