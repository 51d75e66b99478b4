// Events placed at chosen instants on real emails, recorded the way delivery,
// tracking and the inbound listener record them (recordEvents), for metrics tests
// whose expectations are counted by hand.
import { eq } from 'drizzle-orm'
import { broadcasts, emails, inboundEmails, type EmailEventType } from '../../src/db/tables'
import { recordEvents } from '../../src/emails/events'
import { message, sent, simulated, verifiedDomain } from './emails'
import type { Harness } from './harness'

export type Ev = [emailId: string, type: EmailEventType, at: string, data?: Record<string, unknown>]

/** One recordEvents call (one transaction) for all the events given. */
export const record = (h: Harness, ...events: Ev[]) =>
  h.root.db.write((tx) => recordEvents(tx, h.root.ids, events.map(([emailId, type, at, data]) => ({ accountId: h.accountId, emailId, type, at, data, recipient: 'ada@customer.io' }))))

/** A received email at a domain of the account, as the inbound listener stores it. */
export async function receivedAt(h: Harness, domainId: string, at: string) {
  const id = h.root.ids.uuid()
  await h.root.db.write((tx) =>
    tx.insert(inboundEmails).values({
      id, accountId: h.accountId, rawId: h.root.ids.uuid(), domainId, threadId: h.root.ids.uuid(), from: 'Zed <zed@elsewhere.test>', fromEmail: 'zed@elsewhere.test',
      to: ['hello@acme.dev'], cc: [], bcc: [], replyTo: [], receivedFor: ['hello@acme.dev'], subject: 'Hi', html: null, text: 'Hi', headers: {},
      messageId: `${id}@elsewhere.test`, inReplyTo: null, references: [], auth: { spf: null, dkim: [], dmarc: null, header: null }, size: 100, createdAt: at,
    }),
  )
  return id
}

export const BROADCAST = '01900000-0000-7000-8000-0000000000bb'

/**
 * The dataset every hand-counted expectation in test/metrics.test.ts is read from
 * (UTC instants; New York leaves EST for EDT at 2026-03-08T07:00Z):
 *
 * | email | domain, key | events |
 * | E7 | acme.dev, owner | sent 03-02 12:00, delivered 12:01 |
 * | E1 | acme.dev, owner | sent 03-05 23:30, delivered 23:31, opened 03-06 04:30 and 05:10, clicked 03-07 12:00, complained 03-09 03:00 |
 * | E6 | acme.dev, owner, broadcast "March news" | sent 03-06 18:20, delivered 18:40 |
 * | R1 | received at acme.dev | received 03-06 12:00 |
 * | E3 | simulator (unverified.dev), owner | sent and delivered 03-07 10:00 |
 * | E2 | beta.dev, agent two | sent 03-08 06:30, delivered 06:31, unsubscribed 03-09 04:30 |
 * | E5 | beta.dev, agent two | sent 03-08 08:00, bounced (transient) 08:05 |
 *
 * Queries run at 2026-03-12T12:00Z.
 */
export async function dataset(h: Harness) {
  const acme = await verifiedDomain(h, 'acme.dev')
  const beta = await verifiedDomain(h, 'beta.dev')
  const agent = await h.key({ name: 'agent two' })
  const owner = (await h.call('GET', '/api-keys')).body.data.find((k: { id: string }) => k.id !== agent.id).id as string
  const E7 = await sent(h, message())
  const E1 = await sent(h, message())
  const E6 = await sent(h, message({ to: 'bob@customer.io' }))
  await h.root.db.write(async (tx) => {
    await tx.update(emails).set({ broadcastId: BROADCAST }).where(eq(emails.id, E6))
    const at = '2026-03-02T10:00:00.000Z'
    await tx.insert(broadcasts).values({ id: BROADCAST, accountId: h.accountId, name: 'March news', segmentId: h.root.ids.uuid(), from: 'Acme <news@acme.dev>', subject: 'News', replyTo: [], status: 'sent', enqueued: 1, canceledCount: 0, createdAt: at, updatedAt: at })
  })
  const E3 = await sent(h, simulated())
  const E2 = await sent(h, message({ from: 'Beta <news@beta.dev>' }), agent.token)
  const E5 = await sent(h, message({ from: 'Beta <news@beta.dev>', to: 'cy@customer.io' }), agent.token)
  await record(h, [E7, 'sent', '2026-03-02T12:00:00.000Z'], [E7, 'delivered', '2026-03-02T12:01:00.000Z'])
  await record(h, [E1, 'sent', '2026-03-05T23:30:00.000Z'], [E1, 'delivered', '2026-03-05T23:31:00.000Z'])
  // Two opens in two transactions: only the first is unique.
  await record(h, [E1, 'opened', '2026-03-06T04:30:00.000Z'])
  await record(h, [E1, 'opened', '2026-03-06T05:10:00.000Z'])
  await record(h, [E1, 'clicked', '2026-03-07T12:00:00.000Z', { click: { link: 'https://acme.dev/a' } }])
  await record(h, [E1, 'complained', '2026-03-09T03:00:00.000Z'])
  await record(h, [E6, 'sent', '2026-03-06T18:20:00.000Z'], [E6, 'delivered', '2026-03-06T18:40:00.000Z'])
  const R1 = await receivedAt(h, acme.id, '2026-03-06T12:00:00.000Z')
  await h.root.db.write((tx) => recordEvents(tx, h.root.ids, [{ accountId: h.accountId, emailId: R1, type: 'received', at: '2026-03-06T12:00:00.000Z' }]))
  await record(h, [E3, 'sent', '2026-03-07T10:00:00.000Z'], [E3, 'delivered', '2026-03-07T10:00:00.000Z'])
  await record(h, [E2, 'sent', '2026-03-08T06:30:00.000Z'], [E2, 'delivered', '2026-03-08T06:31:00.000Z'], [E2, 'unsubscribed', '2026-03-09T04:30:00.000Z'])
  await record(h, [E5, 'sent', '2026-03-08T08:00:00.000Z'], [E5, 'bounced', '2026-03-08T08:05:00.000Z', { bounce: { type: 'Transient', subType: 'MailboxFull' } }])
  h.clock.set('2026-03-12T12:00:00.000Z')
  return { acme, beta, agent, owner, E1, E2, E3, E5, E6, E7, R1 }
}

export type Dataset = Awaited<ReturnType<typeof dataset>>
