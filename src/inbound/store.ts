// What happens to a message the listener accepted: it is stored raw and committed
// first (before the 250), then read, authenticated and turned into inbound emails
// of the accounts that own its recipient domains, or, at a return-path host, into
// the bounce or complaint it reports.
import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Config } from '../config'
import type { Tx } from '../db'
import { prepared, rowInserter } from '../db/prepared'
import { domains, inboundAttachments, inboundEmails, inboundRaw, type InboundAuth } from '../db/tables'
import type { RootDeps } from '../deps'
import { bareAddress } from '../emails/address'
import { recordEvent } from '../emails/events'
import { isSimulatorAddress } from '../emails/simulator'
import { iso } from '../lib/clock'
import { addToThread, resolveThread } from '../receiving/threads'
import { applyReport, matchDelivery, parseReport, verpDeliveryId, type Applied } from './bounces'
import type { ParsedInbound } from './parse'
import { readMessage } from './read'
import { readSubscription, unsubscribe } from '../tracking/service'
import { receivedEventData } from '../webhooks/email-events'
import { queueWebhookEvents } from '../webhooks/outbox'

export type Route = { kind: 'mail'; accountId: string; domainId: string } | { kind: 'report' }

// Asked at every RCPT TO: prepared once, not built by drizzle each time.
const receivingDomain = prepared((q) =>
  q
    .select({ id: domains.id, accountId: domains.accountId })
    .from(domains)
    .where(and(eq(domains.name, sql.placeholder('name')), eq(domains.receivingEnabled, true), eq(domains.status, 'verified')))
    .limit(1)
    .prepare(),
)
const returnPathHost = prepared((q) =>
  q
    .select({ id: domains.id })
    .from(domains)
    .where(and(eq(domains.customReturnPath, sql.placeholder('label')), eq(domains.name, sql.placeholder('name'))))
    .limit(1)
    .prepare(),
)

/**
 * Whether we take mail for an address: a domain with receiving enabled and verified
 * (on whichever account verified it), or a return-path host of any domain (or our
 * own host name, the return path of simulator-domain sends, for `bounces+…`).
 * Anything else, simulator addresses included, is refused: never an open relay.
 */
export async function routeRecipient(root: Pick<RootDeps, 'db' | 'config'>, address: string): Promise<Route | null> {
  const addr = address.trim().toLowerCase()
  const at = addr.lastIndexOf('@')
  if (at <= 0 || at === addr.length - 1 || isSimulatorAddress(addr)) return null
  const domain = addr.slice(at + 1).replace(/\.$/, '')
  if (domain === root.config.hostname) return verpDeliveryId(addr) ? { kind: 'report' } : null
  const [mail] = await receivingDomain(root.db.q).all({ name: domain })
  if (mail) return { kind: 'mail', accountId: mail.accountId, domainId: mail.id }
  const dot = domain.indexOf('.')
  if (dot > 0 && (await returnPathHost(root.db.q).all({ label: domain.slice(0, dot), name: domain.slice(dot + 1) })).length) return { kind: 'report' }
  return null
}

export interface Envelope {
  remoteAddress: string
  helo: string | null
  mailFrom: string | null
  rcptTo: string[]
  secure: boolean
}

/** The Received field we add on top, as every MTA does. */
export function receivedHeader(config: Config, env: Envelope, id: string, now: number): string {
  const proto = env.secure ? 'ESMTPS' : 'ESMTP'
  const forPart = env.rcptTo.length === 1 ? `\r\n\tfor <${env.rcptTo[0]}>` : ''
  return `Received: from ${env.helo ?? 'unknown'} ([${env.remoteAddress}])\r\n\tby ${config.hostname} (Mailroom) with ${proto} id ${id}${forPart};\r\n\t${new Date(now).toUTCString().replace('GMT', '+0000')}\r\n`
}

type RawRow = typeof inboundRaw.$inferSelect

// Written for every received message: statements prepared once (see rowInserter).
const insertRaw = rowInserter(inboundRaw)
const insertEmails = rowInserter(inboundEmails)
const insertAttachments = rowInserter(inboundAttachments)

/** The raw row of a message as received, our Received field on top; `state` pending until processed. */
function rawRow(root: RootDeps, env: Envelope, message: Buffer, kind: 'mail' | 'report'): RawRow {
  const id = root.ids.uuid()
  const now = root.clock.now()
  const raw = Buffer.concat([Buffer.from(receivedHeader(root.config, env, id, now)), message])
  return { id, kind, state: 'pending', remoteAddress: env.remoteAddress, helo: env.helo, mailFrom: env.mailFrom, rcptTo: env.rcptTo, size: raw.length, raw, detail: null, receivedAt: iso(now) }
}

/** Stores the message as received and waits for the commit: after this, a crash loses nothing. */
export async function storeRaw(root: RootDeps, env: Envelope, message: Buffer, kind: 'mail' | 'report'): Promise<string> {
  const row = rawRow(root, env, message, kind)
  await root.db.write((tx) => insertRaw(tx, [row]))
  return row.id
}

