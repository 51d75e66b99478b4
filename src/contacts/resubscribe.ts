import { and, eq, gt, inArray } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import { accounts, contactResubscribes, contacts, suppressions } from '../db/tables'
import type { Deps } from '../deps'
import { systemActor, type Actor } from '../lib/actor'
import { DAY, iso } from '../lib/clock'
import { hmac, safeEqual } from '../lib/crypto'
import { escapeHtml as esc } from '../lib/html'
import { UUID_RE } from '../lib/ids'
import { page } from '../tracking/pages'
import { optedOut } from './consent'
import { findContact, toContact, type ContactRow } from './service'

/** How long a confirmation link works. */
export const RESUBSCRIBE_TTL = 7 * DAY

type RequestRow = typeof contactResubscribes.$inferSelect

/** `<request id>.<mac>`: the mac (HMAC with the deployment secret) stops anyone from making a link for a request. */
const mac = (secret: string, id: string) => hmac(secret, `resubscribe:${id}`).slice(0, 32)
const tokenOf = (secret: string, id: string) => `${id}.${mac(secret, id)}`

function readToken(secret: string, token: string): string | null {
  const parts = token.split('.')
  if (parts.length !== 2 || !UUID_RE.test(parts[0])) return null
  return safeEqual(parts[1], mac(secret, parts[0])) ? parts[0] : null
}

const publicRequest = (r: RequestRow) => ({ object: 'contact_resubscribe' as const, id: r.id, contact_id: r.contactId, email: r.email, status: r.status, expires_at: r.expiresAt })

/**
 * POST /contacts/{id}/resubscribe. A contact who unsubscribed (or whose address is
 * suppressed by their own unsubscribe or complaint) gets mail again only after they
 * confirm: this answers a single-use link to a confirmation page, valid 7 days, for
 * the caller to hand to the contact. A pending request is answered again rather than
 * doubled. A contact who receives mail needs nothing (`status: subscribed`).
 */
export async function requestResubscribe(deps: Deps, actor: Actor, ref: string) {
  const contact = await findContact(deps, actor, ref)
  const base = { object: 'contact_resubscribe' as const, contact_id: contact.id, email: contact.email }
  if (!contact.unsubscribed && !(await optedOut(deps.db.q, actor.accountId, [contact.email])).has(contact.email)) {
    return { ...base, id: null, status: 'subscribed' as const, confirm_url: null, expires_at: null }
  }
  const now = deps.clock.now()
  let [row] = await deps.db.q
    .select()
    .from(contactResubscribes)
    .where(and(eq(contactResubscribes.contactId, contact.id), eq(contactResubscribes.status, 'pending'), eq(contactResubscribes.email, contact.email), gt(contactResubscribes.expiresAt, iso(now))))
    .limit(1)
  if (!row) {
    row = { id: deps.ids.uuid(), accountId: actor.accountId, contactId: contact.id, email: contact.email, status: 'pending', expiresAt: iso(now + RESUBSCRIBE_TTL), createdAt: iso(now), confirmedAt: null }
    const made = row
    await deps.db.write((tx) => tx.insert(contactResubscribes).values(made))
    await recordChange(deps, actor, { resource: 'contact', resourceId: contact.id, action: 'resubscribe_requested', before: null, after: publicRequest(made) })
  }
  return { ...base, id: row.id, status: 'pending' as const, confirm_url: `${deps.config.baseUrl}/resubscribe/${tokenOf(deps.secret, row.id)}`, expires_at: row.expiresAt }
}

export interface Found {
  request: RequestRow
  contact: ContactRow
  sender: string
}

/** The request a link names, with its contact; null when the link is forged, expired, or its contact is gone or changed address. */
export async function readResubscribe(deps: Deps, token: string): Promise<Found | null> {
  const id = readToken(deps.secret, token)
  if (!id) return null
  const [request] = await deps.db.q.select().from(contactResubscribes).where(eq(contactResubscribes.id, id))
  if (!request || (request.status === 'pending' && request.expiresAt <= iso(deps.clock.now()))) return null
  const [found] = await deps.db.q
    .select({ contact: contacts, sender: accounts.name })
    .from(contacts)
    .innerJoin(accounts, eq(accounts.id, contacts.accountId))
    .where(and(eq(contacts.id, request.contactId), eq(contacts.accountId, request.accountId)))
  if (!found || found.contact.email !== request.email) return null
  return { request, contact: found.contact, sender: found.sender }
}

/**
 * The contact's own yes: the unsubscribe is lifted, and so is the suppression their
 * unsubscribe or complaint put on the address. Single-use: a second POST changes nothing.
 */
export async function confirmResubscribe(deps: Deps, found: Found) {
  const now = iso(deps.clock.now())
  const { contact } = found
  const confirmed = await deps.db.write(async (tx) => {
    const used = await tx
      .update(contactResubscribes)
      .set({ status: 'confirmed', confirmedAt: now })
      .where(and(eq(contactResubscribes.id, found.request.id), eq(contactResubscribes.status, 'pending')))
      .returning({ id: contactResubscribes.id })
    if (!used.length) return false
    await tx.update(contacts).set({ unsubscribed: false, updatedAt: now }).where(eq(contacts.id, contact.id))
    await tx
      .delete(suppressions)
      .where(and(eq(suppressions.accountId, contact.accountId), eq(suppressions.email, contact.email), inArray(suppressions.reason, ['unsubscribe', 'complaint'])))
    return true
  })
  if (!confirmed) return
  await recordChange(deps, systemActor(contact.accountId), {
    resource: 'contact',
    resourceId: contact.id,
    action: 'resubscribed',
    before: toContact(contact),
    after: toContact({ ...contact, unsubscribed: false, updatedAt: now }),
  })
}

export function confirmPage(found: Found, token: string): string {
  return page(
    'Receive mail again?',
    `<h1>Receive mail again?</h1><p><strong>${esc(found.contact.email)}</strong> unsubscribed from mail sent by ${esc(found.sender)}. Confirm to receive it again.</p>` +
      `<form method="post" action="/resubscribe/${esc(token)}"><button type="submit">Yes, send me mail again</button></form>`,
  )
}

export function resubscribedPage(found: Found): string {
  return page('Subscribed again', `<h1>You are subscribed again</h1><p><strong>${esc(found.contact.email)}</strong> will receive mail from ${esc(found.sender)} again.</p>`)
}
