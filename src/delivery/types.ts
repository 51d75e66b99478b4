import type { deliveries, deliveryAttempts, domains, emailAttachments, emails } from '../db/tables'

export type EmailRow = typeof emails.$inferSelect
export type AttachmentRow = typeof emailAttachments.$inferSelect
export type DomainRow = typeof domains.$inferSelect
export type DeliveryRow = typeof deliveries.$inferSelect
export type DeliveryState = DeliveryRow['state']
export type AttemptOutcome = (typeof deliveryAttempts.$inferSelect)['outcome']
