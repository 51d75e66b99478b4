import { parse } from 'csv-parse/sync'
import { and, eq, inArray } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import { definitions, readBoolean, readCell, type PropertyRow } from '../contact-properties/service'
import { optedOut } from '../contacts/consent'
import { EMAIL_PATTERN, type UpdateContact } from '../contacts/schema'
import { updateContact, type ContactRow } from '../contacts/service'
import { pageOf } from '../db/paging'
import { contactImports, contacts, type ImportCounts, type PropertyValue, type RejectedRow } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import { CATALOGUE, type ErrorCode } from '../errors/catalogue'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { listKey } from '../lib/paging'
import type { CreateImport, ListImportsQuery } from './schema'

export const MAX_ROWS = 1000

type ImportRow = typeof contactImports.$inferSelect
type Field = 'email' | 'first_name' | 'last_name' | 'unsubscribed'
const FIELDS = new Set<string>(['email', 'first_name', 'last_name', 'unsubscribed'])
const EMAIL_RE = new RegExp(EMAIL_PATTERN)
/** Any address-looking text, to name the row a broken record was meant to be. */
const LOOSE_EMAIL = /[^\s,;"<>]+@[^\s,;"<>]+\.[^\s,;"<>]+/

const FIX = {
  csv: 'Quote fields that hold commas, quotes or line breaks ("a, b"), double every quote inside a quoted field (""), and close every quote.',
  columns: 'Give the row as many fields as the header has columns; an empty field is fine (a,,c).',
  duplicate: 'Keep one row per address.',
  unknown: 'An import only updates contacts: create this one first (POST /contacts or POST /contacts/batch), then import again.',
}

/** A record's text and the line it starts on. */
interface Piece {
  line: number
  text: string
}

const blank = (p: Piece) => p.text.trim() === ''

/**
 * Where records end: at a line break outside a quoted field (a quote opens a field
 * only at its start, after optional blanks). csv-parse then reads each record on its
 * own, so one broken record cannot swallow the rows after it, as its own recovery
 * does by reading on inside the stray quote. A quote still open at the end of the text
 * leaves its record and every line after it unreadable: `unclosed` holds those lines,
 * each reported and none applied.
 */
function scan(text: string): { records: Piece[]; unclosed: Piece[] } {
  const src = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n')
  const records: Piece[] = []
  let start = 0
  let line = 1
  let startLine = 1
  let quoted = false
  let fieldStart = true
  for (let i = 0; i < src.length; i++) {
    const c = src[i]
    if (quoted) {
      if (c === '"') {
        if (src[i + 1] === '"') i++
        else quoted = false
      } else if (c === '\n') line++
    } else if (c === '"' && fieldStart) {
      quoted = true
      fieldStart = false
    } else if (c === ',') fieldStart = true
    else if (c === '\n') {
      records.push({ line: startLine, text: src.slice(start, i) })
      start = i + 1
      startLine = ++line
      fieldStart = true
    } else if (c !== ' ' && c !== '\t') fieldStart = false
  }
  const rest = src.slice(start)
  if (!quoted) return { records: [...records, { line: startLine, text: rest }].filter((p) => !blank(p)), unclosed: [] }
  const unclosed = rest.split('\n').map((t, k) => ({ line: startLine + k, text: t }))
  return { records: records.filter((p) => !blank(p)), unclosed: unclosed.filter((p) => !blank(p)) }
}

const QUOTE_ERRORS: Record<string, string> = {
  INVALID_OPENING_QUOTE: 'a quote (") stands inside a field that does not start with one',
  CSV_INVALID_CLOSING_QUOTE: 'a closing quote (") is followed by more text before the next comma',
  CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE: 'a closing quote (") is followed by more text before the next comma',
}

/** The fields of one record, or why they cannot be read. */
function fieldsOf(p: Piece): { fields?: string[]; error?: string } {
  try {
    const rows = parse(p.text, { trim: true, relax_column_count: true }) as string[][]
    return { fields: rows[0] ?? [] }
  } catch (e) {
    const code = (e as { code?: string }).code ?? ''
    return { error: QUOTE_ERRORS[code] ?? `it is not valid CSV (${(e as Error).message})` }
  }
}

const wrong = (message: string, field = 'csv') => new AppError('validation_error', { message, details: [{ field, message }] })

type Role = { field: Field } | { property: PropertyRow } | null

/**
 * What each header column fills: `column_map` first, then a header named like a
 * contact field (any case), then one equal to a property key. Anything else is
 * ignored and reported. Every problem here refuses the whole import.
 */
function rolesOf(header: string[], map: Record<string, Field>, defs: Map<string, PropertyRow>) {
  const names = header.map((h) => h.trim())
  const dup = names.find((n, i) => n !== '' && names.indexOf(n) !== i)
  if (dup !== undefined) throw wrong(`The header names the column "${dup}" twice; each column needs its own name.`)
  const unknown = Object.keys(map).filter((k) => !names.includes(k))
  if (unknown.length) throw wrong(`\`column_map\` names ${unknown.map((k) => `"${k}"`).join(', ')}, which the CSV header does not have (it has ${names.map((n) => `"${n}"`).join(', ')}).`, `column_map.${unknown[0]}`)
  const ignored: string[] = []
  const filled = new Map<Field, string>()
  const roles: Role[] = names.map((name) => {
    const field = map[name] ?? (FIELDS.has(name.toLowerCase()) ? (name.toLowerCase() as Field) : undefined)
    if (field) {
      const other = filled.get(field)
      if (other !== undefined) throw wrong(`Both "${other}" and "${name}" would fill \`${field}\`; map only one of them to it.`)
      filled.set(field, name)
      return { field }
    }
    const def = defs.get(name)
    if (def) return { property: def }
    if (name !== '') ignored.push(name)
    return null
  })
  if (!filled.has('email')) throw wrong('The CSV header must include `email` (or a column that `column_map` maps to `email`).')
  return { roles, ignored }
}

interface Parsed {
  row: number
  line: number
  email: string
  change: UpdateContact & { properties?: Record<string, PropertyValue> }
}

interface Problem {
  code: ErrorCode
  message: string
  fix: string
}

/** One data record as a change to a contact, or everything wrong with it. */
function readRecord(fields: string[], roles: Role[]): { email: string; change?: Parsed['change']; problems: Problem[] } {
  const problems: Problem[] = []
  const change: Parsed['change'] = {}
  let email = ''
  roles.forEach((role, i) => {
    const cell = fields[i].trim()
    if (!role) return
    if ('property' in role) {
      const r = readCell(role.property, cell)
      if (r.error) problems.push({ code: 'validation_error', message: r.error, fix: `Write a value of type ${role.property.type} in the "${role.property.key}" column, or leave it empty to keep the stored one.` })
      else if (r.value !== undefined) change.properties = { ...change.properties, [role.property.key]: r.value }
      return
    }
    if (role.field === 'email') {
      email = cell.toLowerCase()
      if (email === '') problems.push({ code: 'missing_required_field', message: 'The row has no address in its email column.', fix: 'Fill the row’s email column.' })
      else if (email.length > 320 || !EMAIL_RE.test(email)) problems.push({ code: 'validation_error', message: `"${cell}" is not an e-mail address.`, fix: 'Write the address as name@example.com.' })
    } else if (role.field === 'unsubscribed') {
      if (cell === '') return
      const v = readBoolean(cell)
      if (v === null) problems.push({ code: 'validation_error', message: `\`unsubscribed\` must be true or false (also 1/0, yes/no), not "${cell}".`, fix: 'Write true or false, or leave it empty to keep the stored flag.' })
      else change.unsubscribed = v
    } else if (cell !== '') {
      if (cell.length > 256) problems.push({ code: 'validation_error', message: `\`${role.field}\` is longer than 256 characters.`, fix: `Shorten the ${role.field}.` })
      else change[role.field] = cell
    }
  })
  return { email, change: problems.length ? undefined : change, problems }
}

/** Only what differs from the stored contact; an empty result changes nothing. */
function diff(stored: ContactRow, change: Parsed['change']): UpdateContact {
  const out: UpdateContact = {}
  if (change.first_name !== undefined && change.first_name !== stored.firstName) out.first_name = change.first_name
  if (change.last_name !== undefined && change.last_name !== stored.lastName) out.last_name = change.last_name
  if (change.unsubscribed !== undefined && change.unsubscribed !== stored.unsubscribed) out.unsubscribed = change.unsubscribed
  const props = Object.entries(change.properties ?? {}).filter(([k, v]) => stored.properties[k] !== v)
  if (props.length) out.properties = Object.fromEntries(props)
  return out
}

async function contactsByEmail(deps: Deps, accountId: string, emails: string[]) {
  const out = new Map<string, ContactRow>()
  for (let i = 0; i < emails.length; i += 500) {
    const rows = await deps.db.q
      .select()
      .from(contacts)
      .where(and(eq(contacts.accountId, accountId), inArray(contacts.email, emails.slice(i, i + 500))))
    for (const r of rows) out.set(r.email, r)
  }
  return out
}

function toImport(row: ImportRow) {
  return {
    object: 'contact_import' as const,
    id: row.id,
    status: row.status,
    on_conflict: row.onConflict,
    counts: row.counts,
    created_at: row.createdAt,
    completed_at: row.completedAt,
  }
}

const toResult = (row: ImportRow) => ({ ...toImport(row), rejected: row.rejected, ignored_columns: row.ignoredColumns })

/**
 * POST /contacts/imports: updates existing contacts from CSV text, within the request.
 * A problem with the request as a whole (no `email` column, a `column_map` naming
 * a column the header lacks, more than 1,000 rows) refuses it and changes nothing.
 * Otherwise every row is accounted for: it updated a contact, left one as it was, or
 * is in `rejected` with its code, address, message and fix (a new address, a broken
 * record, a wrong field count, a bad value, an address given twice). Counts add up:
 * total = created + updated + skipped + failed, and created is always 0.
 */
export async function importContacts(deps: Deps, actor: Actor, input: CreateImport) {
  const onConflict = input.on_conflict ?? 'upsert'
  const { records, unclosed } = scan(input.csv)
  const [headerPiece, ...data] = records
  if (!headerPiece) throw wrong(unclosed.length ? `The header (line ${unclosed[0].line}) has a quote that is never closed.` : 'The CSV has no header row.')
  if (data.length + unclosed.length > MAX_ROWS) throw wrong(`The CSV has ${data.length + unclosed.length} data rows; an import takes at most ${MAX_ROWS}. Split it into several imports.`)
  const header = fieldsOf(headerPiece)
  if (!header.fields) throw wrong(`The header row (line ${headerPiece.line}) cannot be read: ${header.error}.`)
  const { roles, ignored } = rolesOf(header.fields, input.column_map ?? {}, await definitions(deps.db.q, actor.accountId))

  const rejected: RejectedRow[] = []
  const reject = (row: number, line: number, email: string, p: Problem[]) =>
    rejected.push({ row, line, code: p[0].code, email, message: p.map((x) => x.message).join(' '), fix: p.map((x) => x.fix).join(' ') })
  const parsed: Parsed[] = []
  data.forEach((piece, i) => {
    const row = i + 1
    const guess = piece.text.match(LOOSE_EMAIL)?.[0].toLowerCase() ?? ''
    const { fields, error } = fieldsOf(piece)
    if (!fields) return reject(row, piece.line, guess, [{ code: 'validation_error', message: `The row cannot be read: ${error}.`, fix: FIX.csv }])
    if (fields.length !== roles.length) {
      return reject(row, piece.line, guess, [{ code: 'validation_error', message: `The row has ${fields.length} fields; the header has ${roles.length} columns.`, fix: FIX.columns }])
    }
    const r = readRecord(fields, roles)
    if (!r.change) return reject(row, piece.line, r.email, r.problems)
    parsed.push({ row, line: piece.line, email: r.email, change: r.change })
  })
  unclosed.forEach((piece, k) => {
    const message = `The row lies inside a quoted field that opens on line ${unclosed[0].line} and is never closed, so it was not read.`
    reject(data.length + k + 1, piece.line, piece.text.match(LOOSE_EMAIL)?.[0].toLowerCase() ?? '', [{ code: 'validation_error', message, fix: FIX.csv }])
  })

  const rowsOf = new Map<string, number[]>()
  for (const p of parsed) rowsOf.set(p.email, [...(rowsOf.get(p.email) ?? []), p.row])
  const stored = await contactsByEmail(deps, actor.accountId, [...rowsOf.keys()])
  const out = await optedOut(deps.db.q, actor.accountId, [...stored.keys()])
  let updated = 0
  let skipped = 0
  for (const p of parsed) {
    const rows = rowsOf.get(p.email)!
    const contact = stored.get(p.email)
    if (rows.length > 1) {
      reject(p.row, p.line, p.email, [{ code: 'validation_error', message: `The address ${p.email} is on rows ${rows.join(', ')}; which row should win is unclear, so none was applied.`, fix: FIX.duplicate }])
    } else if (!contact) {
      reject(p.row, p.line, p.email, [{ code: 'not_found', message: `No contact has the address ${p.email}; an import does not create contacts.`, fix: FIX.unknown }])
    } else if (onConflict === 'skip') skipped++
    else {
      const change = diff(contact, p.change)
      if (change.unsubscribed === false && out.has(p.email)) {
        reject(p.row, p.line, p.email, [{ code: 'contact_resubscribe_required', message: `${p.email} unsubscribed themselves; an import cannot subscribe them again.`, fix: CATALOGUE.contact_resubscribe_required.fix }])
      } else if (!Object.keys(change).length) skipped++
      else {
        await updateContact(deps, actor, contact.id, change)
        updated++
      }
    }
  }

  rejected.sort((a, b) => a.row - b.row)
  const total = data.length + unclosed.length
  const counts: ImportCounts = { created: 0, updated, skipped, failed: rejected.length, total }
  const now = iso(deps.clock.now())
  const row: ImportRow = { id: deps.ids.uuid(), accountId: actor.accountId, status: 'completed', onConflict, counts, rejected, ignoredColumns: ignored, createdAt: now, completedAt: now }
  await deps.db.write((tx) => tx.insert(contactImports).values(row))
  await recordChange(deps, actor, { resource: 'contact_import', resourceId: row.id, action: 'created', before: null, after: toImport(row) })
  return toResult(row)
}

/** Past imports, newest first, without their rejected rows (GET /contacts/imports/{id} has them). */
export async function listImports(deps: Deps, actor: Actor, q: ListImportsQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('contact_imports', { status: q.status }), query: q, id: contactImports.id },
    (ks) =>
      deps.db.q
        .select()
        .from(contactImports)
        .where(and(eq(contactImports.accountId, actor.accountId), q.status ? eq(contactImports.status, q.status as 'completed') : undefined, ks.where))
        .orderBy(ks.orderBy)
        .limit(ks.limit),
    toImport,
  )
}

export async function getImport(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(contactImports)
    .where(and(eq(contactImports.id, id.toLowerCase()), eq(contactImports.accountId, actor.accountId)))
  if (!row) throw notFound(`Contact import ${id}`)
  return toResult(row)
}
