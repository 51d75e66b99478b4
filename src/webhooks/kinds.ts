/** The kinds of event an endpoint can subscribe to: Resend's names, plus topic and suppression events. */
export const EMAIL_EVENT_KINDS = [
  'email.sent',
  'email.delivered',
  'email.delivery_delayed',
  'email.bounced',
  'email.complained',
  'email.opened',
  'email.clicked',
  'email.failed',
  'email.scheduled',
  'email.suppressed',
  'email.received',
  'email.canceled',
] as const

export const RESOURCE_EVENT_KINDS = [
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'domain.created',
  'domain.updated',
  'domain.deleted',
  'topic.created',
  'topic.updated',
  'topic.deleted',
  // Resend's SDK names: a suppression is added or removed.
  'suppression.added',
  'suppression.removed',
] as const

export const WEBHOOK_EVENT_KINDS = [...EMAIL_EVENT_KINDS, ...RESOURCE_EVENT_KINDS] as const
export type WebhookEventKind = (typeof WEBHOOK_EVENT_KINDS)[number]

const KNOWN = new Set<string>(WEBHOOK_EVENT_KINDS)
export const isWebhookEventKind = (s: string): s is WebhookEventKind => KNOWN.has(s)
