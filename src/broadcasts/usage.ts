import { and, asc, eq, inArray } from 'drizzle-orm'
import type { Executor } from '../db'
import { broadcasts } from '../db/tables'

/** The broadcasts that still need a template, as `broadcast <id>`: until sending starts, when its bodies are frozen. */
export async function broadcastsUsingTemplate(q: Executor, accountId: string, templateId: string): Promise<string[]> {
  const rows = await q
    .select({ id: broadcasts.id })
    .from(broadcasts)
    .where(and(eq(broadcasts.accountId, accountId), eq(broadcasts.templateId, templateId), inArray(broadcasts.status, ['draft', 'scheduled'])))
    .orderBy(asc(broadcasts.id))
  return rows.map((r) => `broadcast ${r.id}`)
}
