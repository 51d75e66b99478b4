import { and, eq, ne } from 'drizzle-orm'
import { queueSignal } from '../automations/signals'
import { assertEventUnused } from '../automations/usage'
import { findContact } from '../contacts/service'
import type { Tx } from '../db'
import { pageOf } from '../db/paging'
import { eventDefinitions, eventOccurrences, type EventFieldType } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound, type FieldIssue } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { UUID_RE } from '../lib/ids'
import { listKey, type PageQuery } from '../lib/paging'
import type { CreateEvent, SendEvent, UpdateEvent } from './schema'

export type EventRow = typeof eventDefinitions.$inferSelect

/** Names the system may use for its own events one day; Resend reserves `resend:` the same way. */
const RESERVED_PREFIXES = ['resend:', 'mailroom:']

export function toEvent(row: EventRow) {
  return { object: 'event' as const, id: row.id, name: row.name, schema: row.schema ?? null, created_at: row.createdAt, updated_at: row.updatedAt }
}

function assertNotReserved(name: string) {
  const prefix = RESERVED_PREFIXES.find((p) => name.toLowerCase().startsWith(p))
  if (prefix) throw new AppError('invalid_parameter', { message: `Event names cannot start with \`${prefix}\`: the prefix is reserved.`, details: [{ field: 'name', message: `starts with the reserved prefix \`${prefix}\`` }] })
}

async function assertNameFree(tx: Tx, accountId: string, name: string, exceptId?: string) {
  const [taken] = await tx
    .select({ id: eventDefinitions.id })
    .from(eventDefinitions)
    .where(and(eq(eventDefinitions.accountId, accountId), eq(eventDefinitions.name, name), exceptId ? ne(eventDefinitions.id, exceptId) : undefined))
    .limit(1)
  if (taken) throw new AppError('event_name_taken', { message: `An event named "${name}" already exists in this account (${taken.id}).`, extra: { event_id: taken.id } })
}

/** An event by id or by its exact name, as Resend's `{identifier}` allows. */
export async function findEvent(deps: Deps, actor: Actor, ref: string) {
  const match = UUID_RE.test(ref) ? eq(eventDefinitions.id, ref.toLowerCase()) : eq(eventDefinitions.name, ref)
  const [row] = await deps.db.q
    .select()
    .from(eventDefinitions)
    .where(and(eq(eventDefinitions.accountId, actor.accountId), match))
  if (!row) throw notFound(`Event ${ref}`)
  return row
}

export async function createEvent(deps: Deps, actor: Actor, input: CreateEvent) {
  assertNotReserved(input.name)
  const now = iso(deps.clock.now())
  const row: EventRow = { id: deps.ids.uuid(), accountId: actor.accountId, name: input.name, schema: input.schema ?? null, createdAt: now, updatedAt: now }
  await deps.db.write(async (tx) => {
    await assertNameFree(tx, actor.accountId, row.name)
    await tx.insert(eventDefinitions).values(row)
  })
  return toEvent(row)
}

export async function listEvents(deps: Deps, actor: Actor, q: PageQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('events'), query: q, id: eventDefinitions.id },
    (ks) => deps.db.q.select().from(eventDefinitions).where(and(eq(eventDefinitions.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toEvent,
  )
}

export async function getEvent(deps: Deps, actor: Actor, ref: string) {
  return toEvent(await findEvent(deps, actor, ref))
}

/** Renames or replaces the payload schema (`null` clears it). Past occurrences keep the name they were sent with. */
export async function updateEvent(deps: Deps, actor: Actor, ref: string, input: UpdateEvent) {
  if (input.name === undefined && input.schema === undefined) {
    throw new AppError('missing_required_field', { message: 'Send `schema` (or `name`) to change; the body changes nothing.', details: [{ field: 'schema', message: 'required when `name` is absent' }] })
  }
  const row = await findEvent(deps, actor, ref)
  const patch: Partial<EventRow> = { updatedAt: iso(deps.clock.now()) }
  if (input.name !== undefined) {
    assertNotReserved(input.name)
    patch.name = input.name
  }
  if (input.schema !== undefined) patch.schema = input.schema
  await deps.db.write(async (tx) => {
    if (patch.name !== undefined) await assertNameFree(tx, actor.accountId, patch.name, row.id)
    if (patch.name !== undefined && patch.name !== row.name) await assertEventUnused(tx, actor.accountId, row.name, 'renamed')
    await tx.update(eventDefinitions).set(patch).where(eq(eventDefinitions.id, row.id))
  })
  return toEvent({ ...row, ...patch })
}

/** Removes the definition; recorded occurrences stay, under the name they were sent with. */
export async function deleteEvent(deps: Deps, actor: Actor, ref: string) {
  const row = await findEvent(deps, actor, ref)
  await deps.db.write(async (tx) => {
    await assertEventUnused(tx, actor.accountId, row.name, 'deleted')
    await tx.delete(eventDefinitions).where(eq(eventDefinitions.id, row.id))
  })
  return { object: 'event' as const, id: row.id, deleted: true }
}

const isDate = (v: unknown) => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(Date.parse(v))

const FITS: Record<EventFieldType, (v: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  boolean: (v) => typeof v === 'boolean',
  date: isDate,
}

/** Every payload key the schema names must hold its type (or null); keys it does not name pass as sent. */
export function payloadIssues(schema: Record<string, EventFieldType> | null, payload: Record<string, unknown>): FieldIssue[] {
  if (!schema) return []
  const issues: FieldIssue[] = []
  for (const [key, type] of Object.entries(schema)) {
    const value = payload[key]
    if (value === undefined || value === null || FITS[type](value)) continue
    issues.push({ field: `payload.${key}`, message: type === 'date' ? 'must be an ISO 8601 date or date-time' : `must be a ${type}` })
  }
  return issues
}

async function contactFor(deps: Deps, actor: Actor, input: SendEvent) {
  if (input.contact_id !== undefined && input.email !== undefined) {
    throw new AppError('invalid_parameter', { message: 'Send `contact_id` or `email`, not both.', details: [{ field: 'email', message: 'not allowed with `contact_id`' }] })
  }
  const ref = input.contact_id ?? input.email
  if (ref === undefined) {
    throw new AppError('missing_required_field', { message: 'Missing the contact: send `contact_id` or `email`.', details: [{ field: 'contact_id', message: 'required unless `email` is sent' }] })
  }
  return findContact(deps, actor, ref)
}

/** Records an occurrence of a defined event for a contact. */
export async function sendEvent(deps: Deps, actor: Actor, input: SendEvent) {
  const event = await findEvent(deps, actor, input.event)
  const contact = await contactFor(deps, actor, input)
  const payload = input.payload ?? {}
  const issues = payloadIssues(event.schema, payload)
  if (issues.length) {
    throw new AppError('invalid_parameter', { message: `The payload does not match the schema of "${event.name}": ${issues.map((i) => `\`${i.field}\` ${i.message}`).join('; ')}.`, details: issues })
  }
  const row = { id: deps.ids.uuid(), accountId: actor.accountId, eventId: event.id, name: event.name, contactId: contact.id, payload, createdAt: iso(deps.clock.now()) }
  await deps.db.write(async (tx) => {
    await tx.insert(eventOccurrences).values(row)
    // The automations' outbox, committed with the occurrence: runs start from it once.
    await queueSignal(tx, { accountId: row.accountId, contactId: row.contactId, name: row.name, payload, occurrenceId: row.id, at: row.createdAt })
  })
  return { object: 'event' as const, event: event.name, id: row.id, contact_id: contact.id, created_at: row.createdAt }
}
