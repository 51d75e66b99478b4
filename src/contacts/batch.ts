import { and, eq, inArray } from 'drizzle-orm'
import { contacts } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { optedOut, resubscribeRequired } from './consent'
import type { ContactBatch, CreateContact } from './schema'
import { addMemberships, segmentIds } from './segments'
import { assertTopicsExist, createContact, normalEmail, readAnswers, recordAnswers, updateContact, type ContactRow } from './service'

/** An item's failure, named by its place in the batch; the request's transaction undoes the items before it. */
function atItem(e: unknown, index: number): unknown {
  if (!(e instanceof AppError)) return e
  return new AppError(e.code, {
    message: `Contact ${index} of the batch: ${e.message}`,
    details: (e.details ?? [{ field: '', message: e.message }]).map((d) => ({ field: `[${index}]${d.field ? `.${d.field}` : ''}`, message: d.message })),
    extra: { ...e.extra, index },
  })
}

/** An existing contact: its fields change as PATCH changes them; answers are recorded and segments joined. */
async function updateItem(deps: Deps, actor: Actor, row: ContactRow, item: CreateContact) {
  const answers = readAnswers(item.topics ?? [])
  const segments = await segmentIds(deps.db.q, actor.accountId, [...(item.segments ?? []), ...(item.audience_id ? [item.audience_id] : [])])
  const contact = await updateContact(deps, actor, row.id, { first_name: item.first_name, last_name: item.last_name, unsubscribed: item.unsubscribed, properties: item.properties })
  if (segments.length && (contact.unsubscribed || (await optedOut(deps.db.q, actor.accountId, [row.email])).has(row.email))) {
    throw resubscribeRequired(row.email, 'joining a segment')
  }
  const now = iso(deps.clock.now())
  await deps.db.write(async (tx) => {
    await assertTopicsExist(tx, actor.accountId, answers)
    await recordAnswers(tx, actor.accountId, row.id, answers, now)
    await addMemberships(tx, actor.accountId, row.id, segments, now)
  })
  return contact
}

/**
 * POST /contacts/batch: up to 100 contacts, each created when its address is new and
 * updated when it exists. All or nothing: the first bad item answers its error with
 * its `index`, and the request's transaction keeps none of the batch.
 */
export async function batchContacts(deps: Deps, actor: Actor, body: ContactBatch) {
  const items = body.contacts
  if (items === undefined) {
    throw new AppError('missing_required_field', { message: 'Missing `contacts` field: send `{contacts: [...]}` or a bare array of contacts.', details: [{ field: 'contacts', message: 'required: 1 to 100 contacts' }] })
  }
  const seen = new Map<string, number>()
  items.forEach((item, index) => {
    if (item.email === undefined) {
      throw new AppError('missing_required_field', { message: `Contact ${index} of the batch: missing \`email\` field.`, details: [{ field: `[${index}].email`, message: 'required: the address picks the contact to create or update' }], extra: { index } })
    }
    const email = normalEmail(item.email)
    const first = seen.get(email)
    if (first !== undefined) {
      throw new AppError('invalid_parameter', { message: `Contacts ${first} and ${index} of the batch have the same address (${email}); send each contact once.`, extra: { index } })
    }
    seen.set(email, index)
  })
  const existing = new Map(
    (await deps.db.q
      .select()
      .from(contacts)
      .where(and(eq(contacts.accountId, actor.accountId), inArray(contacts.email, [...seen.keys()])))).map((r) => [r.email, r]),
  )
  const data = []
  for (const [index, item] of items.entries()) {
    const row = existing.get(normalEmail(item.email!))
    try {
      data.push(row ? { ...(await updateItem(deps, actor, row, item)), action: 'updated' as const } : { ...(await createContact(deps, actor, item)), action: 'created' as const })
    } catch (e) {
      throw atItem(e, index)
    }
  }
  const updated = data.filter((d) => d.action === 'updated').length
  return { object: 'contact_batch' as const, data, created: data.length - updated, updated }
}
