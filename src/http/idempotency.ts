import { and, eq, lte } from 'drizzle-orm'
import type { Database, Tx } from '../db'
import { idempotencyKeys } from '../db/tables'
import { AppError } from '../errors/app-error'
import { INSTANCE_ID } from '../instance'
import { DAY, iso } from '../lib/clock'
import { seal, sha256, unseal } from '../lib/crypto'
import { stableStringify } from '../lib/json'

export const KEY_TTL_MS = 7 * DAY
/**
 * How long a claim holds while its request runs: the backstop. A process that died
 * frees its claims sooner, when an instance finds it dead (src/instance.ts).
 */
export const LEASE_MS = 5 * 60_000

/** The header, or its legacy alias; `Idempotency-Key` wins when both are sent. */
export function idempotencyKeyOf(headers: Headers): string | undefined {
  const key = headers.get('idempotency-key') ?? headers.get('x-idempotency-key')
  if (key === null) return undefined
  if (key.length < 1 || key.length > 256) throw new AppError('invalid_idempotency_key')
  return key
}

export const fingerprint = (method: string, path: string, body: unknown) => sha256(`${method} ${path}\n${stableStringify(body ?? {})}`)

export type Claim = { kind: 'proceed' } | { kind: 'replay'; status: number; body: string }

/**
 * The database never holds a caller's Idempotency-Key nor the reply it replays:
 * a reply can carry a secret shown once (a new API key's token, a webhook's
 * signing secret), so it is sealed under the key itself, which only the caller
 * has, and the row is found by the key's hash.
 */
export const storedIdempotencyKey = (accountId: string, key: string) => sha256(`${accountId}\n${key}`)
const rowOf = (accountId: string, key: string) => and(eq(idempotencyKeys.accountId, accountId), eq(idempotencyKeys.key, storedIdempotencyKey(accountId, key)))
const replySecret = (accountId: string, key: string) => `idempotent reply\n${accountId}\n${key}`

/** Rules 1 to 3 of the seed for a row that exists: replay, refuse, or null to (re)claim it. */
function decide(row: typeof idempotencyKeys.$inferSelect | undefined, fp: string, now: number, accountId: string, key: string): Claim | null {
  if (!row || Date.parse(row.expiresAt) <= now) return null
  if (row.fingerprint !== fp) throw new AppError('idempotency_payload_mismatch')
  if (row.state === 'completed') return { kind: 'replay', status: row.statusCode!, body: unseal(replySecret(accountId, key), row.responseBody!) }
  if (Date.parse(row.leaseUntil) > now) throw new AppError('idempotency_in_flight')
  // The holder died before committing anything (work and completion commit together): take it over.
  return null
}

/**
 * Claims a key for one request, or says how to answer instead. A key already held
 * is answered from a plain read, so a retry never queues behind the running
 * request's transaction; only a new claim takes the write lock.
 */
export async function claim(db: Database, now: number, accountId: string, key: string, fp: string): Promise<Claim> {
  const where = rowOf(accountId, key)
  const [seen] = await db.q.select().from(idempotencyKeys).where(where)
  const early = decide(seen, fp, now, accountId, key)
  if (early) return early
  return db.write(async (tx) => {
    const [row] = await tx.select().from(idempotencyKeys).where(where)
    const decided = decide(row, fp, now, accountId, key)
    if (decided) return decided
    const fresh = { fingerprint: fp, state: 'in_flight' as const, leaseUntil: iso(now + LEASE_MS), instanceId: INSTANCE_ID, statusCode: null, responseBody: null, createdAt: iso(now), expiresAt: iso(now + KEY_TTL_MS) }
    await tx
      .insert(idempotencyKeys)
      .values({ accountId, key: storedIdempotencyKey(accountId, key), ...fresh })
      .onConflictDoUpdate({ target: [idempotencyKeys.accountId, idempotencyKeys.key], set: fresh })
    return { kind: 'proceed' }
  })
}

/** Records the reply in the request's own transaction, so work and key commit together. */
export async function complete(tx: Tx, accountId: string, key: string, status: number, body: string) {
  await tx
    .update(idempotencyKeys)
    .set({ state: 'completed', statusCode: status, responseBody: seal(replySecret(accountId, key), body) })
    .where(rowOf(accountId, key))
}

/** A request that failed did nothing, so its key is freed for a corrected retry. */
export async function release(db: Database, accountId: string, key: string) {
  await db.write((tx) =>
    tx.delete(idempotencyKeys).where(and(rowOf(accountId, key), eq(idempotencyKeys.state, 'in_flight'))),
  )
}

export async function purgeExpired(db: Database, now: number) {
  await db.write((tx) => tx.delete(idempotencyKeys).where(lte(idempotencyKeys.expiresAt, iso(now))))
}