/**
 * A message the listener accepted, made durable before its 250 (the id returned).
 * Mail for receiving domains only (the common case) is parsed and authenticated
 * first, then stored raw together with its inbound emails in one transaction: one
 * commit a message, where storing first and processing after takes two. Anything
 * else (reports, unsubscribe mail, a message whose records cannot be written) is
 * stored raw first and processed after, as at a restart; a processing failure
 * there leaves it pending for the next start, the message being ours already.
 */
export async function receive(root: RootDeps, env: Envelope, message: Buffer, routes: ReadonlyMap<string, Route>): Promise<string> {
  // Counted as a writer on its way, so a commit waits a moment for it instead of committing alone.
  root.db.track(1)
  try {
    const { mail, reportRcpts } = splitRoutes(routes)
    const kind = mail.size ? 'mail' : 'report'
    if (!reportRcpts.length) {
      const row: RawRow = { ...rawRow(root, env, message, kind), state: 'processed' }
      try {
        const { parsed, auth } = await readMail(root, row)
        await root.db.write(async (tx) => {
          await insertRaw(tx, [row])
          await writeInbound(root, tx, row, mail, parsed, auth, row.receivedAt, true)
        })
        return row.id
      } catch (e) {
        root.log.error('inbound message could not be processed; it is stored raw and retried at the next start', { error: (e as Error).message })
        return await storeRaw(root, env, message, kind)
      }
    }
    const id = await storeRaw(root, env, message, kind)
    try {
      await processRaw(root, id)
    } catch (e) {
      root.log.error('inbound message stored but not processed; it is retried at the next start', { raw_id: id, error: (e as Error).message })
    }
    return id
  } finally {
    root.db.track(-1)
  }
}

type MailRoutes = Map<string, { domainId: string; rcpts: string[] }>

/** Envelope recipients by where they lead: each account's inbound mail, and return-path reports. */
function splitRoutes(routes: Iterable<[string, Route | null]>): { mail: MailRoutes; reportRcpts: string[] } {
  const mail: MailRoutes = new Map()
  const reportRcpts: string[] = []
  for (const [r, route] of routes) {
    if (route?.kind === 'report') reportRcpts.push(r)
    else if (route?.kind === 'mail') {
      const m = mail.get(route.accountId) ?? { domainId: route.domainId, rcpts: [] }
      m.rcpts.push(r)
      mail.set(route.accountId, m)
    }
  }
  return { mail, reportRcpts }
}

const readMail = (root: RootDeps, row: RawRow) =>
  readMessage({ raw: row.raw, auth: { ip: row.remoteAddress, helo: row.helo, sender: row.mailFrom, mta: root.config.hostname, dnsServers: root.config.dnsServers } })

export interface Processed {
  emails: { id: string; accountId: string }[]
  reports: Applied[]
  state: 'processed' | 'unmatched' | 'failed'
  detail: string | null
}

/** The Subject field of a raw message, unfolded. */
function subjectOf(raw: Buffer) {
  const head = raw.subarray(0, 65536).toString('latin1').split(/\r?\n\r?\n/)[0]
  return head.match(/^subject:[ \t]*(.*(?:\r?\n[ \t].*)*)/im)?.[1].replace(/\r?\n[ \t]+/g, ' ').trim() ?? ''
}

/**
 * The inbound email of each account a message is for, with its thread, attachments,
 * `received` event and webhook events. `fresh`: the raw row is new in this
 * transaction, so no account can have its email already (a rerun checks).
 */
async function writeInbound(root: RootDeps, tx: Tx, row: RawRow, mail: MailRoutes, parsed: ParsedInbound, auth: InboundAuth, at: string, fresh: boolean) {
  const emails: { id: string; accountId: string }[] = []
  const listed = new Set([...parsed.to, ...parsed.cc].map(bareAddress))
  for (const [accountId, { domainId, rcpts }] of mail) {
    const [done] = fresh ? [] : await tx.select({ id: inboundEmails.id }).from(inboundEmails).where(and(eq(inboundEmails.rawId, row.id), eq(inboundEmails.accountId, accountId)))
    if (done) {
      emails.push({ id: done.id, accountId })
      continue
    }
    const id = root.ids.uuid()
    const threadId = await resolveThread(tx, root.ids, accountId, parsed, at)
    const bcc = rcpts.filter((r) => !listed.has(r))
    await insertEmails(tx, [
      {
        id,
        accountId,
        rawId: row.id,
        domainId,
        threadId,
        from: parsed.from,
        fromEmail: parsed.fromEmail,
        to: parsed.to,
        cc: parsed.cc,
        bcc,
        replyTo: parsed.replyTo,
        receivedFor: rcpts,
        subject: parsed.subject,
        html: parsed.html,
        text: parsed.text,
        headers: parsed.headers,
        messageId: parsed.messageId ?? `${id}@${root.config.hostname}`,
        inReplyTo: parsed.inReplyTo,
        references: parsed.references,
        auth,
        size: row.size,
        createdAt: at,
      },
    ])
    const attachments = parsed.attachments.map((a) => ({ id: root.ids.uuid(), emailId: id, accountId, ...a }))
    for (const a of attachments) await insertAttachments(tx, [a])
    await addToThread(tx, root.ids, { accountId, threadId, messageId: parsed.messageId ?? `${id}@${root.config.hostname}`, direction: 'inbound', emailId: id, at })
    await recordEvent(tx, root.ids, {
      accountId,
      emailId: id,
      type: 'received',
      recipient: rcpts[0],
      at,
      data: { from: parsed.from, to: parsed.to, received_for: rcpts, subject: parsed.subject, message_id: parsed.messageId, attachments: parsed.attachments.length, thread_id: threadId },
    })
    await queueWebhookEvents(tx, root.ids, accountId, [{ type: 'email.received', at, orderKey: id, data: receivedEventData(id, at, parsed, bcc, attachments) }])
    emails.push({ id, accountId })
  }
  return emails
}

