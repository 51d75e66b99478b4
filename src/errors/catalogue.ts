/**
 * The one error catalogue. Code that fails names a code; status, wording, fix,
 * retry hint and the legacy-compatible (Resend) name all come from here, so they
 * cannot drift apart. The README table and the OpenAPI error replies are generated
 * from this object.
 */
export interface ErrorSpec {
  status: number
  message: string
  fix: string
  /** Seconds after which the same request may succeed; only where waiting cures it. */
  retryAfter?: number
  /** The name a Resend client reads (`name` in the envelope). */
  legacy: string
}

/** Names Resend's SDK knows; a code in this set is its own legacy name. */
const RESEND_NAMES = new Set([
  'invalid_idempotency_key', 'validation_error', 'missing_api_key', 'restricted_api_key', 'invalid_api_key',
  'not_found', 'method_not_allowed', 'invalid_attachment', 'invalid_from_address', 'invalid_parameter',
  'invalid_region', 'missing_required_field', 'monthly_quota_exceeded', 'daily_quota_exceeded',
  'rate_limit_exceeded', 'internal_server_error',
])

/** The seed's explicit aliases; `domain_not_verified` joins the validation group as the seed notes. */
const ALIASES: Record<string, string> = {
  idempotency_in_flight: 'concurrent_idempotent_requests',
  idempotency_payload_mismatch: 'invalid_idempotent_request',
  agent_budget_exceeded: 'monthly_quota_exceeded',
  plan_limit_reached: 'monthly_quota_exceeded',
  rate_ceiling_exceeded: 'rate_limit_exceeded',
  domain_not_verified: 'validation_error',
  invalid_parameter: 'validation_error',
}

type Entry = [status: number, message: string, fix: string, retryAfter?: number]

