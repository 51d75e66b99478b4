import { and, eq, inArray } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import { checkProperties } from '../contact-properties/service'
import { assertStatic, findSegment } from '../contacts/segments'
import type { Executor, Tx } from '../db'
import { pageOf } from '../db/paging'
import { automationRefs, automationRuns, automationRunSteps, automations, automationVersions, eventDefinitions, topics, type RefKind } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { listKey, type PageQuery } from '../lib/paging'
import { publishedTemplate } from '../templates/service'
import { WebhookGuard } from '../webhooks/guard'
import { isSystemEvent, readGraph, type Graph } from './graph'
import { isVarRef } from './rules'
import type { AutomationStep, Connection, CreateAutomation, ListAutomationsQuery, ListRunsQuery, UpdateAutomation } from './schema'

export type AutomationRow = typeof automations.$inferSelect
export type VersionRow = typeof automationVersions.$inferSelect
export type RunRow = typeof automationRuns.$inferSelect
export type RunStepRow = typeof automationRunSteps.$inferSelect
interface Ref {
  kind: RefKind
  ref: string
}

function toAutomation(row: AutomationRow, v: Pick<VersionRow, 'steps' | 'connections'>) {
  return {
    object: 'automation' as const,
    id: row.id,
    name: row.name,
    status: row.status,
    version: row.version,
    version_id: row.versionId,
    steps: v.steps,
    connections: v.connections,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

const toItem = (row: AutomationRow) => ({
  object: 'automation' as const,
  id: row.id,
  name: row.name,
  status: row.status,
  version: row.version,
  trigger: row.triggerEvent,
  created_at: row.createdAt,
  updated_at: row.updatedAt,
})

const toVersion = (v: VersionRow) => ({
  object: 'automation_version' as const,
  id: v.id,
  automation_id: v.automationId,
  version: v.version,
  name: v.name,
  steps: v.steps,
  connections: v.connections,
  created_at: v.createdAt,
})

function toRunItem(r: RunRow & { version: number }) {
  const ended = r.status !== 'running'
  return {
    object: 'automation_run' as const,
    id: r.id,
    automation_id: r.automationId,
    version_id: r.versionId,
    version: r.version,
    contact_id: r.contactId,
    status: r.status,
    trigger: { event: r.triggerEvent, payload: r.triggerPayload },
    current_step: r.cursor,
    wake_at: ended ? null : r.wakeAt,
    started_at: r.startedAt,
    completed_at: r.completedAt,
    created_at: r.createdAt,
  }
}

const toRunStep = (s: RunStepRow) => ({
  key: s.stepKey,
  type: s.type,
  status: s.status,
  attempts: s.attempts,
  started_at: s.startedAt,
  completed_at: s.completedAt,
  output: s.output,
  error: s.error,
  created_at: s.createdAt,
})

async function findAutomation(q: Executor, actor: Actor, id: string) {
  const [row] = await q
    .select()
    .from(automations)
    .where(and(eq(automations.id, id.toLowerCase()), eq(automations.accountId, actor.accountId)))
  if (!row) throw notFound(`Automation ${id}`)
  return row
}

export async function versionById(q: Executor, id: string): Promise<VersionRow> {
  const [v] = await q.select().from(automationVersions).where(eq(automationVersions.id, id))
  return v
}

const guards = new WeakMap<Deps['config'], WebhookGuard>()
function urlRules(deps: Deps) {
  let g = guards.get(deps.config)
  if (!g) guards.set(deps.config, (g = new WebhookGuard(deps.config)))
  return (url: string) => g.urlProblem(url)
}

const missingRef = (field: string, message: string) => new AppError('not_found', { message: `\`${field}\` ${message}.`, details: [{ field, message }] })
const invalid = (field: string, message: string) => new AppError('invalid_parameter', { message: `\`${field}\` ${message}.`, details: [{ field, message }] })

async function eventRef(q: Executor, accountId: string, name: string, field: string): Promise<Ref> {
  if (name.startsWith('mailroom:')) {
    if (!isSystemEvent(name)) throw invalid(field, `names no system event: "${name}" (there are \`mailroom:contact.created\` and \`mailroom:topic.answered\`)`)
    return { kind: 'event', ref: name }
  }
  const [found] = await q
    .select({ id: eventDefinitions.id })
    .from(eventDefinitions)
    .where(and(eq(eventDefinitions.accountId, accountId), eq(eventDefinitions.name, name)))
  if (!found) throw missingRef(field, `names no event of this account: "${name}"; define it with POST /events first`)
  return { kind: 'event', ref: name }
}

type SendStep = Extract<AutomationStep, { type: 'send_email' }>

/** A send step's template must be published and give (or be given) a sender and a subject; it is stored by id. */
async function templateRef(q: Executor, accountId: string, step: SendStep, at: string): Promise<[SendStep, Ref]> {
  const c = step.config
  const found = await publishedTemplate(q, accountId, c.template.id)
  if (!found) throw missingRef(`${at}.config.template.id`, `names no template of this account: "${c.template.id}"`)
  const v = found.version
  if (!v) throw new AppError('template_not_published', { message: `Template "${found.name}" (${found.id}) in \`${at}\` has no published version; publish it with POST /templates/${found.id}/publish.` })
  if (c.from === undefined && !v.from) throw invalid(`${at}.config.from`, `is required: template "${found.name}" names no sender`)
  if (c.subject === undefined && !v.subject) throw invalid(`${at}.config.subject`, `is required: template "${found.name}" has no subject`)
  const declared = new Set(v.variables.map((x) => x.key))
  const unknown = Object.keys(c.template.variables ?? {}).find((k) => !declared.has(k))
  if (unknown !== undefined) throw invalid(`${at}.config.template.variables.${unknown}`, `is no variable of template "${found.name}"`)
  if (c.topic_id !== undefined) {
    const [topic] = await q.select({ id: topics.id }).from(topics).where(and(eq(topics.accountId, accountId), eq(topics.id, c.topic_id.toLowerCase())))
    if (!topic) throw missingRef(`${at}.config.topic_id`, `names no topic of this account: ${c.topic_id}`)
  }
  return [{ ...step, config: { ...c, template: { ...c.template, id: found.id } } }, { kind: 'template', ref: found.id }]
}

/**
 * Resolves what the steps name outside the automation: events (defined, or a
 * system event), published templates (stored by id), topics and segments. Returns
 * the steps as stored and what they reference.
 */
async function resolveSteps(deps: Deps, accountId: string, steps: AutomationStep[]): Promise<{ steps: AutomationStep[]; refs: Ref[] }> {
  const q = deps.db.q
  const out: AutomationStep[] = []
  const refs: Ref[] = []
  for (const [i, step] of steps.entries()) {
    const at = `steps[${i}]`
    if (step.type === 'trigger' || step.type === 'wait_for_event') refs.push(await eventRef(q, accountId, step.config.event_name, `${at}.config.event_name`))
    if (step.type === 'add_to_segment') {
      const seg = await findSegment(q, accountId, step.config.segment_id).catch((e) => {
        throw e instanceof AppError && e.code === 'not_found' ? missingRef(`${at}.config.segment_id`, `names no segment of this account: ${step.config.segment_id}`) : e
      })
      assertStatic(seg)
      refs.push({ kind: 'segment', ref: seg.id })
      out.push({ ...step, config: { segment_id: seg.id } })
      continue
    }
    if (step.type === 'contact_update') {
      const fixed = Object.fromEntries(Object.entries(step.config.properties ?? {}).filter(([, v]) => !isVarRef(v)))
      await checkProperties(q, accountId, fixed, `${at}.config.properties`)
    }
    if (step.type === 'send_email') {
      const [stored, ref] = await templateRef(q, accountId, step, at)
      out.push(stored)
      refs.push(ref)
      continue
    }
    out.push(step)
  }
  const unique = new Map(refs.map((r) => [`${r.kind}\n${r.ref}`, r]))
  return { steps: out, refs: [...unique.values()] }
}

async function checkedGraph(deps: Deps, accountId: string, steps: AutomationStep[], connections?: Connection[]): Promise<Graph & { refs: Ref[] }> {
  const graph = readGraph(steps, connections, urlRules(deps))
  const resolved = await resolveSteps(deps, accountId, graph.steps)
  return { ...graph, steps: resolved.steps, refs: resolved.refs }
}

/** Saves a version of the graph (and what it references); the automation row points at it. */
async function insertVersion(tx: Tx, deps: Deps, row: Pick<AutomationRow, 'id' | 'accountId' | 'name'>, number: number, graph: Pick<Graph, 'steps' | 'connections'>, refs: Ref[], now: string) {
  const v: VersionRow = { id: deps.ids.uuid(), automationId: row.id, accountId: row.accountId, version: number, name: row.name, steps: graph.steps, connections: graph.connections, createdAt: now }
  await tx.insert(automationVersions).values(v)
  if (refs.length) await tx.insert(automationRefs).values(refs.map((r) => ({ versionId: v.id, automationId: row.id, accountId: row.accountId, kind: r.kind, ref: r.ref })))
  return v
}

const triggerOf = (steps: AutomationStep[]) => (steps.find((s) => s.type === 'trigger') as Graph['trigger']).config.event_name

export async function createAutomation(deps: Deps, actor: Actor, input: CreateAutomation) {
  const graph = await checkedGraph(deps, actor.accountId, input.steps, input.connections as Connection[] | undefined)
  const now = iso(deps.clock.now())
  const id = deps.ids.uuid()
  const status = input.status ?? 'disabled'
  const row: AutomationRow = { id, accountId: actor.accountId, name: input.name, status, enabledAt: status === 'enabled' ? now : null, versionId: '', version: 1, triggerEvent: graph.trigger.config.event_name, createdAt: now, updatedAt: now }
  const v = await deps.db.write(async (tx) => {
    const v = await insertVersion(tx, deps, row, 1, graph, graph.refs, now)
    row.versionId = v.id
    await tx.insert(automations).values(row)
    return v
  })
  const after = toAutomation(row, v)
  await recordChange(deps, actor, { resource: 'automation', resourceId: id, action: 'created', before: null, after })
  return after
}

export async function listAutomations(deps: Deps, actor: Actor, q: ListAutomationsQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('automations', { status: q.status }), query: q, id: automations.id },
    (ks) =>
      deps.db.q
        .select()
        .from(automations)
        .where(and(eq(automations.accountId, actor.accountId), q.status ? eq(automations.status, q.status) : undefined, ks.where))
        .orderBy(ks.orderBy)
        .limit(ks.limit),
    toItem,
  )
}

