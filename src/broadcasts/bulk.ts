// The set-based statements of a broadcast: its emails and their outbox rows are
// written with INSERT … SELECT from the contacts (never a row at a time through
// JavaScript), and a cancel stops every waiting message in one UPDATE.
import { and, eq, inArray, isNull, lt, or, sql, type SQL } from 'drizzle-orm'
import type { Tx } from '../db'
import { broadcasts, contacts, deliveries, emailEvents, emails } from '../db/tables'
import type { Ids } from '../lib/ids'
import { parseAddress } from '../emails/address'
import { simulatorAddress } from './audience'
import { announceDue } from '../delivery/due'

type BroadcastRow = typeof broadcasts.$inferSelect

/**
 * Ids made in SQL for the rows of one statement. The prefix is the first 19
 * characters of a UUIDv7 from the injected generator (its time and sequence), so
 * the rows sort after everything made before them, no other id shares the prefix,
 * and `between` over its range finds exactly this statement's rows; the rest is
 * random, as a UUIDv7's is.
 */
export interface Batch {
  prefix: string
  lo: string
  hi: string
}
function batch(ids: Ids): Batch {
  const prefix = ids.uuid().slice(0, 19)
  return { prefix, lo: `${prefix}0000-000000000000`, hi: `${prefix}ffff-ffffffffffff` }
}
const idSql = (b: Batch) => sql`lower(${b.prefix} || substr('89ab', 1 + (random() & 3), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`

/** The rows of one batch of a broadcast's emails. */
const inBatch = (broadcastId: string, b: Batch) => sql`${emails.broadcastId} = ${broadcastId} and ${emails.id} between ${b.lo} and ${b.hi}`
const recipientOf = sql`json_extract(${emails.to}, '$[0]')`

export interface EmailSpec {
  host: string
  /** The subject for the selected contact (`subjectSql`). */
  subject: SQL
  tracking: { open: boolean; click: boolean }
  at: string
}

/**
 * One email per contact `cond` selects, at bulk priority, waiting in the queue
 * (`last_event` queued): what the send path writes for one recipient, without
 * bodies (they stay on the broadcast). Returns the batch that names them.
 */
export async function insertEmails(tx: Tx, ids: Ids, b: BroadcastRow, cond: SQL, s: EmailSpec): Promise<Batch> {
  const made = batch(ids)
  await tx.run(sql`
    insert into ${emails} (id, account_id, api_key_id, domain_id, "from", from_email, "to", cc, bcc, reply_to, subject, headers, tags, topic_id, template_id, broadcast_id,
      message_id, priority, simulator, open_tracking, click_tracking, last_event, created_at, updated_at)
    select id, ${b.accountId}, ${b.apiKeyId}, ${b.domainId}, ${b.from}, ${parseAddress(b.from)!.address}, json_array(email), '[]', '[]', ${JSON.stringify(b.replyTo)}, subject, '{}', '[]',
      ${b.topicId}, ${b.templateId}, ${b.id}, id || ${`@${s.host}`}, 'bulk', sim, ${s.tracking.open ? 1 : 0}, ${s.tracking.click ? 1 : 0}, 'queued', ${s.at}, ${s.at}
    from (select ${idSql(made)} as id, ${contacts.email} as email, ${s.subject} as subject, ${simulatorAddress} as sim from ${contacts} where ${cond})`)
  return made
}

/**
 * The outbox row of each email of the batch (bulk priority, due now); returns how
 * many emails it holds. Unlike a send's, a broadcast's email records no `queued`
 * event: its state says it, the broadcast records when sending started, and the
 * event would be a quarter of the fan-out's cost.
 */
export async function enqueue(tx: Tx, ids: Ids, b: BroadcastRow, emailBatch: Batch, at: string): Promise<number> {
  const ours = inBatch(b.id, emailBatch)
  await tx.run(sql`
    insert into ${deliveries} (id, email_id, account_id, recipient, recipient_domain, kind, state, priority, next_attempt_at, attempts, created_at, updated_at)
    select ${idSql(batch(ids))}, id, account_id, r, substr(r, instr(r, '@') + 1), 'to', 'queued', 1, ${at}, 0, ${at}, ${at}
    from (select ${emails.id} as id, ${emails.accountId} as account_id, ${recipientOf} as r from ${emails} where ${ours})`)
  const [{ n }] = await tx.all<{ n: number }>(sql`select count(*) as n from ${emails} where ${ours}`)
  if (n) announceDue()
  return n
}

/** The emails of a batch with the reason their address is suppressed. */
export function suppressedOf(tx: Tx, b: BroadcastRow, emailBatch: Batch) {
  return tx.all<{ id: string; email: string; reason: string }>(sql`
    select e.id as id, e.email as email, s.reason as reason
    from (select ${emails.id} as id, ${recipientOf} as email from ${emails} where ${inBatch(b.id, emailBatch)}) e
    join suppressions s on s.account_id = ${b.accountId} and s.email = e.email`)
}

/**
 * Stops every message of the broadcast still waiting in the queue and nobody is
 * sending right now (no live lease): its outbox row and email become canceled,
 * with a `canceled` event. Returns how many it stopped. No webhook event goes out
 * per message: a cancel of a large broadcast would flood every endpoint.
 */
export async function cancelWaiting(tx: Tx, ids: Ids, broadcastId: string, at: string): Promise<number> {
  const stopped = await tx
    .update(deliveries)
    .set({ state: 'canceled', updatedAt: at })
    .where(
      and(
        inArray(deliveries.emailId, tx.select({ id: emails.id }).from(emails).where(eq(emails.broadcastId, broadcastId))),
        inArray(deliveries.state, ['queued', 'deferred', 'scheduled']),
        or(isNull(deliveries.leaseUntil), lt(deliveries.leaseUntil, at)),
      ),
    )
    .returning({ id: deliveries.id })
  if (!stopped.length) return 0
  const affected = sql`${emails.broadcastId} = ${broadcastId} and ${emails.lastEvent} <> 'canceled'
    and exists (select 1 from ${deliveries} where ${deliveries.emailId} = ${emails.id} and ${deliveries.state} = 'canceled')`
  await tx.run(sql`
    insert into ${emailEvents} (id, account_id, email_id, type, recipient, data, created_at)
    select ${idSql(batch(ids))}, ${emails.accountId}, ${emails.id}, 'canceled', null, ${JSON.stringify({ broadcast_id: broadcastId })}, ${at}
    from ${emails} where ${affected}`)
  await tx.run(sql`update ${emails} set last_event = 'canceled', updated_at = ${at} where ${affected}`)
  return stopped.length
}
