import type { contacts } from '../db/tables'
import type { Rule, RuleLeaf, VarRef } from './schema'

type ContactRow = typeof contacts.$inferSelect

/** What a run's rules and references read: the trigger's payload, the contact now, and what its waits received. */
export interface RunData {
  event: Record<string, unknown>
  contact: ContactRow | null
  waitEvents: Record<string, Record<string, unknown>>
}

/** The contact as rules and webhooks see it (the API's field names). */
export function contactView(c: ContactRow) {
  return {
    id: c.id,
    email: c.email,
    first_name: c.firstName,
    last_name: c.lastName,
    unsubscribed: c.unsubscribed,
    properties: c.properties,
    created_at: c.createdAt,
    updated_at: c.updatedAt,
  }
}

function dig(value: unknown, parts: string[]): unknown {
  let v = value
  for (const p of parts) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, p)) return undefined
    v = (v as Record<string, unknown>)[p]
  }
  return v
}

/**
 * The value at a field path. `contact.<name>` is a contact field, else a custom
 * property of that name. Event names hold dots, so `wait_events.<name>.<key>`
 * takes the longest name a wait received.
 */
function valueAt(data: RunData, path: string): unknown {
  const [ns, ...rest] = path.split('.')
  if (ns === 'event') return dig(data.event, rest)
  if (ns === 'contact') {
    if (!data.contact) return undefined
    const view = contactView(data.contact)
    return Object.hasOwn(view, rest[0]) ? dig(view, rest) : dig(view.properties, rest)
  }
  const tail = rest.join('.')
  const name = Object.keys(data.waitEvents)
    .filter((n) => tail === n || tail.startsWith(`${n}.`))
    .sort((a, b) => b.length - a.length)[0]
  if (name === undefined) return undefined
  return tail === name ? data.waitEvents[name] : dig(data.waitEvents[name], tail.slice(name.length + 1).split('.'))
}

export const isVarRef = (v: unknown): v is VarRef => v !== null && typeof v === 'object' && !Array.isArray(v) && typeof (v as VarRef).var === 'string'

/** A literal as given, or the value a `{var}` reference reads now. */
export const resolve = (v: unknown, data: RunData) => (isVarRef(v) ? valueAt(data, v.var) : v)

/** A number from a number or a numeric string; dates compare by their time. */
function comparable(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  if (typeof v !== 'string' || v.trim() === '') return null
  const n = Number(v)
  if (Number.isFinite(n)) return n
  const d = /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : NaN
  return Number.isFinite(d) ? d : null
}

function equal(a: unknown, b: unknown) {
  if (a === b) return true
  // Properties and payloads may hold `"42"` where the rule says 42.
  if (typeof a !== typeof b && (typeof a === 'number' || typeof b === 'number')) {
    const x = comparable(a)
    const y = comparable(b)
    return x !== null && x === y
  }
  return false
}

function compare(a: unknown, b: unknown, test: (x: number, y: number) => boolean) {
  const x = comparable(a)
  const y = comparable(b)
  return x !== null && y !== null && test(x, y)
}

function leafHolds(r: RuleLeaf, data: RunData): boolean {
  const v = valueAt(data, r.field)
  const want = r.value
  switch (r.operator) {
    case 'eq':
      return equal(v, want)
    case 'neq':
      return !equal(v, want)
    case 'gt':
      return compare(v, want, (x, y) => x > y)
    case 'gte':
      return compare(v, want, (x, y) => x >= y)
    case 'lt':
      return compare(v, want, (x, y) => x < y)
    case 'lte':
      return compare(v, want, (x, y) => x <= y)
    case 'contains':
      return Array.isArray(v) ? v.some((x) => equal(x, want)) : typeof v === 'string' && want !== undefined && want !== null && v.includes(String(want))
    case 'starts_with':
      return typeof v === 'string' && want !== undefined && want !== null && v.startsWith(String(want))
    case 'ends_with':
      return typeof v === 'string' && want !== undefined && want !== null && v.endsWith(String(want))
    case 'exists':
      return v !== undefined && v !== null
    case 'is_empty':
      return v === undefined || v === null || v === '' || (Array.isArray(v) ? v.length === 0 : typeof v === 'object' && Object.keys(v).length === 0)
    default:
      return false
  }
}

/** Whether a rule holds; nested rules were checked when the automation was saved. */
export function holds(rule: Rule, data: RunData): boolean {
  if (!('rules' in rule)) return leafHolds(rule, data)
  const nested = rule.rules as Rule[]
  return rule.type === 'and' ? nested.every((r) => holds(r, data)) : nested.some((r) => holds(r, data))
}
