/** What a send can be refused for beyond the platform's own codes; replies and other send paths share it. */
export const SEND_ERRORS = [
  'missing_required_field',
  'invalid_from_address',
  'invalid_parameter',
  'invalid_attachment',
  'header_replaced',
  'open_tracking_on_transactional',
  'content_refused',
  'link_domain_listed',
  'recipient_blocklisted',
  'suppressed_recipient',
  'domain_scope_violation',
  'domain_not_verified',
  'domain_sending_disabled',
  'agent_budget_exceeded',
  'daily_quota_exceeded',
  'monthly_quota_exceeded',
] as const

/** What a send that names a template can be refused for beyond SEND_ERRORS. */
export const TEMPLATE_SEND_ERRORS = ['template_not_published', 'template_variable_missing'] as const
