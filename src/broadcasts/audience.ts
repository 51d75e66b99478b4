// Who a broadcast goes to, as SQL conditions over the `contacts` table, so the
// count and the fan-out are set-based statements and never a query per contact.
//
//   the segment's members (its rules compiled to SQL, or its static members)
//   minus contacts who unsubscribed (their own no, recorded on the contact)
//   minus contacts who said no to the broadcast's topic, and for an opt-in topic
//         those who never said yes
//   minus suppressed addresses (these still get an email row, refused as
//         `suppressed`, so the recipients listing shows them)
import { and, eq, sql, type SQL } from 'drizzle-orm'
import type { Executor } from '../db'
import { contacts, contactTopics, suppressions } from '../db/tables'
import { BEHAVIOURS, SIMULATOR_DOMAINS } from '../emails/simulator'
import { segmentFilter } from '../segments/rules'

export interface Audience {
  accountId: string
  segmentId: string
  topic: { id: string; defaultSubscription: 'opt_in' | 'opt_out' } | null
}

/** Members who have not said no: to mail at all, or to the topic. */
export function willing(a: Audience): SQL {
  const answer = (subscribed: boolean) =>
    sql`exists (select 1 from ${contactTopics} where ${contactTopics.contactId} = ${contacts.id} and ${contactTopics.topicId} = ${a.topic!.id} and ${contactTopics.subscribed} = ${subscribed ? 1 : 0})`
  const topic = !a.topic ? undefined : a.topic.defaultSubscription === 'opt_in' ? answer(true) : sql`not ${answer(false)}`
  return and(eq(contacts.accountId, a.accountId), eq(contacts.unsubscribed, false), topic)!
}

export const suppressed = (a: Audience) => sql`exists (select 1 from ${suppressions} where ${suppressions.accountId} = ${a.accountId} and ${suppressions.email} = ${contacts.email})`

/** Whether the contact's address is one of the simulator's (src/emails/simulator.ts), in SQL: such recipients need no verified domain. */
export const simulatorAddress: SQL = (() => {
  const address = contacts.email
  const local = sql`substr(${address}, 1, instr(${address}, '@') - 1)`
  const base = sql`(case when instr(${local}, '+') > 0 then substr(${local}, 1, instr(${local}, '+') - 1) else ${local} end)`
  const among = (values: readonly string[]) => sql.join(values.map((v) => sql`${v}`), sql`, `)
  return sql`(substr(${address}, instr(${address}, '@') + 1) in (${among(SIMULATOR_DOMAINS)}) and ${base} in (${among(BEHAVIOURS)}))`
})()

/** How many recipients the audience has now (of them, only those `also` selects): the effective count a send states. */
export async function countRecipients(q: Executor, a: Audience, now: Date, also?: SQL): Promise<number> {
  const [row] = await q.all<{ n: number }>(sql`select count(*) as n from ${contacts} where ${and(willing(a), await segmentFilter(q, a.accountId, a.segmentId, now), sql`not ${suppressed(a)}`, also)}`)
  return row.n
}
