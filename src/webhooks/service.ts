import { and, asc, count, eq, gt, type SQL } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import type { Config } from '../config'
import { pageOf } from '../db/paging'
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { DAY, iso } from '../lib/clock'
import { listKey, type PageQuery } from '../lib/paging'
import { WebhookClient } from './client'
import { WebhookGuard } from './guard'
import { newDelivery, webhookPayload } from './outbox'
import type { CreateWebhook, ListWebhookEventsQuery, TestWebhook, UpdateWebhook } from './schema'
import { toAttempt, toWebhook, toWebhookEvent, type DeliveryRow, type EndpointRow } from './shape'
import { newSigningSecret, signatureHeaders } from './sign'

/** How long a rotated-out secret keeps signing beside the new one. */
export const ROTATION_GRACE_MS = DAY

/** One guard and one client per deployment's settings (their DNS caches are what they share). */
const clients = new WeakMap<Config, { guard: WebhookGuard; client: WebhookClient }>()
function clientOf(config: Config) {
  let c = clients.get(config)
  if (!c) {
    const guard = new WebhookGuard(config)
    c = { guard, client: new WebhookClient(guard) }
    clients.set(config, c)
  }
  return c
}

/**
 * The URL rules at create and update: the URL itself, and (unless private
 * addresses are allowed) every address its host resolves to now. Deliveries
 * check again each time, so a name that later resolves inside the network is
 * refused then too.
 */
async function assertUrlAllowed(deps: Deps, url: string) {
  const { guard } = clientOf(deps.config)
  const problem = guard.urlProblem(url)
  if (problem) throw new AppError('invalid_parameter', { message: `\`url\` ${problem}: ${url}` })
  if (deps.config.allowPrivateWebhooks) return
  const target = await guard.target(url)
  if (target.ok) return
  if (target.kind === 'dns') throw new AppError('dns_unreachable', { message: `${target.reason} Nothing was changed; try again shortly.` })
  throw new AppError('invalid_parameter', { message: `\`url\` is not allowed: ${target.reason}` })
}

/** `url` or Resend's `endpoint`; both may be sent when they agree. */
function urlFrom(input: { url?: string; endpoint?: string }): string | undefined {
  if (input.url !== undefined && input.endpoint !== undefined && input.url !== input.endpoint) {
    throw new AppError('invalid_parameter', { message: '`url` and `endpoint` name different URLs; send one of them.' })
  }
  return input.url ?? input.endpoint
}

/** `disabled` or Resend's `status`; both may be sent when they agree. */
function disabledFrom(input: { disabled?: boolean; status?: 'enabled' | 'disabled' }): boolean | undefined {
  const fromStatus = input.status === undefined ? undefined : input.status === 'disabled'
  if (input.disabled !== undefined && fromStatus !== undefined && input.disabled !== fromStatus) {
    throw new AppError('invalid_parameter', { message: `\`disabled\` (${input.disabled}) and \`status\` (${input.status}) disagree; send one of them.` })
  }
  return input.disabled ?? fromStatus
}

async function findEndpoint(deps: Deps, actor: Actor, id: string): Promise<EndpointRow> {
  const [row] = await deps.db.q
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id.toLowerCase()), eq(webhookEndpoints.accountId, actor.accountId)))
  if (!row) throw notFound(`Webhook ${id}`)
  return row
}

export async function createWebhook(deps: Deps, actor: Actor, input: CreateWebhook) {
  const url = urlFrom(input)
  if (url === undefined) {
    throw new AppError('missing_required_field', { message: 'Missing `url` field (Resend’s `endpoint` works too).', details: [{ field: 'url', message: 'required: the https:// URL to deliver to' }] })
  }
  await assertUrlAllowed(deps, url)
  const now = iso(deps.clock.now())
  const disabled = input.disabled ?? false
  const row: EndpointRow = {
    id: deps.ids.uuid(),
    accountId: actor.accountId,
    url,
    events: input.events,
    disabled,
    disabledReason: disabled ? 'manual' : null,
    webhookCompat: input.webhook_compat ?? false,
    secret: newSigningSecret(),
    previousSecret: null,
    previousSecretExpiresAt: null,
    failingSince: null,
    createdAt: now,
    updatedAt: now,
  }
  const limit = deps.config.webhookEndpointLimit
  await deps.db.write(async (tx) => {
    const [{ n }] = await tx.select({ n: count() }).from(webhookEndpoints).where(eq(webhookEndpoints.accountId, actor.accountId))
    if (n >= limit) throw new AppError('webhook_endpoint_limit_reached', { message: `This account has ${n} of its ${limit} webhook endpoints; delete one to add another.` })
    await tx.insert(webhookEndpoints).values(row)
  })
  await recordChange(deps, actor, { resource: 'webhook', resourceId: row.id, action: 'created', before: null, after: toWebhook(row) })
  return { ...toWebhook(row), signing_secret: row.secret }
}

