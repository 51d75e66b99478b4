import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import type { AutomationStep, Connection } from '../../automations/schema'

export type AutomationStatus = 'enabled' | 'disabled'
export type RunStatus = 'running' | 'completed' | 'failed' | 'cancelled'
export type RunStepStatus = 'waiting' | 'completed' | 'skipped' | 'failed' | 'cancelled'
export type RefKind = 'event' | 'template' | 'segment'

/**
 * An automation and what its current version triggers on, so an occurrence finds
 * the enabled automations it starts with one indexed read.
 */
export const automations = sqliteTable(
  'automations',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
    status: text('status').$type<AutomationStatus>().notNull(),
    /** When it was last enabled: what happened before starts no run. */
    enabledAt: text('enabled_at'),
    versionId: text('version_id').notNull(),
    version: integer('version').notNull(),
    triggerEvent: text('trigger_event').notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('automations_account').on(t.accountId, t.id), index('automations_trigger').on(t.accountId, t.triggerEvent, t.status)],
)

/** Every version of an automation's graph, as saved; runs keep the version they started on. */
export const automationVersions = sqliteTable(
  'automation_versions',
  {
    id: text('id').primaryKey(),
    automationId: text('automation_id').notNull(),
    accountId: text('account_id').notNull(),
    version: integer('version').notNull(),
    name: text('name').notNull(),
    steps: text('steps', { mode: 'json' }).$type<AutomationStep[]>().notNull(),
    connections: text('connections', { mode: 'json' }).$type<Connection[]>().notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('automation_versions_automation').on(t.automationId, t.id)],
)

/** What a version names (event names it triggers on or waits for, template ids it sends, segment ids it adds to), for the in-use checks. */
export const automationRefs = sqliteTable(
  'automation_refs',
  {
    versionId: text('version_id').notNull(),
    automationId: text('automation_id').notNull(),
    accountId: text('account_id').notNull(),
    kind: text('kind').$type<RefKind>().notNull(),
    ref: text('ref').notNull(),
  },
  (t) => [primaryKey({ columns: [t.versionId, t.kind, t.ref] }), index('automation_refs_ref').on(t.accountId, t.kind, t.ref)],
)

/**
 * One contact's way through one version. `cursor` is the step to run next (or
 * being waited on), due at `wake_at`; the worker claims due runs with a lease.
 * `step_seq` grows with every move, so a commit can check that the run is still
 * where it was when claimed.
 */
export const automationRuns = sqliteTable(
  'automation_runs',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    automationId: text('automation_id').notNull(),
    versionId: text('version_id').notNull(),
    contactId: text('contact_id').notNull(),
    status: text('status').$type<RunStatus>().notNull(),
    triggerEvent: text('trigger_event').notNull(),
    triggerPayload: text('trigger_payload', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    triggerSignalId: integer('trigger_signal_id').notNull(),
    /** Payloads of the events wait steps received, by event name. */
    waitEvents: text('wait_events', { mode: 'json' }).$type<Record<string, Record<string, unknown>>>().notNull(),
    cursor: text('cursor'),
    stepSeq: integer('step_seq').notNull(),
    /** The log row of the current step while it waits (a delay, an event, a webhook retry). */
    stepLogId: text('step_log_id'),
    /** The event a wait step is waiting for, and the last signal before the wait began. */
    waitingFor: text('waiting_for'),
    waitAfter: integer('wait_after'),
    /** When the current wait ends (a delay's end, a wait's timeout); `wake_at` is earlier when an event may have come. */
    deadline: text('deadline'),
    wakeAt: text('wake_at'),
    leaseOwner: text('lease_owner'),
    leaseUntil: text('lease_until'),
    startedAt: text('started_at').notNull(),
    completedAt: text('completed_at'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    index('automation_runs_automation').on(t.automationId, t.id),
    index('automation_runs_due').on(t.status, t.wakeAt),
    index('automation_runs_waiting').on(t.accountId, t.contactId, t.waitingFor),
  ],
)

/** The step-by-step log of a run: one row per step it reached. */
export const automationRunSteps = sqliteTable(
  'automation_run_steps',
  {
    id: text('id').primaryKey(),
    runId: text('run_id').notNull(),
    accountId: text('account_id').notNull(),
    stepKey: text('step_key').notNull(),
    type: text('type').notNull(),
    status: text('status').$type<RunStepStatus>().notNull(),
    attempts: integer('attempts').notNull(),
    output: text('output', { mode: 'json' }).$type<Record<string, unknown> | null>(),
    error: text('error', { mode: 'json' }).$type<{ code: string; message: string } | null>(),
    startedAt: text('started_at').notNull(),
    completedAt: text('completed_at'),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('automation_run_steps_run').on(t.runId, t.id)],
)

/**
 * The automations' outbox: what happened to a contact (a custom event, a contact
 * created, a topic answered), written in the transaction that made it happen. The
 * worker starts runs from each signal once (`processed_at`), and wait steps read
 * the signals recorded after they began, so rows stay until no wait can need them.
 */
export const automationSignals = sqliteTable(
  'automation_signals',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    accountId: text('account_id').notNull(),
    contactId: text('contact_id').notNull(),
    name: text('name').notNull(),
    payload: text('payload', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    /** The event occurrence it came from, for custom events. */
    occurrenceId: text('occurrence_id'),
    createdAt: text('created_at').notNull(),
    processedAt: text('processed_at'),
  },
  (t) => [index('automation_signals_pending').on(t.processedAt, t.id), index('automation_signals_contact').on(t.accountId, t.contactId, t.name, t.id)],
)
