import { and, count, desc, eq, inArray, sql } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import type { Executor } from '../db'
import { contactProperties, contacts, type PropertyType, type PropertyValue } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound, type FieldIssue } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import type { CreateContactProperty, UpdateContactProperty } from './schema'

export type PropertyRow = typeof contactProperties.$inferSelect
export type Definitions = Map<string, PropertyRow>

/** The list has no paging (the seed gives it no parameters), so the number of definitions is bounded. */
export const MAX_PROPERTIES = 1000

/** A contact's own fields: a property under one of these names would be ambiguous in imports. */
const RESERVED = new Set(['email', 'first_name', 'last_name', 'unsubscribed'])

export function toProperty(row: PropertyRow) {
  return {
    object: 'contact_property' as const,
    id: row.id,
    key: row.key,
    type: row.type,
    fallback_value: row.fallbackValue ?? null,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

/** An ISO 8601 date or date-time naming a real day (Date.parse rolls 2026-02-30 over to March). */
function isDate(v: string) {
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(v) || Number.isNaN(Date.parse(v))) return false
  const day = v.slice(0, 10)
  return new Date(`${day}T00:00:00Z`).toISOString().slice(0, 10) === day
}

const NAMES: Record<PropertyType, string> = { string: 'a string', number: 'a number', boolean: 'true or false', date: 'an ISO 8601 date or date-time (2026-03-02 or 2026-03-02T10:00:00Z)' }

/** Why a value does not fit a type, or null when it does. */
export function misfit(type: PropertyType, value: unknown): string | null {
  const ok =
    type === 'string' ? typeof value === 'string' : type === 'number' ? typeof value === 'number' && Number.isFinite(value) : type === 'boolean' ? typeof value === 'boolean' : typeof value === 'string' && isDate(value)
  return ok ? null : `must be ${NAMES[type]}`
}

/** The account's definitions for these keys (all of them when no keys are given). */
export async function definitions(q: Executor, accountId: string, keys?: string[]): Promise<Definitions> {
  if (keys && !keys.length) return new Map()
  const rows = await q
    .select()
    .from(contactProperties)
    .where(and(eq(contactProperties.accountId, accountId), keys ? inArray(contactProperties.key, keys) : undefined))
  return new Map(rows.map((r) => [r.key, r]))
}

/**
 * What is wrong with a contact's property values: a key the account never defined,
 * or a value not of its property's type. A null value (clears the key) fits any key.
 */
export function propertyIssues(defs: Definitions, values: Record<string, unknown>, field = 'properties'): FieldIssue[] {
  const issues: FieldIssue[] = []
  for (const [key, value] of Object.entries(values)) {
    if (value === null) continue
    const def = defs.get(key)
    if (!def) issues.push({ field: `${field}.${key}`, message: `is not a property of this account; define it first with POST /contact-properties {"key": "${key}", "type": …}` })
    else {
      const why = misfit(def.type, value)
      if (why) issues.push({ field: `${field}.${key}`, message: `${why}: the property \`${key}\` is defined as ${def.type}` })
    }
  }
  return issues
}

/** Refuses values that do not fit the account's definitions, naming every bad key at once. */
export async function checkProperties(q: Executor, accountId: string, values: Record<string, unknown> | undefined, field = 'properties') {
  if (!values) return
  const issues = propertyIssues(await definitions(q, accountId, Object.keys(values)), values, field)
  if (issues.length) {
    throw new AppError('validation_error', { message: `${issues.length === 1 ? 'A property value does' : 'Property values do'} not fit the account's contact properties: ${issues.map((i) => `\`${i.field}\` ${i.message}`).join('; ')}.`, details: issues })
  }
}

/** A CSV cell read as a value of the property's type; an empty cell leaves the value as it is (undefined). */
export function readCell(def: PropertyRow, cell: string): { value?: PropertyValue; error?: string } {
  const text = cell.trim()
  if (text === '') return {}
  let value: unknown = text
  if (def.type === 'number') value = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text) ? Number(text) : text
  if (def.type === 'boolean') value = readBoolean(text) ?? text
  const why = misfit(def.type, value)
  return why ? { error: `\`${def.key}\` ${why} (the property is defined as ${def.type}), not "${text}"` } : { value: value as PropertyValue }
}

/** true/false, 1/0, yes/no in any case; null for anything else. */
export function readBoolean(text: string): boolean | null {
  const v = text.trim().toLowerCase()
  if (v === 'true' || v === '1' || v === 'yes') return true
  if (v === 'false' || v === '0' || v === 'no') return false
  return null
}

function checkFallback(type: PropertyType, fallback: PropertyValue | null | undefined) {
  if (fallback === null || fallback === undefined) return
  const why = misfit(type, fallback)
  if (why) throw new AppError('invalid_parameter', { message: `\`fallback_value\` ${why}: the property is defined as ${type}.` })
}

async function find(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(contactProperties)
    .where(and(eq(contactProperties.id, id.toLowerCase()), eq(contactProperties.accountId, actor.accountId)))
  if (!row) throw notFound(`Contact property ${id}`)
  return row
}

export async function createProperty(deps: Deps, actor: Actor, input: CreateContactProperty) {
  for (const f of ['key', 'type'] as const) {
    if (input[f] === undefined) throw new AppError('missing_required_field', { message: `Missing \`${f}\` field.`, details: [{ field: f, message: f === 'key' ? 'required: the property key' : 'required: string, number, boolean or date' }] })
  }
  const key = input.key!
  const type = input.type!
  if (RESERVED.has(key.toLowerCase())) {
    throw new AppError('invalid_parameter', { message: `\`${key}\` is a contact field, not a custom property; choose another key.` })
  }
  checkFallback(type, input.fallback_value)
  const now = iso(deps.clock.now())
  const row: PropertyRow = { id: deps.ids.uuid(), accountId: actor.accountId, key, type, fallbackValue: input.fallback_value ?? null, createdAt: now, updatedAt: now }
  await deps.db.write(async (tx) => {
    const [taken] = await tx
      .select({ id: contactProperties.id })
      .from(contactProperties)
      .where(and(eq(contactProperties.accountId, actor.accountId), eq(contactProperties.key, key)))
    if (taken) throw new AppError('contact_property_key_taken', { message: `The property \`${key}\` already exists (${taken.id}).`, extra: { contact_property_id: taken.id } })
    const [{ n }] = await tx.select({ n: count() }).from(contactProperties).where(eq(contactProperties.accountId, actor.accountId))
    if (n >= MAX_PROPERTIES) throw new AppError('contact_property_limit_reached', { message: `The account already defines ${n} contact properties, the most it may.` })
    await tx.insert(contactProperties).values(row)
  })
  const out = toProperty(row)
  await recordChange(deps, actor, { resource: 'contact_property', resourceId: row.id, action: 'created', before: null, after: out })
  return out
}

/** Every definition of the account, newest first. */
export async function listProperties(deps: Deps, actor: Actor) {
  const rows = await deps.db.q.select().from(contactProperties).where(eq(contactProperties.accountId, actor.accountId)).orderBy(desc(contactProperties.id))
  return { object: 'list' as const, data: rows.map(toProperty), has_more: false, next_cursor: null }
}

export async function getProperty(deps: Deps, actor: Actor, id: string) {
  return toProperty(await find(deps, actor, id))
}

/** Only the fallback changes: values already stored were checked against the type, which therefore stays. */
export async function updateProperty(deps: Deps, actor: Actor, id: string, input: UpdateContactProperty) {
  const row = await find(deps, actor, id)
  if (input.key !== undefined && input.key !== row.key) {
    throw new AppError('invalid_parameter', { message: `A property's key cannot change (\`${row.key}\`); define a new property and delete this one.` })
  }
  if (input.type !== undefined && input.type !== row.type) {
    throw new AppError('invalid_parameter', { message: `A property's type cannot change (\`${row.type}\`): stored values were checked against it. Define a new property instead.` })
  }
  const next: PropertyRow = { ...row, updatedAt: iso(deps.clock.now()) }
  if (input.fallback_value !== undefined) {
    checkFallback(row.type, input.fallback_value)
    next.fallbackValue = input.fallback_value
  }
  await deps.db.write((tx) => tx.update(contactProperties).set({ fallbackValue: next.fallbackValue, updatedAt: next.updatedAt }).where(eq(contactProperties.id, row.id)))
  const out = toProperty(next)
  await recordChange(deps, actor, { resource: 'contact_property', resourceId: row.id, action: 'updated', before: toProperty(row), after: out })
  return out
}

/** Removes the definition and, in the same transaction, the key from every contact of the account. */
export async function deleteProperty(deps: Deps, actor: Actor, id: string) {
  const row = await find(deps, actor, id)
  const path = `$.${row.key}`
  await deps.db.write(async (tx) => {
    await tx
      .update(contacts)
      .set({ properties: sql`json_remove(${contacts.properties}, ${path})` })
      .where(and(eq(contacts.accountId, actor.accountId), sql`json_type(${contacts.properties}, ${path}) is not null`))
    await tx.delete(contactProperties).where(eq(contactProperties.id, row.id))
  })
  await recordChange(deps, actor, { resource: 'contact_property', resourceId: row.id, action: 'deleted', before: toProperty(row), after: null })
  return { object: 'contact_property' as const, id: row.id, deleted: true }
}
