import { eq, sql } from 'drizzle-orm'
import { insertKey } from '../api-keys/service'
import type { Database } from '../db'
import { inTransaction, type RootDeps } from '../deps'
import { accounts, settings } from '../db/tables'
import { iso } from '../lib/clock'
import { randomBase62 } from '../lib/crypto'

/**
 * On an empty database: the owner account and its first full_access key. The
 * token is the operator's MAILROOM_BOOTSTRAP_KEY, or a new one returned so the
 * caller can print it once. Returns null when the database already has an account.
 */
export function ensureFirstAccount(root: RootDeps): Promise<{ accountId: string; token: string; generated: boolean } | null> {
  return inTransaction(root, async (deps) => {
    // Counted inside the write transaction: two instances starting on one database create one owner.
    await deps.db.write(async () => undefined)
    const [{ n }] = await deps.db.q.select({ n: sql<number>`count(*)` }).from(accounts)
    if (Number(n) > 0) return null
    const now = iso(deps.clock.now())
    const accountId = deps.ids.uuid()
    await deps.db.write((tx) => tx.insert(accounts).values({ id: accountId, name: 'Default account', createdAt: now, updatedAt: now }))
    const { token } = await insertKey(deps, { accountId, name: 'Bootstrap key', system: true, token: deps.config.bootstrapKey })
    return { accountId, token, generated: !deps.config.bootstrapKey }
  })
}

/** The deployment's signing secret: made once, kept in the database so every instance and restart shares it. */
export async function deploymentSecret(db: Database): Promise<string> {
  const candidate = randomBase62(48)
  await db.write((tx) => tx.insert(settings).values({ key: 'secret', value: candidate }).onConflictDoNothing())
  const [row] = await db.q.select().from(settings).where(eq(settings.key, 'secret'))
  return row.value
}