const ENTRIES = {
  // 400
  validation_error: [400, 'One or more fields in the request are wrong.', 'Correct the fields listed in `details` and send the request again.'],
  invalid_idempotency_key: [400, 'The Idempotency-Key header must be between 1 and 256 characters.', 'Send a key of 1 to 256 characters, for example a UUID, or leave the header out.'],
  invalid_cursor: [400, 'The paging cursor is stale or was not issued for this list.', 'Call the list again without `cursor`, `after` or `before` and page from the start.'],
  plan_not_purchasable: [400, 'That plan cannot be bought.', 'Choose one of the purchasable tiers: starter, pro or scale.'],
  payment_signature_invalid: [400, 'The payment provider signature did not verify.', 'Check that the webhook signing secret configured here matches the payment provider’s.'],
  support_upload_rejected: [400, 'This file cannot be attached to a support request.', 'Attach a screenshot (PNG, JPEG, GIF, WebP), a PDF, a CSV or a plain-text log.'],
  sign_in_check_required: [400, 'An extra sign-in check is due for this address: too many attempts failed.', 'Wait the seconds in `retry_after_seconds`, then sign in again with the right password or code.'],
  invalid_grant: [400, 'The authorization code or refresh token is invalid, expired, already used, or was issued to another client or redirect URI.', 'Start the authorization again (GET /oauth/authorize) with a new PKCE verifier, and exchange the code once.'],
  unsupported_grant_type: [400, 'This grant type is not supported.', 'Use `authorization_code` (with PKCE) or `refresh_token`.'],
  invalid_client_metadata: [400, 'The client registration is not acceptable.', 'Register a public client (`token_endpoint_auth_method: none`) for the `authorization_code` and `refresh_token` grants.'],
  invalid_redirect_uri: [400, 'The redirect URI is not acceptable or not registered for this client.', 'Use https, http on a loopback host or a private-use scheme, without a fragment, and exactly one of the URIs the client registered.'],
  // 401
  missing_api_key: [401, 'No API key was found in the Authorization header.', 'Send `Authorization: Bearer <API_KEY>` with a key from POST /api-keys or the console.'],
  session_required: [401, 'This route needs a signed-in console session; API keys cannot call it.', 'Sign in to the console and make the change there.'],
  mfa_required: [401, 'Two-factor authentication is not complete for this session.', 'Finish the two-factor step (POST /auth/mfa/verify) and try again.'],
  invalid_credentials: [401, 'The email address and password, or the two-factor code, do not match.', 'Check them and try again; after five failures a wait is due before the next attempt.'],
  invalid_client: [401, 'The OAuth client is unknown.', 'Register the client again with POST /oauth/register and use the client_id it returns.'],
  oauth_token_invalid: [401, 'The OAuth access token is unknown, expired or revoked.', 'Get a new access token from POST /oauth/token with the refresh token, or authorize again.'],
  // 402
  plan_required: [402, 'No plan is in force, so real email was not sent.', 'Start a trial or buy a plan; simulator sends keep working meanwhile.'],
  agent_budget_exceeded: [402, 'This API key has used its email budget for the current period.', 'Wait for the period to reset (GET /limits/keys/{id} shows when), or ask a person to raise the key’s budget.'],
  plan_limit_reached: [402, 'The plan’s included emails for this period are used up.', 'Wait for the next billing period or move to a larger plan.'],
  overage_cap_reached: [402, 'The overage cap set on this account is reached.', 'Raise the overage cap in billing settings or wait for the next period.'],
  // 403
  sending_domain_blocked: [403, 'Sending from this domain is blocked.', 'Send from another verified domain, or contact the operator to review the block.'],
  young_domain_held: [403, 'Mail from this newly registered domain is held for review.', 'Wait for the hold to clear or send from an established domain.'],
  domain_sending_disabled: [403, 'Sending is disabled for this domain.', 'Enable the sending capability on the domain (PATCH /domains/{id}) or use another domain.'],
  domain_not_verified: [403, 'The sending domain is not verified.', 'Publish the DNS records from GET /domains/{id} and run POST /domains/{id}/verify.'],
  onboarding_recipient_not_a_member: [403, 'The onboarding sender can only write to members of this account.', 'Send to an account member’s address, or verify a domain of your own.'],
  onboarding_sender_unavailable: [403, 'No onboarding sender is configured on this deployment.', 'Verify a domain of your own and send from it.'],
  account_suspended: [403, 'This account is suspended.', 'Contact the operator of this deployment.'],
  account_sandboxed: [403, 'This account is in the sandbox and may send only to its own verified domains.', 'Send to an address at one of your verified domains, or ask for the sandbox to be lifted.'],
  human_action_required: [403, 'This decision is reserved to a person and cannot be made with an API key.', 'Ask a person to make it in the console.'],
  csrf_origin_rejected: [403, 'A state-changing request with a session cookie came from another site.', 'Make the request from the console’s own origin.'],
  charge_not_this_account: [403, 'That charge belongs to another account.', 'Use a charge id of this account.'],
  invalid_api_key: [403, 'The API key is invalid, expired or revoked.', 'Use a current key; list keys with GET /api-keys or create one in the console.'],
  restricted_api_key: [403, 'This API key may only send email.', 'Use a full_access key for management routes.'],
  insufficient_role: [403, 'Your role does not allow this change.', 'Ask an owner or admin of the account to make it, or to change your role.'],
  invite_email_mismatch: [403, 'You are signed in with an address other than the invited one.', 'Sign in with the invited address and accept again.'],
  domain_scope_violation: [403, 'This API key may send only from its scoped domain.', 'Send from the key’s domain, or use a key scoped to this domain.'],
  dedicated_ip_assigned_by_us: [403, 'This dedicated IP assignment was pinned by the operator.', 'Ask the operator to change the assignment.'],
  approval_required: [403, 'This action waits for a person’s approval.', 'Ask a person to approve the pending agent action (GET /agent-actions) and check it again.'],
  staff_review_required: [403, 'This action needs a review by the operator’s staff.', 'Wait for the review or contact the operator.'],
  trust_paused: [403, 'Sending is paused by the trust system.', 'Read GET /trust/standing for the reason; a person may appeal with POST /trust/appeal.'],
  kill_switch_active: [403, 'This API key is paused by the kill switch.', 'A person signed in to the console must review and resume the key.'],
  sending_paused_everywhere: [403, 'Sending is paused for the whole account.', 'Read GET /trust/standing for the reason; a person may appeal with POST /trust/appeal.'],
  // 404
  billing_customer_missing: [404, 'There is no billing customer for this account yet.', 'Start a checkout (POST /billing/checkout) first.'],
  not_found: [404, 'The requested route or resource does not exist.', 'Check the path and the id; list the resources to find valid ids.'],
  session_expired: [404, 'The tool connection session has expired.', 'Reconnect and start a new session.'],
  support_ticket_not_found: [404, 'There is no such support request.', 'List your support requests with GET /support/requests.'],
  // 405
  method_not_allowed: [405, 'This method is not allowed on this path.', 'Use one of the methods in the Allow header.'],
  // 409
  domain_already_exists: [409, 'This domain is already on the account.', 'Use the existing domain (GET /domains).'],
  template_name_taken: [409, 'A template with this name already exists.', 'Choose another name or edit the existing template.'],
  template_alias_taken: [409, 'A template with this alias already exists.', 'Choose another alias or edit the existing template.'],
  template_in_use: [409, 'The template is used by a broadcast or automation.', 'Remove it from those broadcasts and automations first.'],
  segment_in_use: [409, 'The segment is used by a broadcast or automation.', 'Remove it from those broadcasts and automations first.'],
  contact_resubscribe_required: [409, 'The contact unsubscribed and must confirm before receiving mail again.', 'Use POST /contacts/{id}/resubscribe, which asks the contact to confirm.'],
  broadcast_status_conflict: [409, 'The broadcast is not in a state that allows this change.', 'Only drafts can be edited, deleted or sent, and only scheduled or sending broadcasts canceled; read GET /broadcasts/{id} for its status.'],
  email_still_scheduled: [409, 'The email is not in a state that allows this change.', 'Only scheduled emails can be changed or cancelled; read GET /emails/{id} for its state.'],
  domain_verified_elsewhere: [409, 'This domain is verified on another account.', 'Ask that account to remove it, or prove ownership again.'],
  return_path_subdomain_in_use: [409, 'The return-path subdomain is already used.', 'Choose another custom_return_path.'],
  overage_not_on_plan: [409, 'The current plan has no overage.', 'Move to a plan that offers overage.'],
  term_not_on_sale: [409, 'That billing term is not on sale.', 'Choose monthly or yearly.'],
  subscription_active: [409, 'A live subscription exists.', 'Change plans through the billing portal (POST /billing/portal).'],
  already_in_account: [409, 'This address already belongs to an account.', 'Sign in with it, or invite another address.'],
  idempotency_in_flight: [409, 'A request with this Idempotency-Key is still running.', 'Wait a few seconds and retry with the same key and body.', 5],
  idempotency_payload_mismatch: [409, 'This Idempotency-Key was used with a different request body.', 'Use a new key for a different request, or resend the original body.'],
  approval_expired: [409, 'The approval window for this action has passed.', 'Make the request again to open a new approval.'],
  agent_action_decided: [409, 'This agent action was already decided.', 'Read GET /agent-actions/{id} for its decision; a new request opens a new action.'],
  support_closed: [409, 'This support request is closed.', 'Reopen it (within 14 days of resolution) or open a new request.'],
  support_reopen_expired: [409, 'The 14-day reopen window has passed.', 'Open a new support request and mention the old one.'],
  support_merge_conflict: [409, 'The requests belong to different accounts.', 'Merge only requests of the same account.'],
  support_reply_too_soon: [409, 'A reply was sent moments ago.', 'Wait a moment before sending another reply.'],
  trial_already_used: [409, 'The 14-day trial was already used on this account.', 'Buy a plan with POST /billing/checkout.'],
  plan_already_active: [409, 'A plan is already in force.', 'Manage it through the billing portal.'],
  dedicated_ip_taken: [409, 'This address is already registered as a dedicated IP.', 'Use the existing one (GET /dedicated-ips), or register another address of this host.'],
  topic_name_taken: [409, 'A topic with this name already exists.', 'Choose another name or update the existing topic.'],
  event_name_taken: [409, 'An event with this name already exists.', 'Choose another name, or update the existing event (PATCH /events/{id}).'],
  event_in_use: [409, 'An enabled automation triggers on or waits for this event.', 'Disable those automations (POST /automations/{id}/disable) or change their steps first.'],
  contact_already_exists: [409, 'A contact with this address already exists.', 'Update the existing contact (PATCH /contacts/{email}) instead.'],
  contact_property_key_taken: [409, 'A contact property with this key already exists.', 'Use the existing property (GET /contact-properties) or choose another key.'],
  portal_change_unavailable: [409, 'This change cannot be made through the billing portal now.', 'Wait for the pending change to finish, or contact the operator.'],
  // 410
  support_attachment_expired: [410, 'The attachment is older than 30 days and was removed.', 'Attach the file again if it is still needed.'],
  // 413
  payload_too_large: [413, 'The request body is larger than this operation accepts.', 'Send a smaller body: 1 MB for most routes, 50 MB for sends and template, broadcast and automation edits.'],
  support_upload_too_large: [413, 'The file or message is too large.', 'Files up to 10 MB each; at most 5 files and 25 MB per message.'],
  // 415
  unsupported_media_type: [415, 'The request body must be JSON.', 'Send the body as JSON with `Content-Type: application/json`.'],
  // 422
  missing_required_field: [422, 'The request body is missing one or more required fields.', 'Add the fields named in `details` (a send needs from, to and subject).'],
  invalid_from_address: [422, 'The `from` field is not a valid sender.', 'Use `email@example.com` or `Name <email@example.com>`.'],
  invalid_parameter: [422, 'A parameter has an invalid value.', 'Correct the parameter named in the message.'],
  invalid_attachment: [422, 'An attachment needs either base64 `content` or a `path`.', 'Give each attachment `content` (base64) or `path` (a URL).'],
  invalid_region: [422, 'Region must be `us` or `eu`.', 'Send `region: "us"` or `region: "eu"`, or leave it out for `us`.'],
  tracking_subdomain_unverified: [422, 'Click and open tracking need a verified tracking subdomain; links were sent as written.', 'Publish the tracking CNAME from GET /domains/{id} and verify the domain.'],
  tracking_subdomain_cannot_be_removed: [422, 'The tracking subdomain can be changed but not removed.', 'Set another tracking_subdomain instead of removing it.'],
  domain_field_immutable: [422, 'Only click_tracking, open_tracking and tracking_subdomain can change on a domain.', 'Delete the domain and add it again to change its name, region or return-path.'],
  open_tracking_on_transactional: [422, 'Open tracking is refused on transactional mail.', 'Turn open tracking off for this send, or send it as a broadcast.'],
  header_replaced: [422, 'A header you set is one this service sets itself.', 'Leave out the header named in the message; it is set for you.'],
  html_clipped_by_inbox_provider: [422, 'The HTML is larger than inbox providers show before clipping it.', 'Keep the HTML under 102 KB, for example by moving content to a web page.'],
  link_domain_listed: [422, 'A link in the message points at a listed domain.', 'Remove or replace the link named in the message.'],
  domain_blocklisted: [422, 'The domain is on a blocklist.', 'Use another domain, or have it removed from the blocklist first.'],
  mailbox_provider_domain: [422, 'Mailbox provider domains such as gmail.com cannot be added as sending domains.', 'Add a domain you own.'],
  onboarding_shape_refused: [422, 'The onboarding sender only sends simple messages.', 'Send plain text or simple HTML without attachments, or verify your own domain.'],
  dkim_key_mismatch: [422, 'The published DKIM key does not match this domain’s key.', 'Publish the DKIM record exactly as GET /domains/{id} shows it.'],
  domain_check_window_expired: [422, 'The verification window for this domain has passed.', 'Publish the records, then run POST /domains/{id}/verify with {"reopen": true} to open a new window.'],
  spf_conflict: [422, 'The domain publishes more than one SPF record.', 'Merge them into one `v=spf1` TXT record.'],
  spf_lookup_limit: [422, 'The SPF record needs more than 10 DNS lookups.', 'Flatten includes or remove unused ones so that at most 10 lookups remain.'],
  review_sandbox_recipient_only: [422, 'While under review the account may only send to its review recipient.', 'Send to the review address shown in GET /trust/standing.'],
  suppressed_recipient: [422, 'The recipient is on the suppression list.', 'A fixed hard bounce can be cleared with DELETE /suppressions/{id}; an unsubscribe or complaint cannot.'],
  content_refused: [422, 'The message content was refused by the content rules.', 'Change the content named in the message; POST /emails/lint shows every finding.'],
  recipient_blocklisted: [422, 'The recipient address is on a blocklist.', 'Remove the recipient from the send.'],
  last_owner_required: [422, 'An account must keep at least one owner.', 'Make another member owner first.'],
  seat_limit_reached: [422, 'No seat is left on the plan.', 'Remove a member or move to a plan with more seats.'],
  invite_not_valid: [422, 'The invitation expired, was cancelled or was used.', 'Ask for a new invitation.'],
  key_budget_exceeds_plan: [422, 'A key budget must be a whole number at or below the plan’s monthly inclusion.', 'Set budget_per_period to a whole number no greater than the plan’s monthly inclusion.'],
  domain_limit_reached: [422, 'No sending domain is left on the plan.', 'Delete an unused domain or move to a larger plan.'],
  webhook_endpoint_limit_reached: [422, 'No webhook endpoint is left on the plan.', 'Delete an unused endpoint or move to a larger plan.'],
  contact_property_limit_reached: [422, 'The account already defines the most contact properties it may.', 'Delete a property that is no longer used (DELETE /contact-properties/{id}) before defining another.'],
  domain_not_claimable: [422, 'This domain cannot be claimed.', 'Check the domain name; claim only domains you control.'],
  template_not_published: [422, 'The template has no published version, so nothing can be sent with it yet.', 'Publish it with POST /templates/{id}/publish; POST /templates/{id}/render previews the draft meanwhile.'],
  template_variable_missing: [422, 'The template needs variables the request did not give.', 'Give a value for each variable named in the message, or declare a fallback_value for it (PATCH /templates/{id}, then publish).'],
  // 429
  onboarding_daily_cap_reached: [429, 'The onboarding sender’s daily cap is reached.', 'Wait for the UTC day change or verify your own domain.'],
  trust_throttled: [429, 'Volume is capped by the trust ladder.', 'Read GET /trust/standing for the cap and what raises it.'],
  loop_detected: [429, 'The loop guard refused this send: the same message keeps going to the same recipient, or it answers an automatic reply.', 'Stop the agent’s loop; change the content, wait for the window to pass, or set loop_guard to hold to ask a person.'],
  invite_limit_reached: [429, 'Too many invitations were sent.', 'Wait a while before inviting more people.'],
  rate_ceiling_exceeded: [429, 'This API key’s per-minute rate ceiling is used up.', 'Wait for the window to reset (see Retry-After) or slow down.', 60],
  daily_quota_exceeded: [429, 'The account’s daily sending quota is reached.', 'Wait for the UTC day change.'],
  monthly_quota_exceeded: [429, 'The account’s monthly sending quota is reached.', 'Wait for the next cycle.'],
  rate_limit_exceeded: [429, 'Too many requests.', 'Wait for the window to reset (see Retry-After) and slow down.', 60],
  support_rate_limited: [429, 'Too many support requests or replies in the last hour.', 'Wait an hour before opening or replying again.', 3600],
  daily_limit_reached: [429, 'The daily volume limit of this sending address is reached.', 'Wait for the UTC day change; the warm-up schedule raises the limit day by day.'],
  // 500
  internal_server_error: [500, 'An unexpected error occurred.', 'Retry once after a short pause with the same Idempotency-Key; if it fails again, stop and report the x-request-id.'],
  // 503
  service_unavailable: [503, 'A dependency failed for a moment.', 'Retry after the number of seconds in Retry-After.', 30],
  billing_not_configured: [503, 'Billing is not set up on this deployment.', 'Ask the operator to configure a payment provider, or use the deployment without billing.'],
  rate_limiter_unavailable: [503, 'The rate limiter cannot be reached; nothing was sent or changed.', 'Retry after a few seconds.', 5],
  dns_unreachable: [503, 'The DNS servers did not answer.', 'Retry after a short while; check MAILROOM_DNS_SERVERS if it persists.', 30],
  support_draft_unavailable: [503, 'The support draft helper is not available on this deployment.', 'Write the support request yourself.'],
} satisfies Record<string, Entry>

export type ErrorCode = keyof typeof ENTRIES

export const CATALOGUE: Record<ErrorCode, ErrorSpec> = Object.fromEntries(
  Object.entries(ENTRIES).map(([code, [status, message, fix, retryAfter]]) => [
    code,
    {
      status,
      message,
      fix,
      ...(retryAfter ? { retryAfter } : {}),
      legacy: ALIASES[code] ?? (RESEND_NAMES.has(code) ? code : 'application_error'),
    },
  ]),
) as Record<ErrorCode, ErrorSpec>

export const ERROR_CODES = Object.keys(CATALOGUE) as ErrorCode[]
