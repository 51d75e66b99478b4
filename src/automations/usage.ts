import { and, eq, inArray, or } from 'drizzle-orm'
import type { Executor } from '../db'
import { automationRefs, automationRuns, automations, type RefKind } from '../db/tables'
import { AppError } from '../errors/app-error'

/**
 * The automations that still need what `ref` names, as `automation <id>`: those
 * whose current version names it (only enabled ones with `enabledOnly`), and,
 * unless `enabledOnly`, those with runs still going on a version that names it.
 */
export async function automationsUsing(q: Executor, accountId: string, kind: RefKind, ref: string, enabledOnly = false): Promise<string[]> {
  const current = q.select({ v: automations.versionId }).from(automations).where(and(eq(automations.accountId, accountId), enabledOnly ? eq(automations.status, 'enabled') : undefined))
  const running = q.select({ v: automationRuns.versionId }).from(automationRuns).where(and(eq(automationRuns.accountId, accountId), eq(automationRuns.status, 'running')))
  const rows = await q
    .selectDistinct({ id: automationRefs.automationId })
    .from(automationRefs)
    .where(
      and(
        eq(automationRefs.accountId, accountId),
        eq(automationRefs.kind, kind),
        eq(automationRefs.ref, ref),
        enabledOnly ? inArray(automationRefs.versionId, current) : or(inArray(automationRefs.versionId, current), inArray(automationRefs.versionId, running)),
      ),
    )
    .orderBy(automationRefs.automationId)
  return rows.map((r) => `automation ${r.id}`)
}

/** An event an enabled automation triggers on or waits for cannot be deleted or renamed: its runs would never start or wake. */
export async function assertEventUnused(q: Executor, accountId: string, name: string, change: 'deleted' | 'renamed') {
  const users = await automationsUsing(q, accountId, 'event', name, true)
  if (users.length) {
    throw new AppError('event_in_use', { message: `The event "${name}" cannot be ${change}: ${users.join(', ')} ${users.length > 1 ? 'use' : 'uses'} it. Disable them or change their steps first.`, extra: { automation_ids: users.map((u) => u.slice('automation '.length)) } })
  }
}