export async function getAutomation(deps: Deps, actor: Actor, id: string) {
  const row = await findAutomation(deps.db.q, actor, id)
  return toAutomation(row, await versionById(deps.db.q, row.versionId))
}

/** Ends every run of the automation still going; a wait in progress is logged as cancelled. */
async function cancelRuns(tx: Tx, automationId: string, now: string) {
  const running = await tx
    .update(automationRuns)
    .set({ status: 'cancelled', completedAt: now, wakeAt: null, waitingFor: null, leaseOwner: null, leaseUntil: null, updatedAt: now })
    .where(and(eq(automationRuns.automationId, automationId), eq(automationRuns.status, 'running')))
    .returning({ id: automationRuns.id })
  const ids = running.map((r) => r.id)
  for (let i = 0; i < ids.length; i += 500) {
    await tx
      .update(automationRunSteps)
      .set({ status: 'cancelled', completedAt: now })
      .where(and(inArray(automationRunSteps.runId, ids.slice(i, i + 500)), eq(automationRunSteps.status, 'waiting')))
  }
}

/** Enabling checks again that what the current version names exists: an event or template may have gone while it was off. */
async function setStatus(deps: Deps, row: AutomationRow, status: AutomationRow['status'], v: VersionRow, now: string) {
  if (status === 'enabled' && row.status !== 'enabled') await resolveSteps(deps, row.accountId, v.steps)
  await deps.db.write(async (tx) => {
    await tx.update(automations).set({ status, enabledAt: status === 'enabled' ? now : null, updatedAt: now }).where(eq(automations.id, row.id))
    if (status === 'disabled') await cancelRuns(tx, row.id, now)
  })
}

