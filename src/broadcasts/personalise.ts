// Broadcast personalisation, as Resend writes it: `{{{FIRST_NAME}}}`,
// `{{{FIRST_NAME|there}}}` (a fallback after `|`), `{{{LAST_NAME}}}`, `{{{EMAIL}}}`,
// a contact property by its key (`{{{company|us}}}`, or `{{{contact.company}}}`),
// and `{{{RESEND_UNSUBSCRIBE_URL}}}`, the recipient's own unsubscribe page. The
// subject is filled in SQL when the fan-out writes each email (it is stored per
// recipient); the bodies, which stay on the broadcast, are filled for each copy
// when it is composed, so what was sent and what GET /emails shows agree.
import { and, inArray, sql, type SQL } from 'drizzle-orm'
import { definitions, type Definitions } from '../contact-properties/service'
import type { Executor } from '../db'
import { broadcasts, contacts, type PropertyValue } from '../db/tables'
import type { Deps } from '../deps'
import { unsubscribeUrl } from '../delivery/unsubscribe'
import type { EmailRow } from '../delivery/types'
import { bareAddress } from '../emails/address'
import { escapeHtml } from '../lib/html'

const PLACEHOLDER = /\{\{\{\s*([A-Za-z_][\w.]*)\s*(?:\|([^}]*))?\}\}\}/g

type BuiltIn = 'first_name' | 'last_name' | 'email'
type Field = { kind: BuiltIn | 'unsubscribe_url' } | { kind: 'property'; key: string }
interface Variable {
  /** As written, for messages. */
  name: string
  field: Field
  fallback: string | null
}
type Part = string | Variable

const BUILT_IN: Record<string, BuiltIn> = { first_name: 'first_name', last_name: 'last_name', email: 'email' }

function fieldOf(name: string): Field {
  const upper = name.toUpperCase()
  if (upper === 'RESEND_UNSUBSCRIBE_URL') return { kind: 'unsubscribe_url' }
  const bare = name.startsWith('contact.') ? name.slice('contact.'.length) : name
  // Resend writes the built-ins in capitals and `contact.` fields in lower case; property keys are case-sensitive.
  const builtIn = BUILT_IN[bare.toLowerCase()]
  return builtIn ? { kind: builtIn } : { kind: 'property', key: bare }
}

/** Text and variables, in order. */
function partsOf(s: string): Part[] {
  const parts: Part[] = []
  let last = 0
  for (const m of s.matchAll(PLACEHOLDER)) {
    if (m.index > last) parts.push(s.slice(last, m.index))
    parts.push({ name: m[1], field: fieldOf(m[1]), fallback: m[2] === undefined ? null : m[2].trim() })
    last = m.index + m[0].length
  }
  if (last < s.length) parts.push(s.slice(last))
  return parts
}

export const variablesOf = (s: string | null) => partsOf(s ?? '').filter((p): p is Variable => typeof p !== 'string')

/** The property keys a broadcast's subject and bodies name. */
export function propertyKeys(...texts: (string | null)[]) {
  return [...new Set(texts.flatMap((t) => variablesOf(t)).flatMap((v) => (v.field.kind === 'property' ? [v.field.key] : [])))]
}

interface Recipient {
  email: string
  firstName: string | null
  lastName: string | null
  properties: Record<string, PropertyValue | null>
}

const present = (v: unknown): string | null => (v === null || v === undefined || v === '' ? null : String(v))

function valueOf(v: Variable, r: Recipient, defs: Definitions, unsubscribe: string): string {
  const f = v.field
  if (f.kind === 'unsubscribe_url') return unsubscribe
  if (f.kind === 'email') return r.email
  const own = f.kind === 'first_name' ? r.firstName : f.kind === 'last_name' ? r.lastName : f.kind === 'property' ? r.properties[f.key] : null
  return present(own) ?? v.fallback ?? (f.kind === 'property' ? present(defs.get(f.key)?.fallbackValue) : null) ?? ''
}

/** Fills every variable for one recipient; in HTML the values are escaped, so no value can add markup. */
function fill(s: string, r: Recipient, defs: Definitions, unsubscribe: string, html: boolean): string {
  return partsOf(s)
    .map((p) => (typeof p === 'string' ? p : html ? escapeHtml(valueOf(p, r, defs, unsubscribe)) : valueOf(p, r, defs, unsubscribe)))
    .join('')
}

