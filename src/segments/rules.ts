import { and, eq, exists, gte, inArray, not, or, sql, type SQL } from 'drizzle-orm'
import { misfit } from '../contact-properties/service'
import type { Executor } from '../db'
import { contactProperties, contacts, contactTopics, emailEvents, segmentContacts, topics, type PropertyType, type PropertyValue } from '../db/tables'
import { AppError, type FieldIssue } from '../errors/app-error'
import { DAY } from '../lib/clock'
import { findSegment, isStatic, type SegmentRow } from '../contacts/segments'
import type { Match, PropertyOp, PropertyRule, Rule } from './schema'

/** Which comparisons each property type supports; `exists` and `not_exists` fit every type. */
const OPS_BY_TYPE: Record<PropertyType, readonly PropertyOp[]> = {
  string: ['eq', 'ne', 'contains', 'exists', 'not_exists'],
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'exists', 'not_exists'],
  boolean: ['eq', 'ne', 'exists', 'not_exists'],
  date: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'exists', 'not_exists'],
}

/** What a rule set reads beyond `contacts`: the property definitions and topics it names. */
interface Context {
  properties: Map<string, { type: PropertyType; fallback: PropertyValue | null }>
  /** Topic id → whether a contact who never answered counts as subscribed. */
  topicDefaults: Map<string, boolean>
}

async function contextOf(q: Executor, accountId: string, rules: Rule[]): Promise<Context> {
  const keys = [...new Set(rules.flatMap((r) => (r.field === 'property' ? [r.key] : [])))]
  const topicIds = [...new Set(rules.flatMap((r) => (r.field === 'topic' ? [r.topic_id.toLowerCase()] : [])))]
  // One after the other: `q` may be a transaction, which runs one statement at a time.
  const props = keys.length
    ? await q
        .select({ key: contactProperties.key, type: contactProperties.type, fallback: contactProperties.fallbackValue })
        .from(contactProperties)
        .where(and(eq(contactProperties.accountId, accountId), inArray(contactProperties.key, keys)))
    : []
  const tops = topicIds.length
    ? await q
        .select({ id: topics.id, defaultSubscription: topics.defaultSubscription })
        .from(topics)
        .where(and(eq(topics.accountId, accountId), inArray(topics.id, topicIds)))
    : []
  return {
    properties: new Map(props.map((p) => [p.key, { type: p.type, fallback: p.fallback ?? null }])),
    topicDefaults: new Map(tops.map((t) => [t.id, t.defaultSubscription === 'opt_out'])),
  }
}

/** The date a `created_at` rule or a date property compares against, or null when `value` is none. */
const dateOf = (value: unknown) => (typeof value === 'string' && misfit('date', value) === null ? new Date(value).toISOString() : null)

function propertyIssue(rule: PropertyRule, ctx: Context): FieldIssue | null {
  const def = ctx.properties.get(rule.key)
  if (!def) return { field: 'key', message: `\`${rule.key}\` is not a contact property of this account; define it with POST /contact-properties or use an existing key` }
  if (!OPS_BY_TYPE[def.type].includes(rule.op)) {
    return { field: 'op', message: `\`${rule.op}\` does not apply to \`${rule.key}\`, a ${def.type} property; use one of ${OPS_BY_TYPE[def.type].join(', ')}` }
  }
  const presence = rule.op === 'exists' || rule.op === 'not_exists'
  if (presence) return rule.value === undefined ? null : { field: 'value', message: `\`${rule.op}\` takes no value` }
  if (rule.value === undefined) return { field: 'value', message: `\`${rule.op}\` needs a value of the property’s type (${def.type})` }
  const why = misfit(def.type, rule.value)
  return why ? { field: 'value', message: `${why}: \`${rule.key}\` is a ${def.type} property` } : null
}

function ruleIssue(rule: Rule, ctx: Context): FieldIssue | null {
  switch (rule.field) {
    case 'property':
      return propertyIssue(rule, ctx)
    case 'topic':
      return ctx.topicDefaults.has(rule.topic_id.toLowerCase()) ? null : { field: 'topic_id', message: `topic ${rule.topic_id} does not exist in this account` }
    case 'created_at':
      if (rule.op === 'within_days') {
        return Number.isInteger(rule.value) && (rule.value as number) >= 1 && (rule.value as number) <= 3650 ? null : { field: 'value', message: '`within_days` takes a whole number of days from 1 to 3650' }
      }
      return dateOf(rule.value) ? null : { field: 'value', message: `\`${rule.op}\` takes an ISO 8601 date or date-time (2026-03-02 or 2026-03-02T10:00:00Z)` }
    default:
      return null
  }
}

/**
 * Checks rules against what the account defines: every property must exist and
 * suit the comparison, every topic must exist, dates must be dates. All problems
 * are reported at once, each naming its rule by index.
 */