/**
 * Renames, replaces the graph, or turns the automation on or off. A new name or
 * graph is a new version; runs already going keep the version they started on.
 */
export async function updateAutomation(deps: Deps, actor: Actor, id: string, input: UpdateAutomation) {
  if (input.name === undefined && input.status === undefined && input.steps === undefined && input.connections === undefined) {
    throw new AppError('missing_required_field', { message: 'Send `name`, `status`, or `steps` (with `connections`) to change; the body changes nothing.', details: [{ field: 'steps', message: 'required when nothing else is sent' }] })
  }
  if (input.connections !== undefined && input.steps === undefined) throw invalid('connections', 'must come with `steps`: a new graph is sent whole')
  const row = await findAutomation(deps.db.q, actor, id)
  const before = toAutomation(row, await versionById(deps.db.q, row.versionId))
  const graph = input.steps ? await checkedGraph(deps, actor.accountId, input.steps, input.connections as Connection[] | undefined) : null
  const now = iso(deps.clock.now())
  let next = row
  if (graph || input.name !== undefined) {
    next = await deps.db.write(async (tx) => {
      // Read again under the write lock: two edits at once make two versions, numbered in turn.
      const [cur] = await tx.select().from(automations).where(eq(automations.id, row.id))
      if (!cur) throw notFound(`Automation ${id}`)
      const named = { ...cur, name: input.name ?? cur.name }
      const old = await versionById(tx, cur.versionId)
      const refs = graph ? graph.refs : await tx.select({ kind: automationRefs.kind, ref: automationRefs.ref }).from(automationRefs).where(eq(automationRefs.versionId, cur.versionId))
      const v = await insertVersion(tx, deps, named, cur.version + 1, graph ?? old, refs, now)
      const patch = { name: named.name, versionId: v.id, version: v.version, triggerEvent: triggerOf(v.steps), updatedAt: now }
      await tx.update(automations).set(patch).where(eq(automations.id, row.id))
      return { ...cur, ...patch }
    })
  }
  const v = await versionById(deps.db.q, next.versionId)
  if (input.status !== undefined && input.status !== next.status) {
    await setStatus(deps, next, input.status, v, now)
    next = { ...next, status: input.status, updatedAt: now }
  }
  const after = toAutomation(next, v)
  if (next !== row) await recordChange(deps, actor, { resource: 'automation', resourceId: row.id, action: 'updated', before, after })
  return after
}

