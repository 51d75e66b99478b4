import { and, eq, ne, sql, type SQL } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { recordChange } from '../audit/record'
import { automationsUsing } from '../automations/usage'
import { broadcastsUsingTemplate } from '../broadcasts/usage'
import type { Executor, Tx } from '../db'
import { pageOf } from '../db/paging'
import { templates, templateVersions } from '../db/tables'
import type { Deps } from '../deps'
import { asList, parseAddress } from '../emails/address'
import { firstError } from '../emails/content'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { UUID_RE } from '../lib/ids'
import { listKey, type PageQuery } from '../lib/paging'
import { fitsType, renderContent, undeclaredUse, type TemplateContent } from './render'
import type { CreateTemplate, RenderTemplate, UpdateTemplate } from './schema'

export type TemplateRow = typeof templates.$inferSelect

/** Names Resend keeps for contact fields in broadcasts; a template may not declare them. */
const RESERVED = new Set(['FIRST_NAME', 'LAST_NAME', 'EMAIL', 'UNSUBSCRIBE_URL', 'contact', 'this'])

/** A UUID names a template by id, anything else by alias (aliases are never UUID-shaped). */
const named = (ref: string): SQL => (UUID_RE.test(ref) ? eq(templates.id, ref.toLowerCase()) : sql`lower(${templates.alias}) = lower(${ref})`)

