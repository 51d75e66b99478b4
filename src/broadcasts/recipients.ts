// What happened to a broadcast, per recipient and per link, read from its emails
// (one per recipient) and their events.
import { and, asc, eq, inArray, sql, type SQL } from 'drizzle-orm'
import { keyset } from '../db/paging'
import { contacts, emailEvents, emails } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { DEFAULT_LIMIT, listKey, makeCursor, readPage, toPage, type PageQuery, type PageRequest } from '../lib/paging'
import type { BounceType, RecipientsQuery } from './schema'
import { findBroadcast } from './service'

const recipientOf = sql<string>`json_extract(${emails.to}, '$[0]')`
const linkOf = sql<string>`json_extract(${emailEvents.data}, '$.click.link')`
/** Resend's bounce types, from the event's `bounce.type` (`Permanent`, `Transient`, anything else undetermined). */
const bounceTypeOf = sql<BounceType>`(case lower(json_extract(${emailEvents.data}, '$.bounce.type')) when 'permanent' then 'permanent' when 'transient' then 'transient' else 'undetermined' end)`

/**
 * The paging of a list whose rows carry opaque ids: `after` or `before` take a
 * row's `id`, a cursor signed for this list (and its filters), so a made-up or
 * foreign one answers `invalid_cursor`.
 */
function rowPage(secret: string, list: string, q: { limit?: number; after?: string; before?: string }): PageRequest {
  if (q.after && q.before) throw new AppError('invalid_cursor', { message: 'Use only one of `after` and `before`.' })
  const given = q.after || q.before
  if (!given) return { limit: q.limit ?? DEFAULT_LIMIT }
  const { anchor } = readPage(secret, list, { cursor: given })
  return { limit: q.limit ?? DEFAULT_LIMIT, anchor: { id: anchor!.id, dir: q.after ? 'after' : 'before' } }
}

/**
 * GET /broadcasts/{id}/recipients: the recipients with an event of the type asked,
 * in the order their emails were written. `unsubscribed` is always empty: an
 * unsubscribe is recorded against the contact, not the broadcast.
 */
export async function listRecipients(deps: Deps, actor: Actor, id: string, q: RecipientsQuery) {
  const row = await findBroadcast(deps, actor, id)
  if (q.bounce_type !== undefined && q.type !== 'bounced') {
    throw new AppError('invalid_parameter', { message: '`bounce_type` filters bounced recipients only: use it with `type=bounced`.', details: [{ field: 'bounce_type', message: 'only with type=bounced' }] })
  }
  const email = q.email?.trim().toLowerCase()
  const list = listKey('broadcast_recipients', { broadcast: row.id, type: q.type, email, bounce_type: q.bounce_type })
  const req = rowPage(deps.secret, list, q)
  if (q.type === 'unsubscribed') return { object: 'list' as const, data: [], has_more: false }
  const ks = keyset(emails.id, req, true)
  const event: SQL = sql`exists (select 1 from ${emailEvents} where ${emailEvents.emailId} = ${emails.id} and ${emailEvents.type} = ${q.type}${
    q.bounce_type ? sql` and ${bounceTypeOf} = ${q.bounce_type}` : sql``
  })`
  const rows = await deps.db.q
    .select({ id: emails.id, email: recipientOf, contactId: contacts.id })
    .from(emails)
    .leftJoin(contacts, and(eq(contacts.accountId, emails.accountId), eq(contacts.email, recipientOf)))
    .where(and(eq(emails.broadcastId, row.id), eq(emails.accountId, actor.accountId), email ? sql`${recipientOf} = ${email}` : undefined, event, ks.where))
    .orderBy(ks.orderBy)
    .limit(ks.limit)
  const page = toPage(deps.secret, list, req, rows, (r) => r)
  const detail = await detailsOf(deps, q.type, page.data.map((r) => r.id))
  return {
    object: 'list' as const,
    data: page.data.map((r) => ({ id: makeCursor(deps.secret, list, r.id, 'after'), email: r.email, contact_id: r.contactId, ...detail(r.id) })),
    has_more: page.has_more,
  }
}