async function changeStatus(deps: Deps, actor: Actor, id: string, status: AutomationRow['status']) {
  const row = await findAutomation(deps.db.q, actor, id)
  const v = await versionById(deps.db.q, row.versionId)
  const before = toAutomation(row, v)
  const now = iso(deps.clock.now())
  if (row.status !== status) await setStatus(deps, row, status, v, now)
  const after = toAutomation(row.status === status ? row : { ...row, status, updatedAt: now }, v)
  if (row.status !== status) await recordChange(deps, actor, { resource: 'automation', resourceId: row.id, action: status, before, after })
  return after
}

/** Starts reacting to the trigger; enabling an enabled automation changes nothing. */
export const enableAutomation = (deps: Deps, actor: Actor, id: string) => changeStatus(deps, actor, id, 'enabled')

/** Stops reacting to the trigger and ends the runs in progress. */
export const disableAutomation = (deps: Deps, actor: Actor, id: string) => changeStatus(deps, actor, id, 'disabled')

/** Removes the automation with its versions, runs and their logs. Emails its runs sent stay. */
export async function deleteAutomation(deps: Deps, actor: Actor, id: string) {
  const row = await findAutomation(deps.db.q, actor, id)
  const before = toAutomation(row, await versionById(deps.db.q, row.versionId))
  await deps.db.write(async (tx) => {
    const runs = tx.select({ id: automationRuns.id }).from(automationRuns).where(eq(automationRuns.automationId, row.id))
    await tx.delete(automationRunSteps).where(inArray(automationRunSteps.runId, runs))
    await tx.delete(automationRuns).where(eq(automationRuns.automationId, row.id))
    await tx.delete(automationRefs).where(eq(automationRefs.automationId, row.id))
    await tx.delete(automationVersions).where(eq(automationVersions.automationId, row.id))
    await tx.delete(automations).where(eq(automations.id, row.id))
  })
  await recordChange(deps, actor, { resource: 'automation', resourceId: row.id, action: 'deleted', before, after: null })
  return { object: 'automation' as const, id: row.id, deleted: true }
}