export async function checkRules(q: Executor, accountId: string, rules: Rule[]) {
  const ctx = await contextOf(q, accountId, rules)
  const issues = rules.flatMap((r, i) => {
    const issue = ruleIssue(r, ctx)
    return issue ? [{ field: `rules[${i}].${issue.field}`, message: issue.message }] : []
  })
  if (issues.length) {
    throw new AppError('invalid_parameter', { message: `${issues.map((i) => `\`${i.field}\`: ${i.message}`).join('; ')}.`, details: issues })
  }
}

/** `$."key"`: a JSON path naming the key literally, whatever characters it holds. */
const pathOf = (key: string) => `$."${key.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`

/** JSON booleans read back from SQLite as 1 and 0. */
const sqlValue = (v: PropertyValue) => (typeof v === 'boolean' ? Number(v) : v)

function propertyCondition(rule: PropertyRule, ctx: Context): SQL {
  const def = ctx.properties.get(rule.key)
  // A property deleted after the rule was saved selects nobody: a segment that
  // silently grew to every contact could send a broadcast to all of them.
  if (!def) return sql`0`
  const own = sql`json_extract(${contacts.properties}, ${pathOf(rule.key)})`
  if (rule.op === 'exists') return sql`${own} is not null`
  if (rule.op === 'not_exists') return sql`${own} is null`
  const value = sqlValue(rule.value!)
  const current = def.fallback === null ? own : sql`coalesce(${own}, ${sqlValue(def.fallback)})`
  if (rule.op === 'contains') return sql`instr(lower(${current}), lower(${value})) > 0`
  // Dates are compared as instants, so `2026-03-02` and `2026-03-02T00:00:00Z` are equal.
  const [left, right] = def.type === 'date' ? [sql`julianday(${current})`, sql`julianday(${value})`] : [current, sql`${value}`]
  switch (rule.op) {
    case 'eq':
      return sql`${left} = ${right}`
    case 'ne':
      // A contact without any value differs from every value.
      return sql`${left} is not ${right}`
    case 'gt':
      return sql`${left} > ${right}`
    case 'gte':
      return sql`${left} >= ${right}`
    case 'lt':
      return sql`${left} < ${right}`
    case 'lte':
      return sql`${left} <= ${right}`
  }
}

function condition(q: Executor, rule: Rule, ctx: Context, now: Date): SQL {
  switch (rule.field) {
    case 'property':
      return propertyCondition(rule, ctx)
    case 'topic': {
      const byDefault = ctx.topicDefaults.get(rule.topic_id.toLowerCase())
      // A deleted topic took every answer with it: nobody is subscribed to it, nor out of it.
      if (byDefault === undefined) return sql`0`
      const answer = q.select({ subscribed: contactTopics.subscribed }).from(contactTopics).where(and(eq(contactTopics.contactId, contacts.id), eq(contactTopics.topicId, rule.topic_id.toLowerCase())))
      return sql`coalesce((${answer}), ${Number(byDefault)}) = ${Number(rule.subscribed)}`
    }
    case 'engagement': {
      const since = new Date(now.getTime() - rule.within_days * DAY).toISOString()
      const happened = exists(
        q
          .select({ one: sql`1` })
          .from(emailEvents)
          .where(and(eq(emailEvents.accountId, contacts.accountId), eq(emailEvents.recipient, contacts.email), eq(emailEvents.type, rule.event), gte(emailEvents.createdAt, since))),
      )
      return rule.negate ? not(happened) : happened
    }
    case 'created_at':
      if (rule.op === 'within_days') return gte(contacts.createdAt, new Date(now.getTime() - (rule.value as number) * DAY).toISOString())
      return rule.op === 'before' ? sql`${contacts.createdAt} < ${dateOf(rule.value)}` : sql`${contacts.createdAt} > ${dateOf(rule.value)}`
    case 'unsubscribed':
      return eq(contacts.unsubscribed, rule.value)
    case 'email': {
      const value = rule.value.trim().toLowerCase()
      if (rule.op === 'eq') return eq(contacts.email, value)
      if (rule.op === 'contains') return sql`instr(${contacts.email}, ${value}) > 0`
      return sql`substr(${contacts.email}, ${-value.length}) = ${value}`
    }
  }
}

/** Rules compiled to one condition over `contacts` of the account, evaluated at `now`. */
export async function rulesFilter(q: Executor, accountId: string, match: Match, rules: Rule[], now: Date): Promise<SQL> {
  const ctx = await contextOf(q, accountId, rules)
  const conditions = rules.map((r) => condition(q, r, ctx, now))
  return and(eq(contacts.accountId, accountId), match === 'any' ? or(...conditions) : and(...conditions))!
}

/** A static segment's members: its membership rows. */
const staticFilter = (accountId: string, segmentId: string) =>
  and(eq(contacts.accountId, accountId), sql`${contacts.id} in (select ${segmentContacts.contactId} from ${segmentContacts} where ${segmentContacts.segmentId} = ${segmentId})`)!

/** The condition for a segment already read. */
export const filterOf = async (q: Executor, row: SegmentRow, now: Date) => (isStatic(row) ? staticFilter(row.accountId, row.id) : rulesFilter(q, row.accountId, row.match, row.rules, now))

/** Whether one contact is a member of the segment at `now`. */
export async function isMemberAt(q: Executor, row: SegmentRow, contactId: string, now: Date): Promise<boolean> {
  const [hit] = await q.select({ id: contacts.id }).from(contacts).where(and(eq(contacts.id, contactId), await filterOf(q, row, now)))
  return !!hit
}

/** A condition over the `contacts` table selecting the segment's members (rules compiled to SQL; static: membership rows), evaluated at `now`. */
export async function segmentFilter(q: Executor, accountId: string, segmentId: string, now: Date): Promise<SQL> {
  return filterOf(q, await findSegment(q, accountId, segmentId), now)
}