/** One line in the subject: line breaks in a value become spaces. */
const oneLine = (v: SQL) => sql`replace(replace(${v}, char(13), ' '), char(10), ' ')`

function propertySql(key: string): SQL {
  const path = `$."${key.replace(/"/g, '\\"')}"`
  const p = contacts.properties
  return sql`(case json_type(${p}, ${path}) when 'true' then 'true' when 'false' then 'false' when 'null' then null else cast(json_extract(${p}, ${path}) as text) end)`
}

/** The subject for the contact of the row being selected, as an SQL expression over the `contacts` table. */
export function subjectSql(subject: string, defs: Definitions): SQL {
  const parts = partsOf(subject).map((p) => {
    if (typeof p === 'string') return sql`${p}`
    const f = p.field
    if (f.kind === 'email') return sql`${contacts.email}`
    const fallback = p.fallback ?? (f.kind === 'property' ? present(defs.get(f.key)?.fallbackValue) : null) ?? ''
    const own = f.kind === 'first_name' ? sql`${contacts.firstName}` : f.kind === 'last_name' ? sql`${contacts.lastName}` : f.kind === 'property' ? propertySql(f.key) : sql`null`
    return oneLine(sql`coalesce(nullif(${own}, ''), ${fallback})`)
  })
  return parts.length ? sql.join(parts, sql` || `) : sql`''`
}

/** The hidden preview line inboxes show beside the subject, first in the body. */
function withPreview(html: string, preview: string | null): string {
  if (!preview) return html
  const div = `<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">${escapeHtml(preview)}</div>`
  const body = html.match(/<body\b[^>]*>/i)
  return body ? html.slice(0, body.index! + body[0].length) + div + html.slice(body.index! + body[0].length) : div + html
}


/**
 * Emails as they go out: a broadcast's emails get their recipient's copy of the
 * broadcast's bodies (variables filled from the contact as it is now, the preview
 * line, the recipient's own unsubscribe URL); every other email is returned as it is.
 */
export async function withBroadcastContent(q: Executor, rows: EmailRow[], deps: Pick<Deps, 'secret' | 'config'>): Promise<EmailRow[]> {
  const ids = [...new Set(rows.flatMap((r) => (r.broadcastId ? [r.broadcastId] : [])))]
  if (!ids.length) return rows
  const content = new Map(
    (await q.select({ id: broadcasts.id, html: broadcasts.html, text: broadcasts.text, previewText: broadcasts.previewText }).from(broadcasts).where(inArray(broadcasts.id, ids))).map((b) => [b.id, b]),
  )
  const mine = rows.filter((r) => r.broadcastId && content.has(r.broadcastId))
  const accounts = [...new Set(mine.map((r) => r.accountId))]
  const addresses = [...new Set(mine.map((r) => bareAddress(r.to[0] ?? '')))]
  const people = addresses.length
    ? await q
        .select({ accountId: contacts.accountId, email: contacts.email, firstName: contacts.firstName, lastName: contacts.lastName, properties: contacts.properties })
        .from(contacts)
        .where(and(inArray(contacts.accountId, accounts), inArray(contacts.email, addresses)))
    : []
  const byAddress = new Map(people.map((p) => [`${p.accountId}\n${p.email}`, p]))
  const defs = new Map<string, Definitions>()
  for (const a of accounts) {
    const keys = propertyKeys(...mine.filter((r) => r.accountId === a).flatMap((r) => [content.get(r.broadcastId!)!.html, content.get(r.broadcastId!)!.text]))
    defs.set(a, await definitions(q, a, keys))
  }
  return rows.map((r) => {
    const b = r.broadcastId ? content.get(r.broadcastId) : undefined
    if (!b) return r
    const email = bareAddress(r.to[0] ?? '')
    const person: Recipient = byAddress.get(`${r.accountId}\n${email}`) ?? { email, firstName: null, lastName: null, properties: {} }
    const url = unsubscribeUrl(deps.config.baseUrl, deps.secret, r.id, email)
    const d = defs.get(r.accountId)!
    return {
      ...r,
      html: b.html === null ? null : withPreview(fill(b.html, person, d, url, true), b.previewText),
      text: b.text === null ? null : fill(b.text, person, d, url, false),
    }
  })
}