/** A copy of the current version as a new, disabled automation named "<name> (copy)", at version 1. */
export async function duplicateAutomation(deps: Deps, actor: Actor, id: string) {
  const row = await findAutomation(deps.db.q, actor, id)
  const v = await versionById(deps.db.q, row.versionId)
  const now = iso(deps.clock.now())
  const copy: AutomationRow = { ...row, id: deps.ids.uuid(), name: `${row.name.slice(0, 193)} (copy)`, status: 'disabled', enabledAt: null, version: 1, createdAt: now, updatedAt: now }
  const made = await deps.db.write(async (tx) => {
    const refs = await tx.select({ kind: automationRefs.kind, ref: automationRefs.ref }).from(automationRefs).where(eq(automationRefs.versionId, v.id))
    const nv = await insertVersion(tx, deps, copy, 1, v, refs, now)
    copy.versionId = nv.id
    await tx.insert(automations).values(copy)
    return nv
  })
  const after = toAutomation(copy, made)
  await recordChange(deps, actor, { resource: 'automation', resourceId: copy.id, action: 'duplicated', before: null, after })
  return after
}

export async function listVersions(deps: Deps, actor: Actor, id: string, q: PageQuery) {
  const row = await findAutomation(deps.db.q, actor, id)
  return pageOf(
    deps.secret,
    { list: listKey('automation_versions', { automation: row.id }), query: q, id: automationVersions.id },
    (ks) => deps.db.q.select().from(automationVersions).where(and(eq(automationVersions.automationId, row.id), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toVersion,
  )
}

const RUN_STATUSES = new Set(['running', 'completed', 'failed', 'cancelled'])

function statusFilter(raw: string | undefined): RunRow['status'][] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined
  const list = [...new Set(raw.split(',').map((s) => s.trim()).filter(Boolean))]
  const bad = list.find((s) => !RUN_STATUSES.has(s))
  if (bad !== undefined) {
    throw new AppError('validation_error', { message: `Invalid \`query.status\`: "${bad}" is no run status; use \`running\`, \`completed\`, \`failed\` or \`cancelled\`, comma-separated.`, details: [{ field: 'query.status', message: 'must be running, completed, failed or cancelled, comma-separated' }] })
  }
  return list.sort() as RunRow['status'][]
}

const runColumns = { run: automationRuns, version: automationVersions.version }

export async function listRuns(deps: Deps, actor: Actor, id: string, q: ListRunsQuery) {
  const row = await findAutomation(deps.db.q, actor, id)
  const statuses = statusFilter(q.status)
  return pageOf(
    deps.secret,
    { list: listKey('automation_runs', { automation: row.id, status: statuses?.join(',') }), query: q, id: automationRuns.id },
    async (ks) =>
      (
        await deps.db.q
          .select(runColumns)
          .from(automationRuns)
          .innerJoin(automationVersions, eq(automationVersions.id, automationRuns.versionId))
          .where(and(eq(automationRuns.automationId, row.id), statuses ? inArray(automationRuns.status, statuses) : undefined, ks.where))
          .orderBy(ks.orderBy)
          .limit(ks.limit)
      ).map((r) => ({ ...r.run, version: r.version })),
    toRunItem,
  )
}

/** One run with its step-by-step log. */
export async function getRun(deps: Deps, actor: Actor, id: string, runId: string) {
  const row = await findAutomation(deps.db.q, actor, id)
  const [found] = await deps.db.q
    .select(runColumns)
    .from(automationRuns)
    .innerJoin(automationVersions, eq(automationVersions.id, automationRuns.versionId))
    .where(and(eq(automationRuns.id, runId.toLowerCase()), eq(automationRuns.automationId, row.id)))
  if (!found) throw notFound(`Run ${runId} of automation ${row.id}`)
  const steps = await deps.db.q.select().from(automationRunSteps).where(eq(automationRunSteps.runId, found.run.id)).orderBy(automationRunSteps.id)
  return { ...toRunItem({ ...found.run, version: found.version }), steps: steps.map(toRunStep) }
}