export async function listWebhooks(deps: Deps, actor: Actor, q: PageQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('webhooks'), query: q, id: webhookEndpoints.id },
    (ks) => deps.db.q.select().from(webhookEndpoints).where(and(eq(webhookEndpoints.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toWebhook,
  )
}

export async function getWebhook(deps: Deps, actor: Actor, id: string) {
  return toWebhook(await findEndpoint(deps, actor, id))
}

/**
 * Changes the URL, the kinds, `disabled` or `webhook_compat`. Enabling an endpoint
 * restarts its failure clock: its pending events go out again at once.
 */
export async function updateWebhook(deps: Deps, actor: Actor, id: string, input: UpdateWebhook) {
  const row = await findEndpoint(deps, actor, id)
  const url = urlFrom(input)
  const disabled = disabledFrom(input)
  if (url !== undefined && url !== row.url) await assertUrlAllowed(deps, url)
  const patch: Partial<EndpointRow> = { updatedAt: iso(deps.clock.now()) }
  if (url !== undefined) patch.url = url
  if (input.events !== undefined) patch.events = input.events
  if (input.webhook_compat !== undefined) patch.webhookCompat = input.webhook_compat
  if (disabled !== undefined && disabled !== row.disabled) {
    patch.disabled = disabled
    patch.disabledReason = disabled ? 'manual' : null
    patch.failingSince = null
  }
  await deps.db.write((tx) => tx.update(webhookEndpoints).set(patch).where(eq(webhookEndpoints.id, row.id)))
  const after = { ...row, ...patch }
  await recordChange(deps, actor, { resource: 'webhook', resourceId: row.id, action: 'updated', before: toWebhook(row), after: toWebhook(after) })
  return toWebhook(after)
}

/** Removes the endpoint with its events and their attempts; an attempt in flight is not recorded. */
export async function deleteWebhook(deps: Deps, actor: Actor, id: string) {
  const row = await findEndpoint(deps, actor, id)
  await deps.db.write(async (tx) => {
    await tx.delete(webhookAttempts).where(eq(webhookAttempts.endpointId, row.id))
    await tx.delete(webhookDeliveries).where(eq(webhookDeliveries.endpointId, row.id))
    await tx.delete(webhookEndpoints).where(eq(webhookEndpoints.id, row.id))
  })
  await recordChange(deps, actor, { resource: 'webhook', resourceId: row.id, action: 'deleted', before: toWebhook(row), after: null })
  return { object: 'webhook' as const, id: row.id, deleted: true }
}

/** A new secret, shown once; the one it replaces signs beside it for 24 hours, so receivers can switch without losing events. */
export async function rotateWebhookSecret(deps: Deps, actor: Actor, id: string) {
  const row = await findEndpoint(deps, actor, id)
  const now = deps.clock.now()
  const patch = { secret: newSigningSecret(), previousSecret: row.secret, previousSecretExpiresAt: iso(now + ROTATION_GRACE_MS), updatedAt: iso(now) }
  await deps.db.write((tx) => tx.update(webhookEndpoints).set(patch).where(eq(webhookEndpoints.id, row.id)))
  const after = { ...row, ...patch }
  await recordChange(deps, actor, { resource: 'webhook', resourceId: row.id, action: 'rotated', before: toWebhook(row), after: toWebhook(after) })
  return { ...toWebhook(after), signing_secret: patch.secret, previous_secret_expires_at: patch.previousSecretExpiresAt }
}

/** The `data` of a test event: the kind's usual fields with sample values, marked `test`. */
function sampleData(deps: Deps, type: string, at: string): Record<string, unknown> {
  const id = deps.ids.uuid()
  if (type.startsWith('email.')) {
    return { email_id: id, created_at: at, from: `Mailroom <test@${deps.config.hostname}>`, to: ['delivered@simulator.test'], subject: 'Mailroom test event', message_id: `${id}@${deps.config.hostname}`, tags: {}, test: true }
  }
  return { id, object: type.split('.')[0], created_at: at, test: true }
}

/**
 * Sends a signed sample event to the endpoint now, whether or not it subscribes to
 * the kind or is disabled, and answers with its attempt. A test that fails is not
 * retried (replay sends it again).
 */
export async function testWebhook(deps: Deps, actor: Actor, id: string, input: TestWebhook) {
  const endpoint = await findEndpoint(deps, actor, id)
  const type = input.type ?? 'email.sent'
  const started = deps.clock.now()
  const at = iso(started)
  const row: DeliveryRow = newDelivery(deps.ids.uuid(), actor.accountId, endpoint.id, type, webhookPayload({ type, at, data: sampleData(deps, type, at) }), null, at)
  const headers = signatureHeaders(endpoint, row.id, started, row.payload, endpoint.webhookCompat)
  const result = await clientOf(deps.config).client.post(endpoint.url, headers, row.payload, () => deps.clock.now())
  const done = iso(deps.clock.now())
  const sent: DeliveryRow = { ...row, state: result.ok ? 'delivered' : 'failed', retries: 1, attempts: 1, lastStatus: result.status, deliveredAt: result.ok ? done : null, updatedAt: done }
  const attempt = { id: deps.ids.uuid(), deliveryId: row.id, endpointId: endpoint.id, startedAt: at, durationMs: result.durationMs, status: result.status, response: result.response, outcome: result.ok ? ('succeeded' as const) : ('failed' as const) }
  await deps.db.write(async (tx) => {
    await tx.insert(webhookDeliveries).values(sent)
    await tx.insert(webhookAttempts).values(attempt)
  })
  return detail(sent, [attempt])
}

const STATUS_FILTER: Record<NonNullable<ListWebhookEventsQuery['status']>, SQL | undefined> = {
  success: eq(webhookDeliveries.state, 'delivered'),
  failed: eq(webhookDeliveries.state, 'failed'),
  attempting: and(eq(webhookDeliveries.state, 'pending'), gt(webhookDeliveries.attempts, 0)),
  pending: and(eq(webhookDeliveries.state, 'pending'), eq(webhookDeliveries.attempts, 0)),
}

/** The endpoint's delivery log, newest first, optionally of one status or kind. */
export async function listWebhookEvents(deps: Deps, actor: Actor, id: string, q: ListWebhookEventsQuery) {
  const endpoint = await findEndpoint(deps, actor, id)
  const where = and(
    eq(webhookDeliveries.endpointId, endpoint.id),
    q.status ? STATUS_FILTER[q.status] : undefined,
    q.type ? eq(webhookDeliveries.type, q.type) : undefined,
  )
  return pageOf(
    deps.secret,
    { list: listKey(`webhooks/${endpoint.id}/events`, { status: q.status, type: q.type }), query: q, id: webhookDeliveries.id },
    (ks) => deps.db.q.select().from(webhookDeliveries).where(and(where, ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toWebhookEvent,
  )
}

async function findEvent(deps: Deps, actor: Actor, id: string, eventId: string): Promise<DeliveryRow> {
  const endpoint = await findEndpoint(deps, actor, id)
  const [row] = await deps.db.q
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, eventId.toLowerCase()), eq(webhookDeliveries.endpointId, endpoint.id)))
  if (!row) throw notFound(`Event ${eventId} of webhook ${id}`)
  return row
}

function detail(row: DeliveryRow, attempts: (typeof webhookAttempts.$inferSelect)[]) {
  return { ...toWebhookEvent(row), payload: JSON.parse(row.payload), attempts: attempts.map(toAttempt) }
}

export async function getWebhookEvent(deps: Deps, actor: Actor, id: string, eventId: string) {
  const row = await findEvent(deps, actor, id, eventId)
  const attempts = await deps.db.q.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, row.id)).orderBy(asc(webhookAttempts.id))
  return detail(row, attempts)
}

/**
 * Delivers the event again, now, with the same id and body and a fresh retry
 * schedule; its attempts so far stay in the log. An event of a disabled endpoint
 * waits until the endpoint is enabled.
 */
export async function replayWebhookEvent(deps: Deps, actor: Actor, id: string, eventId: string) {
  const row = await findEvent(deps, actor, id, eventId)
  const now = iso(deps.clock.now())
  const patch = { state: 'pending' as const, retries: 0, nextAttemptAt: now, updatedAt: now }
  await deps.db.write((tx) => tx.update(webhookDeliveries).set(patch).where(eq(webhookDeliveries.id, row.id)))
  return toWebhookEvent({ ...row, ...patch })
}
