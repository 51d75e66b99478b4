import { and, eq, gte, inArray, isNull, or, sql } from 'drizzle-orm'
import { holdForApproval, mayHold } from '../agent-actions/hold'
import { recordChange } from '../audit/record'
import { planInclusion } from '../billing/ledger'
import type { Deps } from '../deps'
import { pageOf } from '../db/paging'
import { prepared } from '../db/prepared'
import { apiKeyBudgetUsage, apiKeyUsage, apiKeys } from '../db/tables'
import { AppError, notFound } from '../errors/app-error'
import { systemActor, type Actor } from '../lib/actor'
import { DAY, HOUR, iso } from '../lib/clock'
import { randomBase62, safeEqual, sha256 } from '../lib/crypto'
import { listKey, type PageQuery } from '../lib/paging'
import { periodBounds } from '../lib/periods'
import type { CreateApiKey, UpdateApiKey, UpdateKeyLimits } from './schema'

type KeyRow = typeof apiKeys.$inferSelect

export const TOKEN_PREFIX = 'mr_'
export const newToken = () => TOKEN_PREFIX + randomBase62(40)
export const hashToken = (token: string) => sha256(token)
const shownPrefix = (token: string) => token.slice(0, 11)

/** The public shape of a key: every seed field, never the token or its hash. */
export function toApiKey(row: KeyRow, requestCount30d: number, lastUsedAt: string | null) {
  return {
    object: 'api_key' as const,
    id: row.id,
    name: row.name,
    permission: row.permission,
    domain_scope: row.domainScope,
    scopes: row.scopes,
    expires_at: row.expiresAt,
    token_prefix: row.tokenPrefix,
    system: row.system,
    created_at: row.createdAt,
    last_used_at: lastUsedAt,
    request_count_30d: requestCount30d,
    rotated_at: row.rotatedAt,
    previous_key_expires_at: row.previousKeyExpiresAt,
    budget_per_period: row.budgetPerPeriod,
    period: row.period,
    rate_ceiling_per_minute: row.rateCeilingPerMinute,
    loop_guard: row.loopGuard,
    paused_at: row.pausedAt,
    paused_reason: row.pausedReason,
  }
}

/** The key as the audit trail records it: without the usage figures, which move with every call and are no change of the key. */
function audited(row: KeyRow) {
  const { last_used_at: _used, request_count_30d: _count, ...shape } = toApiKey(row, 0, null)
  return shape
}

const limitsOf = (row: KeyRow) => ({
  key_id: row.id,
  budget_per_period: row.budgetPerPeriod,
  period: row.period,
  rate_ceiling_per_minute: row.rateCeilingPerMinute,
  loop_guard: row.loopGuard,
})

/** Stored counts of the last 30 days plus what this process has not flushed yet. */
async function usageOf(deps: Deps, rows: KeyRow[]) {
  if (!rows.length) return new Map<string, { count: number; lastUsed: string | null }>()
  const since = iso(deps.clock.now() - 29 * DAY).slice(0, 10)
  const sums = await deps.db.q
    .select({ keyId: apiKeyUsage.keyId, n: sql<number>`sum(${apiKeyUsage.requests})` })
    .from(apiKeyUsage)
    .where(and(inArray(apiKeyUsage.keyId, rows.map((r) => r.id)), gte(apiKeyUsage.day, since)))
    .groupBy(apiKeyUsage.keyId)
  const stored = new Map(sums.map((s) => [s.keyId, Number(s.n)]))
  return new Map(
    rows.map((r) => {
      const p = deps.keyUsage.pendingFor(r.id)
      const pendingLast = p.lastUsed ? iso(p.lastUsed) : null
      const lastUsed = [r.lastUsedAt, pendingLast].filter(Boolean).sort().pop() ?? null
      return [r.id, { count: (stored.get(r.id) ?? 0) + p.requests, lastUsed }]
    }),
  )
}

async function view(deps: Deps, row: KeyRow) {
  const u = (await usageOf(deps, [row])).get(row.id)!
  return toApiKey(row, u.count, u.lastUsed)
}