/** What opened, clicked and bounced rows carry besides the address: counts, the links clicked, the bounce type. */
async function detailsOf(deps: Deps, type: RecipientsQuery['type'], ids: string[]): Promise<(id: string) => Record<string, unknown>> {
  if (!ids.length || (type !== 'opened' && type !== 'clicked' && type !== 'bounced')) return () => ({})
  const events = (kind: 'opened' | 'clicked' | 'bounced') => and(inArray(emailEvents.emailId, ids), eq(emailEvents.type, kind))
  if (type === 'bounced') {
    const rows = await deps.db.q.select({ emailId: emailEvents.emailId, type: bounceTypeOf }).from(emailEvents).where(events('bounced')).orderBy(asc(emailEvents.id))
    const last = new Map(rows.map((r) => [r.emailId, r.type]))
    return (id) => ({ bounce_type: last.get(id) ?? 'undetermined' })
  }
  const url = type === 'clicked' ? linkOf : sql<string>`''`
  const rows = await deps.db.q
    .select({ emailId: emailEvents.emailId, url, n: sql<number>`count(*)` })
    .from(emailEvents)
    .where(events(type))
    .groupBy(emailEvents.emailId, url)
    .orderBy(emailEvents.emailId, url)
  return (id) => {
    const mine = rows.filter((r) => r.emailId === id)
    const count = mine.reduce((n, r) => n + r.n, 0)
    return type === 'clicked' ? { count, clicked_links: mine.map((r) => ({ url: r.url, clicks: r.n })) } : { count }
  }
}

/**
 * GET /broadcasts/{id}/clicked-links: every link clicked in the broadcast's emails,
 * most clicked first, with its clicks and how many recipients clicked it. A row's
 * `id` is its place in that order, signed.
 */
export async function listClickedLinks(deps: Deps, actor: Actor, id: string, q: PageQuery) {
  const row = await findBroadcast(deps, actor, id)
  const list = listKey('broadcast_links', { broadcast: row.id })
  const req = q.cursor ? readPage(deps.secret, list, q) : rowPage(deps.secret, list, q)
  const at = req.anchor ? Number(req.anchor.id) : null
  if (at !== null && !Number.isInteger(at)) throw new AppError('invalid_cursor')
  const offset = at === null ? 0 : req.anchor!.dir === 'after' ? at + 1 : Math.max(0, at - req.limit)
  const take = at !== null && req.anchor!.dir === 'before' ? Math.min(req.limit, at) : req.limit
  const rows = await deps.db.q
    .select({ url: linkOf, clicks: sql<number>`count(*)`, uniqueClicks: sql<number>`count(distinct ${emailEvents.emailId})` })
    .from(emails)
    .innerJoin(emailEvents, eq(emailEvents.emailId, emails.id))
    .where(and(eq(emails.broadcastId, row.id), eq(emails.accountId, actor.accountId), eq(emailEvents.type, 'clicked')))
    .groupBy(linkOf)
    .orderBy(sql`count(*) desc`, linkOf)
    .limit(take + 1)
    .offset(offset)
  const more = req.anchor?.dir === 'before' ? offset > 0 : rows.length > take
  const data = rows.slice(0, take).map((r, i) => ({ id: makeCursor(deps.secret, list, String(offset + i), 'after'), url: r.url, clicks: r.clicks, unique_clicks: r.uniqueClicks }))
  const edge = req.anchor?.dir === 'before' ? offset : offset + data.length - 1
  return {
    object: 'list' as const,
    data,
    has_more: more,
    next_cursor: more && data.length ? makeCursor(deps.secret, list, String(edge), req.anchor?.dir === 'before' ? 'before' : 'after') : null,
  }
}
