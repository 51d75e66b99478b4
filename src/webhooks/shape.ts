import type { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../db/tables'

export type EndpointRow = typeof webhookEndpoints.$inferSelect
export type DeliveryRow = typeof webhookDeliveries.$inferSelect
export type AttemptRow = typeof webhookAttempts.$inferSelect

/** The seed's webhook endpoint object, with Resend's `endpoint` and `status` beside `url` and `disabled`. Never the secret. */
export function toWebhook(row: EndpointRow) {
  return {
    object: 'webhook' as const,
    id: row.id,
    url: row.url,
    endpoint: row.url,
    events: row.events,
    disabled: row.disabled,
    status: row.disabled ? ('disabled' as const) : ('enabled' as const),
    disabled_reason: row.disabledReason,
    webhook_compat: row.webhookCompat,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

/** Resend's event log status: `success`, `failed` (schedule spent), `attempting` (failed, will retry) or `pending` (not tried yet). */
export function eventStatus(row: Pick<DeliveryRow, 'state' | 'attempts'>) {
  if (row.state === 'delivered') return 'success' as const
  if (row.state === 'failed') return 'failed' as const
  return row.attempts > 0 ? ('attempting' as const) : ('pending' as const)
}

export function toWebhookEvent(row: DeliveryRow) {
  return {
    object: 'webhook_event' as const,
    id: row.id,
    webhook_id: row.endpointId,
    type: row.type,
    created_at: row.createdAt,
    status: eventStatus(row),
    attempt_count: row.attempts,
    last_status_code: row.lastStatus,
    next_attempt_at: row.state === 'pending' ? row.nextAttemptAt : null,
    delivered_at: row.deliveredAt,
  }
}

export function toAttempt(row: AttemptRow) {
  return {
    id: row.id,
    sent_at: row.startedAt,
    http_status_code: row.status,
    response: row.response,
    duration_ms: row.durationMs,
    outcome: row.outcome,
  }
}