/** A key budget stays within the operator's monthly quota and, with billing on, the monthly inclusion of the plan in force. */
export async function checkBudget(deps: Deps, accountId: string, budget: number | null | undefined) {
  if (budget === undefined) return
  const caps = [deps.config.monthlyQuota, await planInclusion(deps, accountId)].filter((c): c is number => c !== undefined)
  if (!caps.length) return
  const cap = Math.min(...caps)
  if (budget === null || budget > cap) {
    throw new AppError('key_budget_exceeds_plan', {
      message: `A key budget must be a whole number at or below the monthly inclusion of ${cap} emails${budget === null ? '; unlimited is not allowed' : ''}.`,
    })
  }
}

function futureTimestamp(deps: Deps, value: string | null | undefined, field: string) {
  if (value === undefined || value === null) return value
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw new AppError('validation_error', { details: [{ field, message: 'must be an ISO 8601 timestamp' }] })
  if (ms <= deps.clock.now()) throw new AppError('invalid_parameter', { message: `\`${field}\` must be in the future.` })
  return iso(ms)
}

async function findKey(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, id), eq(apiKeys.accountId, actor.accountId), isNull(apiKeys.revokedAt)))
  if (!row) throw notFound('API key')
  return row
}

interface NewKey {
  accountId: string
  name: string
  permission?: 'full_access' | 'sending_access'
  system?: boolean
  token?: string
  createdByKeyId?: string | null
}

/** Inserts a key; the token is returned here and never again. */
/** The key row alone: each caller that makes a key for someone (a request, an OAuth grant, the first start) puts it on the audit record with `auditKeyCreated`. */
export async function insertKey(deps: Deps, k: NewKey & Partial<CreateApiKey>) {
  const token = k.token ?? newToken()
  const now = iso(deps.clock.now())
  const row: KeyRow = {
    id: deps.ids.uuid(),
    accountId: k.accountId,
    name: k.name,
    permission: k.permission ?? 'full_access',
    domainScope: k.domain_scope?.toLowerCase() ?? null,
    scopes: k.scopes ?? [],
    expiresAt: k.expires_at ?? null,
    tokenHash: hashToken(token),
    tokenPrefix: shownPrefix(token),
    previousTokenHash: null,
    previousKeyExpiresAt: null,
    rotatedAt: null,
    system: k.system ?? false,
    budgetPerPeriod: k.budget_per_period ?? null,
    period: k.period ?? 'monthly',
    rateCeilingPerMinute: k.rate_ceiling_per_minute ?? null,
    loopGuard: k.loop_guard ?? 'off',
    pausedAt: null,
    pausedReason: null,
    createdByKeyId: k.createdByKeyId ?? null,
    createdAt: now,
    updatedAt: now,
    lastUsedAt: null,
    revokedAt: null,
  }
  await deps.db.write((tx) => tx.insert(apiKeys).values(row))
  return { row, token }
}

export function auditKeyCreated(deps: Deps, actor: Actor, row: KeyRow) {
  return recordChange(deps, actor, { resource: 'api_key', resourceId: row.id, action: 'created', before: null, after: audited(row) })
}

export async function createKey(deps: Deps, actor: Actor, input: CreateApiKey) {
  await checkBudget(deps, actor.accountId, input.budget_per_period)
  const expires_at = futureTimestamp(deps, input.expires_at, 'expires_at')
  const { row, token } = await insertKey(deps, { ...input, expires_at, accountId: actor.accountId, createdByKeyId: actor.keyId })
  await auditKeyCreated(deps, actor, row)
  return { ...toApiKey(row, 0, null), token }
}

export async function listKeys(deps: Deps, actor: Actor, q: PageQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('api_keys'), query: q, id: apiKeys.id },
    async (ks) => {
      const rows = await deps.db.q
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.accountId, actor.accountId), isNull(apiKeys.revokedAt), ks.where))
        .orderBy(ks.orderBy)
        .limit(ks.limit)
      const usage = await usageOf(deps, rows)
      return rows.map((r) => ({ row: r, id: r.id, usage: usage.get(r.id) }))
    },
    (r) => toApiKey(r.row, r.usage?.count ?? 0, r.usage?.lastUsed ?? null),
  )
}

export async function getKey(deps: Deps, actor: Actor, id: string) {
  return view(deps, await findKey(deps, actor, id))
}