/** Turns a stored message into what it means. Runs again safely on a message already done. */
export async function processRaw(root: RootDeps, rawId: string): Promise<Processed> {
  const [row] = await root.db.q.select().from(inboundRaw).where(eq(inboundRaw.id, rawId))
  if (!row) throw new Error(`inbound message ${rawId} not found`)
  const at = iso(root.clock.now())
  const result: Processed = { emails: [], reports: [], state: 'processed', detail: null }
  const routes: [string, Route | null][] = []
  for (const r of row.rcptTo) routes.push([r, await routeRecipient(root, r)])
  const { mail, reportRcpts } = splitRoutes(routes)
  const notes: string[] = []
  const unsubscribeRcpts = reportRcpts.filter((r) => r.startsWith('unsubscribe@'))
  if (unsubscribeRcpts.length) {
    // The mailto form of List-Unsubscribe: the token rides in the subject we set (`unsubscribe:<token>`).
    const token = subjectOf(row.raw).match(/unsubscribe:([A-Za-z0-9_.~-]+)/)?.[1]
    const sub = token ? await readSubscription(root, token) : null
    if (sub && sub !== 'no_list') {
      await unsubscribe(root, sub, { userAgent: null, ipAddress: row.remoteAddress })
      notes.push(`unsubscribed ${sub.recipient} by mail`)
    } else notes.push('an unsubscribe message without a valid token')
    reportRcpts.splice(0, reportRcpts.length, ...reportRcpts.filter((r) => !unsubscribeRcpts.includes(r)))
    if (!mail.size && !reportRcpts.length && !(sub && sub !== 'no_list')) result.state = 'unmatched'
  }
  if (reportRcpts.length) {
    const report = parseReport(row.raw)
    const delivery = report ? await matchDelivery(root.db.q, reportRcpts, report) : null
    if (!report) notes.push('not a delivery status notification (RFC 3464) or feedback report (RFC 5965)')
    else if (!delivery) notes.push(`${report.kind.toUpperCase()} report matches no delivery (neither the VERP address nor the original Message-ID)`)
    else {
      const applied = await root.db.write((tx) => applyReport(tx, root.ids, delivery, report, at))
      result.reports.push(applied)
      notes.push(`${report.kind} ${applied.outcome}: delivery ${applied.deliveryId}`)
    }
    if (!mail.size && !result.reports.length) result.state = 'unmatched'
  }
  if (mail.size) {
    const { parsed, auth } = await readMail(root, row)
    await root.db.write(async (tx) => {
      result.emails.push(...(await writeInbound(root, tx, row, mail, parsed, auth, at, false)))
      await tx.update(inboundRaw).set({ state: 'processed', detail: notes.join('; ') || null }).where(eq(inboundRaw.id, row.id))
    })
    return result
  }
  result.detail = notes.join('; ') || null
  await root.db.write((tx) => tx.update(inboundRaw).set({ state: result.state, detail: result.detail }).where(eq(inboundRaw.id, row.id)))
  return result
}

/** Messages stored but not processed (the process stopped in between): done now, oldest first. */
export async function processPending(root: RootDeps): Promise<number> {
  const rows = await root.db.q.select({ id: inboundRaw.id }).from(inboundRaw).where(inArray(inboundRaw.state, ['pending'])).orderBy(inboundRaw.id).limit(1000)
  for (const r of rows) {
    try {
      await processRaw(root, r.id)
    } catch (e) {
      root.log.error('inbound message could not be processed', { raw_id: r.id, error: (e as Error).message })
      await root.db.write((tx) => tx.update(inboundRaw).set({ state: 'failed', detail: (e as Error).message.slice(0, 1000) }).where(eq(inboundRaw.id, r.id)))
    }
  }
  return rows.length
}
