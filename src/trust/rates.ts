import { and, eq, gte, isNotNull, lt, sql, type SQL } from 'drizzle-orm'
import type { Executor } from '../db'
import { deliveries, emailEvents, emails } from '../db/tables'
import { DAY, HOUR, iso, MINUTE } from '../lib/clock'
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
 * read a step at a time up to `now` (the last step open-ended), with the event loop
 * let go between steps: a day of a busy sender read in one statement held every
 * other request for 40-90 ms (the trust review at a million stored emails). Steps
 * start at an hour and follow the rows they find (`nextStep`), so a quiet month of
 * a promotion check is a handful of statements, not 720.
 */
export async function sendRates(q: Executor, since: string, now: number, by: keyof typeof GROUPS, where?: SQL): Promise<Rates[]> {
  const cols = GROUPS[by]
  const id = sql<string>`${cols.length > 1 ? sql`${cols[0]} || '|' || ${cols[1]}` : cols[0]}`
  const own = and(eq(emails.simulator, false), ...cols.map((c) => isNotNull(c)), where)
  const totals = new Map<string, Rates>()
  for (let from = since, step = HOUR; ; ) {
    const to = Date.parse(from) + step < now ? iso(Date.parse(from) + step) : null
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
    let rows = 0
    for (const r of part) {
      rows += Number(r.sent)
      const t = totals.get(r.id) ?? { id: r.id, sent: 0, delivered: 0, bounced: 0, invalid: 0, complained: 0 }
      t.sent += Number(r.sent)
      t.delivered += Number(r.delivered)
      t.bounced += Number(r.bounced)
      t.invalid += Number(r.invalid)
      totals.set(r.id, t)
    }
    if (!to) break
    from = to
    step = nextStep(step, rows)
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

/** Rows one step of `sendRates` aims at: an hour of a million-a-day sender (about 42,000) paused the event loop 4-12 ms. */
const STEP_ROWS = 20_000

/**
 * The next step's width after one of `width` found `rows`: twice as wide while the
 * rows are under half the aim, half as wide past it, between a minute and a week.
 */
export function nextStep(width: number, rows: number): number {
  if (rows > STEP_ROWS) return Math.max(MINUTE, Math.floor(width / 2))
  if (rows < STEP_ROWS / 2) return Math.min(7 * DAY, width * 2)
  return width
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
