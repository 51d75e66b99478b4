import { and, eq, inArray, isNotNull, or, sql, type SQL } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import { pageOf } from '../db/paging'
import { contacts, segmentContacts, segments } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { listKey, type PageQuery } from '../lib/paging'
import { filterOf, isMemberAt } from '../segments/rules'
import { optedOut, resubscribeRequired } from './consent'
import type { CreateContact, SegmentMembersQuery, UpdateContact } from './schema'
import { addMemberships, assertStatic, findSegment, isMember, type SegmentRow } from './segments'
import { createContact, deleteContact, findContact, listContacts, toContact, updateContact } from './service'

const toContactSegment = (r: Pick<SegmentRow, 'id' | 'name' | 'createdAt' | 'updatedAt'> & { addedAt: string | null }) => ({
  object: 'segment' as const,
  id: r.id,
  name: r.name,
  created_at: r.createdAt,
  updated_at: r.updatedAt,
  added_at: r.addedAt,
})

const change = (contactId: string, segmentId: string) => ({ object: 'contact_segment' as const, contact_id: contactId, segment_id: segmentId })

/** The ids of the account's rule segments whose rules the contact matches at `now`, in one read. */
async function ruleSegmentsOf(deps: Deps, accountId: string, contactId: string, now: Date): Promise<string[]> {
  const rows = await deps.db.q.select().from(segments).where(and(eq(segments.accountId, accountId), sql`json_array_length(${segments.rules}) > 0`))
  if (!rows.length) return []
  const filters: SQL[] = []
  for (const r of rows) filters.push(await filterOf(deps.db.q, r, now))
  const [hit] = await deps.db.q
    .select(Object.fromEntries(filters.map((f, i) => [`m${i}`, sql<number>`(${f})`])))
    .from(contacts)
    .where(eq(contacts.id, contactId))
  return hit ? rows.filter((_, i) => Number(hit[`m${i}`]) === 1).map((r) => r.id) : []
}

/** The segments a contact is in, newest segment first: static ones it was added to, and rule segments it matches now. */
export async function listContactSegments(deps: Deps, actor: Actor, ref: string, q: PageQuery) {
  const contact = await findContact(deps, actor, ref)
  const matched = await ruleSegmentsOf(deps, actor.accountId, contact.id, new Date(deps.clock.now()))
  return pageOf(
    deps.secret,
    { list: listKey('contact_segments', { contact: contact.id }), query: q, id: segments.id },
    (ks) =>
      deps.db.q
        .select({ id: segments.id, name: segments.name, createdAt: segments.createdAt, updatedAt: segments.updatedAt, addedAt: segmentContacts.createdAt })
        .from(segments)
        .leftJoin(segmentContacts, and(eq(segmentContacts.segmentId, segments.id), eq(segmentContacts.contactId, contact.id)))
        .where(
          and(
            eq(segments.accountId, actor.accountId),
            or(and(isNotNull(segmentContacts.contactId), sql`json_array_length(${segments.rules}) = 0`), matched.length ? inArray(segments.id, matched) : undefined),
            ks.where,
          ),
        )
        .orderBy(ks.orderBy)
        .limit(ks.limit),
    toContactSegment,
  )
}

/**
 * Adds a contact to a static segment. A segment feeds broadcasts, so a contact who
 * unsubscribed must confirm first. Adding a member again changes nothing (`added: false`).
 */
export async function addToSegment(deps: Deps, actor: Actor, ref: string, segmentId: string) {
  const contact = await findContact(deps, actor, ref)
  const segment = await findSegment(deps.db.q, actor.accountId, segmentId)
  assertStatic(segment)
  const out = change(contact.id, segment.id)
  if (await isMember(deps.db.q, segment.id, contact.id)) return { ...out, added: false }
  if (contact.unsubscribed || (await optedOut(deps.db.q, actor.accountId, [contact.email])).has(contact.email)) {
    throw resubscribeRequired(contact.email, `joining segment ${segment.id}`)
  }
  await deps.db.write((tx) => addMemberships(tx, actor.accountId, contact.id, [segment.id], iso(deps.clock.now())))
  // The contact's shape with the segment: its `contact.updated` event carries the new `segment_ids`.
  await recordChange(deps, actor, { resource: 'contact', resourceId: contact.id, action: 'segment_added', before: null, after: { ...toContact(contact), segment_id: segment.id } })
  return { ...out, added: true }
}

export async function removeFromSegment(deps: Deps, actor: Actor, ref: string, segmentId: string) {
  const contact = await findContact(deps, actor, ref)
  const segment = await findSegment(deps.db.q, actor.accountId, segmentId)
  assertStatic(segment)
  if (!(await isMember(deps.db.q, segment.id, contact.id))) throw notFound(`Contact ${ref} in segment ${segmentId}`)
  await deps.db.write((tx) => tx.delete(segmentContacts).where(and(eq(segmentContacts.segmentId, segment.id), eq(segmentContacts.contactId, contact.id))))
  await recordChange(deps, actor, { resource: 'contact', resourceId: contact.id, action: 'segment_removed', before: { ...toContact(contact), segment_id: segment.id }, after: null })
  return { ...change(contact.id, segment.id), deleted: true }
}

/** A segment's (or audience's) members, newest contact first. */
export const listMembers = (deps: Deps, actor: Actor, segmentId: string, q: SegmentMembersQuery) => listContacts(deps, actor, { ...q, segment_id: segmentId })

/** The legacy routes name a contact inside an audience: it must be a member (added, or matching the rules). */
async function audienceMember(deps: Deps, actor: Actor, audienceId: string, ref: string) {
  const segment = await findSegment(deps.db.q, actor.accountId, audienceId, 'Audience')
  const contact = await findContact(deps, actor, ref)
  if (!(await isMemberAt(deps.db.q, segment, contact.id, new Date(deps.clock.now())))) throw notFound(`Contact ${ref} in audience ${audienceId}`)
  return contact
}

/** Creates the contact as a member of the audience; an address already held is a conflict, as on POST /contacts. */
export async function createAudienceContact(deps: Deps, actor: Actor, audienceId: string, input: CreateContact) {
  const segment = await findSegment(deps.db.q, actor.accountId, audienceId, 'Audience')
  assertStatic(segment, 'Audience')
  if (input.audience_id !== undefined && input.audience_id.toLowerCase() !== segment.id) {
    throw new AppError('invalid_parameter', { message: `The body's \`audience_id\` (${input.audience_id}) differs from the audience in the path (${audienceId}).` })
  }
  return createContact(deps, actor, { ...input, audience_id: segment.id })
}

export async function getAudienceContact(deps: Deps, actor: Actor, audienceId: string, ref: string) {
  return toContact(await audienceMember(deps, actor, audienceId, ref))
}

export async function updateAudienceContact(deps: Deps, actor: Actor, audienceId: string, ref: string, input: UpdateContact) {
  const contact = await audienceMember(deps, actor, audienceId, ref)
  return updateContact(deps, actor, contact.id, input)
}

/** Deletes the contact, as Resend's audience-era route did (a contact then belonged to one audience). */
export async function deleteAudienceContact(deps: Deps, actor: Actor, audienceId: string, ref: string) {
  const contact = await audienceMember(deps, actor, audienceId, ref)
  return { ...(await deleteContact(deps, actor, contact.id)), contact: ref }
}