function toSummary(row: TemplateRow) {
  return {
    object: 'template' as const,
    id: row.id,
    name: row.name,
    alias: row.alias,
    status: row.publishedVersionId ? ('published' as const) : ('draft' as const),
    current_version_id: row.publishedVersionId,
    published_at: row.publishedAt,
    has_unpublished_versions: row.unpublishedChanges,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

/** Resend's template object; the content is the draft's. */
export function toTemplate(row: TemplateRow) {
  return {
    ...toSummary(row),
    from: row.from,
    subject: row.subject,
    reply_to: row.replyTo.length ? row.replyTo : null,
    html: row.html,
    text: row.text,
    variables: row.variables,
  }
}

const invalid = (field: string, message: string) => new AppError('invalid_parameter', { message, details: [{ field, message }] })

/** The content fields a create or update gives, in storage form. */
function contentOf(input: UpdateTemplate): Partial<TemplateContent> {
  const c: Partial<TemplateContent> = {}
  if (input.from !== undefined) c.from = input.from
  if (input.subject !== undefined) c.subject = input.subject
  if (input.reply_to !== undefined) c.replyTo = asList(input.reply_to)
  if (input.html !== undefined) c.html = input.html
  if (input.text !== undefined) c.text = input.text
  if (input.variables !== undefined) c.variables = input.variables.map((v) => ({ key: v.key, type: v.type, fallback_value: v.fallback_value ?? null }))
  return c
}

/** Checks what a create or update leaves, as a whole, so a draft is always one that can render. */
function checkDraft(d: Pick<TemplateRow, 'alias'> & TemplateContent) {
  if (d.alias !== null && UUID_RE.test(d.alias)) throw invalid('alias', `\`alias\` "${d.alias}" looks like an id; an alias must not be UUID-shaped, so a reference is never ambiguous.`)
  if (d.from !== null && !parseAddress(d.from)) {
    throw new AppError('invalid_from_address', { message: `Invalid \`from\` field "${d.from.slice(0, 200)}": use \`email@example.com\` or \`Name <email@example.com>\`.`, details: [{ field: 'from', message: 'not an address' }] })
  }
  d.replyTo.forEach((r, i) => {
    if (!parseAddress(r)) throw invalid(`reply_to[${i}]`, `\`reply_to[${i}]\` "${r.slice(0, 200)}" is not an e-mail address: use \`a@b.com\` or \`Name <a@b.com>\`.`)
  })
  if (d.subject !== null && /[\r\n]/.test(d.subject)) throw invalid('subject', '`subject` contains a line break; a subject is one line.')
  const seen = new Set<string>()
  d.variables.forEach((v, i) => {
    if (RESERVED.has(v.key)) throw invalid(`variables[${i}].key`, `\`${v.key}\` is a reserved name (${[...RESERVED].join(', ')}); choose another key.`)
    if (seen.has(v.key)) throw invalid(`variables[${i}].key`, `\`${v.key}\` is declared twice.`)
    seen.add(v.key)
    if (v.fallback_value !== null && !fitsType(v, v.fallback_value)) {
      throw invalid(`variables[${i}].fallback_value`, `The fallback_value of \`${v.key}\` must be a ${v.type}, as declared; got ${JSON.stringify(v.fallback_value)}.`)
    }
  })
  const use = undeclaredUse(d)
  if (use) throw invalid(use.field, `Variable \`${use.key}\` is used in the ${use.field} but not declared in \`variables\`.`)
}

/** Another template of the account whose `column` equals `value`, compared case-insensitively. */
async function holder(tx: Tx, accountId: string, column: SQLiteColumn, value: string, exceptId?: string) {
  const [row] = await tx
    .select({ id: templates.id, value: column })
    .from(templates)
    .where(and(eq(templates.accountId, accountId), sql`lower(${column}) = lower(${value})`, exceptId ? ne(templates.id, exceptId) : undefined))
    .limit(1)
  return row as { id: string; value: string } | undefined
}

/** Names and aliases are unique per account; checked inside the write so two requests cannot both pass. */
async function assertFree(tx: Tx, accountId: string, c: { name?: string; alias?: string | null }, exceptId?: string) {
  const byName = c.name === undefined ? undefined : await holder(tx, accountId, templates.name, c.name, exceptId)
  if (byName) throw new AppError('template_name_taken', { message: `A template named "${byName.value}" already exists in this account (${byName.id}).` })
  const byAlias = c.alias ? await holder(tx, accountId, templates.alias, c.alias, exceptId) : undefined
  if (byAlias) throw new AppError('template_alias_taken', { message: `The alias "${byAlias.value}" is already used by template ${byAlias.id}.` })
}

export async function findTemplate(deps: Deps, actor: Actor, ref: string) {
  const [row] = await deps.db.q
    .select()
    .from(templates)
    .where(and(eq(templates.accountId, actor.accountId), named(ref)))
  if (!row) throw notFound(`Template ${ref}`)
  return row
}

export async function createTemplate(deps: Deps, actor: Actor, input: CreateTemplate) {
  const now = iso(deps.clock.now())
  const row: TemplateRow = {
    id: deps.ids.uuid(),
    accountId: actor.accountId,
    name: input.name,
    alias: input.alias ?? null,
    from: null,
    subject: null,
    replyTo: [],
    text: null,
    variables: [],
    ...contentOf(input),
    html: input.html,
    publishedVersionId: null,
    publishedAt: null,
    unpublishedChanges: true,
    createdAt: now,
    updatedAt: now,
  }
  checkDraft(row)
  await deps.db.write(async (tx) => {
    await assertFree(tx, actor.accountId, row)
    await tx.insert(templates).values(row)
  })
  const after = toTemplate(row)
  await recordChange(deps, actor, { resource: 'template', resourceId: row.id, action: 'created', before: null, after })
  return after
}

export async function listTemplates(deps: Deps, actor: Actor, q: PageQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('templates'), query: q, id: templates.id },
    (ks) => deps.db.q.select().from(templates).where(and(eq(templates.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toSummary,
  )
}

export async function getTemplate(deps: Deps, actor: Actor, ref: string) {
  return toTemplate(await findTemplate(deps, actor, ref))
}

/** Edits the draft (and the name or alias); the published version keeps sending until the next publish. */
export async function updateTemplate(deps: Deps, actor: Actor, ref: string, input: UpdateTemplate) {
  const row = await findTemplate(deps, actor, ref)
  const content = contentOf(input)
  const patch: Partial<TemplateRow> = { ...content, updatedAt: iso(deps.clock.now()) }
  if (input.name !== undefined) patch.name = input.name
  if (input.alias !== undefined) patch.alias = input.alias
  if (Object.keys(content).length) patch.unpublishedChanges = true
  const next = { ...row, ...patch }
  checkDraft(next)
  await deps.db.write(async (tx) => {
    await assertFree(tx, actor.accountId, patch, row.id)
    await tx.update(templates).set(patch).where(eq(templates.id, row.id))
  })
  const after = toTemplate(next)
  await recordChange(deps, actor, { resource: 'template', resourceId: row.id, action: 'updated', before: toTemplate(row), after })
  return after
}

/**
 * What still uses a template, one `kind id` each: deleting it then is
 * `template_in_use`. Sends render a template when they are accepted and keep the
 * result, so no email (a scheduled one included) needs it again; broadcasts and
 * automations, which render when they run, add their references here.
 */
export async function templateUsers(q: Executor, accountId: string, templateId: string): Promise<string[]> {
  return [...(await broadcastsUsingTemplate(q, accountId, templateId)), ...(await automationsUsing(q, accountId, 'template', templateId))]
}

/** Removes the template and every published version, unless something still uses it. */
export async function deleteTemplate(deps: Deps, actor: Actor, ref: string) {
  const row = await findTemplate(deps, actor, ref)
  const users = await templateUsers(deps.db.q, actor.accountId, row.id)
  if (users.length) throw new AppError('template_in_use', { message: `Template ${row.id} is used by ${users.join(', ')}; remove it from them first.` })
  await deps.db.write(async (tx) => {
    await tx.delete(templateVersions).where(eq(templateVersions.templateId, row.id))
    await tx.delete(templates).where(eq(templates.id, row.id))
  })
  await recordChange(deps, actor, { resource: 'template', resourceId: row.id, action: 'deleted', before: toTemplate(row), after: null })
  return { object: 'template' as const, id: row.id, deleted: true }
}

/**
 * Publishes the draft as a new version, which sends use from now on. A draft
 * with nothing new since the last publish makes no new version.
 */
export async function publishTemplate(deps: Deps, actor: Actor, ref: string) {
  const row = await findTemplate(deps, actor, ref)
  if (!row.unpublishedChanges) return toTemplate(row)
  const now = iso(deps.clock.now())
  const versionId = deps.ids.uuid()
  const patch = { publishedVersionId: versionId, publishedAt: now, unpublishedChanges: false, updatedAt: now }
  await deps.db.write(async (tx) => {
    const { from, subject, replyTo, html, text, variables } = row
    await tx.insert(templateVersions).values({ id: versionId, templateId: row.id, accountId: row.accountId, from, subject, replyTo, html, text, variables, createdAt: now })
    await tx.update(templates).set(patch).where(eq(templates.id, row.id))
  })
  const after = toTemplate({ ...row, ...patch })
  await recordChange(deps, actor, { resource: 'template', resourceId: row.id, action: 'published', before: toTemplate(row), after })
  return after
}

/** A copy of the draft as a new, unpublished template named "<name> (copy)" (or "(copy 2)", …), without the alias. */
export async function duplicateTemplate(deps: Deps, actor: Actor, ref: string) {
  const row = await findTemplate(deps, actor, ref)
  const now = iso(deps.clock.now())
  const copy: TemplateRow = { ...row, id: deps.ids.uuid(), alias: null, publishedVersionId: null, publishedAt: null, unpublishedChanges: true, createdAt: now, updatedAt: now }
  await deps.db.write(async (tx) => {
    for (let n = 1; ; n++) {
      const suffix = n === 1 ? ' (copy)' : ` (copy ${n})`
      copy.name = row.name.slice(0, 200 - suffix.length) + suffix
      if (!(await holder(tx, actor.accountId, templates.name, copy.name))) break
    }
    await tx.insert(templates).values(copy)
  })
  const after = toTemplate(copy)
  await recordChange(deps, actor, { resource: 'template', resourceId: copy.id, action: 'duplicated', before: null, after })
  return after
}

/** The published version of a template named by id or alias, for sends: `version` is null while none is published. */
export async function publishedTemplate(q: Executor, accountId: string, ref: string) {
  const [row] = await q
    .select({ id: templates.id, name: templates.name, version: templateVersions })
    .from(templates)
    .leftJoin(templateVersions, eq(templateVersions.id, templates.publishedVersionId))
    .where(and(eq(templates.accountId, accountId), named(ref)))
    .limit(1)
  return row ?? null
}

/** Renders the draft (or the published version) with the given variables, for a preview; nothing is stored. */
export async function renderTemplate(deps: Deps, actor: Actor, ref: string, input: RenderTemplate) {
  const version = input.version ?? 'draft'
  const row = await findTemplate(deps, actor, ref)
  let content: TemplateContent = row
  if (version === 'published') {
    if (!row.publishedVersionId) throw new AppError('template_not_published', { message: `Template ${row.id} has no published version yet; render the draft, or publish it first.` })
    const [published] = await deps.db.q.select().from(templateVersions).where(eq(templateVersions.id, row.publishedVersionId))
    content = published
  }
  const { rendered, findings } = renderContent(content, input.variables ?? {}, 'variables')
  const err = firstError(findings)
  if (err) throw err
  return {
    object: 'template_render' as const,
    template_id: row.id,
    version,
    version_id: version === 'published' ? row.publishedVersionId : null,
    from: content.from,
    reply_to: content.replyTo.length ? content.replyTo : null,
    ...rendered,
  }
}