export async function updateKey(deps: Deps, actor: Actor, id: string, input: UpdateApiKey) {
  const row = await findKey(deps, actor, id)
  const patch: Partial<KeyRow> = { updatedAt: iso(deps.clock.now()) }
  if (input.name !== undefined) patch.name = input.name
  if (input.domain_scope !== undefined) patch.domainScope = input.domain_scope?.toLowerCase() ?? null
  if (input.scopes !== undefined) patch.scopes = input.scopes
  await deps.db.write((tx) => tx.update(apiKeys).set(patch).where(eq(apiKeys.id, row.id)))
  await recordChange(deps, actor, { resource: 'api_key', resourceId: row.id, action: 'updated', before: audited(row), after: audited({ ...row, ...patch }) })
  return view(deps, { ...row, ...patch })
}

/** Revokes at once and for good: the row stays for the record, the token never works again. */
export async function deleteKey(deps: Deps, actor: Actor, id: string) {
  const row = await findKey(deps, actor, id)
  const now = iso(deps.clock.now())
  await deps.db.write((tx) => tx.update(apiKeys).set({ revokedAt: now, updatedAt: now }).where(eq(apiKeys.id, row.id)))
  await recordChange(deps, actor, { resource: 'api_key', resourceId: row.id, action: 'deleted', before: audited(row), after: null })
  return { object: 'api_key' as const, id: row.id, deleted: true }
}

export async function rotateKey(deps: Deps, actor: Actor, id: string, graceHours: 0 | 1 | 24 = 24) {
  const row = await findKey(deps, actor, id)
  const token = newToken()
  const now = deps.clock.now()
  const patch: Partial<KeyRow> = {
    tokenHash: hashToken(token),
    tokenPrefix: shownPrefix(token),
    previousTokenHash: graceHours > 0 ? row.tokenHash : null,
    previousKeyExpiresAt: iso(now + graceHours * HOUR),
    rotatedAt: iso(now),
    updatedAt: iso(now),
  }
  await deps.db.write((tx) => tx.update(apiKeys).set(patch).where(eq(apiKeys.id, row.id)))
  await recordChange(deps, actor, { resource: 'api_key', resourceId: row.id, action: 'rotated', before: audited(row), after: audited({ ...row, ...patch }) })
  return { ...(await view(deps, { ...row, ...patch })), token }
}

/** The trust system's kill switch: the key answers `kill_switch_active` until a person resumes it. */
export async function pauseKey(deps: Deps, keyId: string, reason: string) {
  const [row] = await deps.db.q.select().from(apiKeys).where(eq(apiKeys.id, keyId))
  if (!row) return
  const now = iso(deps.clock.now())
  const patch = { pausedAt: now, pausedReason: reason, updatedAt: now }
  await deps.db.write((tx) => tx.update(apiKeys).set(patch).where(eq(apiKeys.id, keyId)))
  await recordChange(deps, systemActor(row.accountId), { resource: 'api_key', resourceId: row.id, action: 'paused', before: audited(row), after: audited({ ...row, ...patch }) })
}

export async function resumeKey(deps: Deps, actor: Actor, id: string) {
  if (actor.kind !== 'session') throw new AppError('human_action_required', { message: 'Only a person signed in to the console can resume a paused key.' })
  const row = await findKey(deps, actor, id)
  const patch = { pausedAt: null, pausedReason: null, updatedAt: iso(deps.clock.now()) }
  await deps.db.write((tx) => tx.update(apiKeys).set(patch).where(eq(apiKeys.id, row.id)))
  await recordChange(deps, actor, { resource: 'api_key', resourceId: row.id, action: 'resumed', before: audited(row), after: audited({ ...row, ...patch }) })
  return view(deps, { ...row, ...patch })
}

export type AuthResult = { ok: true; key: KeyRow } | { ok: false; reason: 'unknown' | 'expired' | 'grace_over' }

/** Every authenticated request runs it: prepared once. */
const keysByToken = prepared((q) =>
  q
    .select()
    .from(apiKeys)
    .where(and(or(eq(apiKeys.tokenHash, sql.placeholder('hash')), eq(apiKeys.previousTokenHash, sql.placeholder('hash'))), isNull(apiKeys.revokedAt)))
    .limit(1)
    .prepare(),
)

/**
 * Finds the live key for a presented token: its current token, or the one it
 * replaced while the rotation grace lasts. Hashes are compared in constant time.
 */
export async function resolveToken(deps: Deps, token: string): Promise<AuthResult> {
  const hash = hashToken(token)
  // One row at most (hashes of random tokens never collide): `get` costs a read less than `all`.
  const key = await keysByToken(deps.db.q).get({ hash })
  const now = deps.clock.now()
  if (!key) return { ok: false, reason: 'unknown' }
  const current = safeEqual(key.tokenHash, hash)
  if (!current && !(key.previousTokenHash && safeEqual(key.previousTokenHash, hash))) return { ok: false, reason: 'unknown' }
  if (!current && (!key.previousKeyExpiresAt || Date.parse(key.previousKeyExpiresAt) <= now)) return { ok: false, reason: 'grace_over' }
  if (key.expiresAt && Date.parse(key.expiresAt) <= now) return { ok: false, reason: 'expired' }
  return { ok: true, key }
}

/** The request window a key gets: its own ceiling, or the deployment default. */
export const rateLimitOf = (deps: Deps, key: Pick<KeyRow, 'rateCeilingPerMinute'>) => key.rateCeilingPerMinute ?? deps.config.rateLimitPerMinute

async function budgetUsed(deps: Deps, row: KeyRow, periodStart: string) {
  const [u] = await deps.db.q
    .select({ used: apiKeyBudgetUsage.used })
    .from(apiKeyBudgetUsage)
    .where(and(eq(apiKeyBudgetUsage.keyId, row.id), eq(apiKeyBudgetUsage.periodStart, periodStart)))
  return u?.used ?? 0
}

/** A sending key may read its own limits; reading another key's needs full access. */
export async function getLimits(deps: Deps, actor: Actor, id: string) {
  const row = await findKey(deps, actor, id)
  if (actor.permission !== 'full_access' && actor.keyId !== id) {
    throw new AppError('restricted_api_key', { message: 'A sending-only key may read only its own limits.' })
  }
  const now = deps.clock.now()
  const { start, end } = periodBounds(row.period, now)
  const used = await budgetUsed(deps, row, iso(start))
  const rate = deps.buckets.peek(`key:${row.id}`, rateLimitOf(deps, row), now)
  return {
    object: 'key_limits' as const,
    key_id: row.id,
    budget_per_period: row.budgetPerPeriod,
    period: row.period,
    used,
    remaining: row.budgetPerPeriod === null ? null : Math.max(0, row.budgetPerPeriod - used),
    period_started_at: iso(start),
    resets_at: iso(end),
    rate_ceiling_per_minute: row.rateCeilingPerMinute,
    rate: { limit: rate.limit, remaining: rate.remaining, reset_seconds: rate.resetSeconds },
    loop_guard: row.loopGuard,
    paused: row.pausedAt !== null,
  }
}

const raises = (from: number | null, to: number | null | undefined) => to !== undefined && from !== null && (to === null || to > from)

/**
 * A key may lower its own limits but never raise them: a raise it asks for is
 * held as an agent action until a person approves it (checked against the plan first).
 */
export async function updateLimits(deps: Deps, actor: Actor, id: string, input: UpdateKeyLimits) {
  const row = await findKey(deps, actor, id)
  await checkBudget(deps, actor.accountId, input.budget_per_period)
  if (actor.keyId === row.id && mayHold(actor) && (raises(row.budgetPerPeriod, input.budget_per_period) || raises(row.rateCeilingPerMinute, input.rate_ceiling_per_minute))) {
    await holdForApproval(deps, actor, {
      kind: 'raise_key_limits',
      reason: 'key_limit_raise',
      detail: 'A key cannot raise its own budget or rate ceiling.',
      request: { key_id: row.id, input },
    })
  }
  const patch: Partial<KeyRow> = { updatedAt: iso(deps.clock.now()) }
  if (input.budget_per_period !== undefined) patch.budgetPerPeriod = input.budget_per_period
  if (input.period !== undefined) patch.period = input.period
  if (input.rate_ceiling_per_minute !== undefined) patch.rateCeilingPerMinute = input.rate_ceiling_per_minute
  if (input.loop_guard !== undefined) patch.loopGuard = input.loop_guard
  await deps.db.write((tx) => tx.update(apiKeys).set(patch).where(eq(apiKeys.id, row.id)))
  await recordChange(deps, actor, { resource: 'key_limit', resourceId: row.id, action: 'updated', before: limitsOf(row), after: limitsOf({ ...row, ...patch }) })
  return getLimits(deps, actor, id)
}
