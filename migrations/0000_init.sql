CREATE TABLE `accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`require_mfa` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `settings` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `api_key_budget_usage` (
	`key_id` text NOT NULL,
	`period_start` text NOT NULL,
	`used` integer NOT NULL,
	PRIMARY KEY(`key_id`, `period_start`)
);
--> statement-breakpoint
CREATE TABLE `api_key_usage` (
	`key_id` text NOT NULL,
	`day` text NOT NULL,
	`requests` integer NOT NULL,
	PRIMARY KEY(`key_id`, `day`)
);
--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`permission` text NOT NULL,
	`domain_scope` text,
	`scopes` text NOT NULL,
	`expires_at` text,
	`token_hash` text NOT NULL,
	`token_prefix` text NOT NULL,
	`previous_token_hash` text,
	`previous_key_expires_at` text,
	`rotated_at` text,
	`system` integer NOT NULL,
	`budget_per_period` integer,
	`period` text NOT NULL,
	`rate_ceiling_per_minute` integer,
	`loop_guard` text NOT NULL,
	`paused_at` text,
	`paused_reason` text,
	`created_by_key_id` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`last_used_at` text,
	`revoked_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_token_hash` ON `api_keys` (`token_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_previous_token_hash` ON `api_keys` (`previous_token_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_account` ON `api_keys` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`account_id` text NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`state` text NOT NULL,
	`lease_until` text NOT NULL,
	`instance_id` text,
	`status_code` integer,
	`response_body` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`account_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_expires` ON `idempotency_keys` (`expires_at`);--> statement-breakpoint
CREATE TABLE `instances` (
	`id` text PRIMARY KEY NOT NULL,
	`place` text,
	`pid` integer NOT NULL,
	`started_at` text NOT NULL,
	`heartbeat_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `contact_topics` (
	`contact_id` text NOT NULL,
	`topic_id` text NOT NULL,
	`account_id` text NOT NULL,
	`subscribed` integer NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`contact_id`, `topic_id`)
);
--> statement-breakpoint
CREATE INDEX `contact_topics_topic` ON `contact_topics` (`topic_id`);--> statement-breakpoint
CREATE TABLE `topics` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`default_subscription` text NOT NULL,
	`visibility` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `topics_account_name` ON `topics` (`account_id`,`name`);--> statement-breakpoint
CREATE INDEX `topics_account` ON `topics` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `contact_imports` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`status` text NOT NULL,
	`on_conflict` text NOT NULL,
	`counts` text NOT NULL,
	`rejected` text NOT NULL,
	`ignored_columns` text NOT NULL,
	`created_at` text NOT NULL,
	`completed_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contact_imports_account` ON `contact_imports` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `contact_resubscribes` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`email` text NOT NULL,
	`status` text NOT NULL,
	`expires_at` text NOT NULL,
	`created_at` text NOT NULL,
	`confirmed_at` text
);
--> statement-breakpoint
CREATE INDEX `contact_resubscribes_contact` ON `contact_resubscribes` (`contact_id`,`status`);--> statement-breakpoint
CREATE TABLE `contacts` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`email` text NOT NULL,
	`first_name` text,
	`last_name` text,
	`unsubscribed` integer NOT NULL,
	`properties` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `contacts_account_email` ON `contacts` (`account_id`,`email`);--> statement-breakpoint
CREATE INDEX `contacts_account` ON `contacts` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `domains` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`region` text NOT NULL,
	`status` text NOT NULL,
	`custom_return_path` text NOT NULL,
	`click_tracking` integer NOT NULL,
	`open_tracking` integer NOT NULL,
	`tracking_subdomain` text,
	`tls` text NOT NULL,
	`sending_enabled` integer NOT NULL,
	`receiving_enabled` integer NOT NULL,
	`dkim_selector` text NOT NULL,
	`dkim_private_key` text NOT NULL,
	`dkim_public_key` text NOT NULL,
	`dkim_next_selector` text,
	`dkim_next_private_key` text,
	`dkim_next_public_key` text,
	`records` text NOT NULL,
	`verified_at` text,
	`last_checked_at` text,
	`check_window_started_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `domains_account_name` ON `domains` (`account_id`,`name`);--> statement-breakpoint
CREATE INDEX `domains_name` ON `domains` (`name`);--> statement-breakpoint
CREATE INDEX `domains_account` ON `domains` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `account_usage` (
	`account_id` text NOT NULL,
	`period` text NOT NULL,
	`sent` integer NOT NULL,
	PRIMARY KEY(`account_id`, `period`)
);
--> statement-breakpoint
CREATE TABLE `deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`email_id` text NOT NULL,
	`account_id` text NOT NULL,
	`recipient` text NOT NULL,
	`recipient_domain` text NOT NULL,
	`kind` text NOT NULL,
	`state` text NOT NULL,
	`priority` integer NOT NULL,
	`next_attempt_at` text NOT NULL,
	`attempts` integer NOT NULL,
	`lease_owner` text,
	`lease_until` text,
	`last_code` integer,
	`last_response` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deliveries_due` ON `deliveries` (`state`,`priority`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `deliveries_email` ON `deliveries` (`email_id`);--> statement-breakpoint
CREATE INDEX `deliveries_account_recipient` ON `deliveries` (`account_id`,`recipient`,`email_id`);--> statement-breakpoint
CREATE INDEX `deliveries_created` ON `deliveries` (`created_at`);--> statement-breakpoint
CREATE TABLE `delivery_attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`delivery_id` text NOT NULL,
	`email_id` text NOT NULL,
	`started_at` text NOT NULL,
	`duration_ms` integer NOT NULL,
	`host` text,
	`smtp_code` integer,
	`enhanced_code` text,
	`response` text,
	`outcome` text NOT NULL,
	`worker` text
);
--> statement-breakpoint
CREATE INDEX `delivery_attempts_email` ON `delivery_attempts` (`email_id`,`started_at`);--> statement-breakpoint
CREATE TABLE `email_attachments` (
	`id` text PRIMARY KEY NOT NULL,
	`email_id` text NOT NULL,
	`account_id` text NOT NULL,
	`filename` text NOT NULL,
	`content_type` text NOT NULL,
	`content_id` text,
	`disposition` text NOT NULL,
	`size` integer NOT NULL,
	`content` blob NOT NULL
);
--> statement-breakpoint
CREATE INDEX `email_attachments_email` ON `email_attachments` (`email_id`);--> statement-breakpoint
CREATE TABLE `email_events` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`email_id` text NOT NULL,
	`type` text NOT NULL,
	`recipient` text,
	`data` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `email_events_email` ON `email_events` (`email_id`,`id`);--> statement-breakpoint
CREATE INDEX `email_events_account_type` ON `email_events` (`account_id`,`type`,`created_at`);--> statement-breakpoint
CREATE INDEX `email_events_recipient` ON `email_events` (`account_id`,`recipient`,`type`,`created_at`);--> statement-breakpoint
CREATE INDEX `email_events_type_time` ON `email_events` (`type`,`created_at`);--> statement-breakpoint
CREATE TABLE `email_tags` (
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`value` text NOT NULL,
	`email_id` text NOT NULL,
	PRIMARY KEY(`account_id`, `name`, `value`, `email_id`)
);
--> statement-breakpoint
CREATE TABLE `emails` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`api_key_id` text,
	`domain_id` text,
	`from` text NOT NULL,
	`from_email` text NOT NULL,
	`from_domain` text GENERATED ALWAYS AS (substr(from_email, instr(from_email, '@') + 1)) VIRTUAL,
	`to` text NOT NULL,
	`cc` text NOT NULL,
	`bcc` text NOT NULL,
	`reply_to` text NOT NULL,
	`subject` text NOT NULL,
	`html` text,
	`text` text,
	`headers` text NOT NULL,
	`tags` text NOT NULL,
	`topic_id` text,
	`template_id` text,
	`broadcast_id` text,
	`message_id` text NOT NULL,
	`in_reply_to` text,
	`references` text,
	`priority` text NOT NULL,
	`simulator` integer NOT NULL,
	`open_tracking` integer NOT NULL,
	`click_tracking` integer NOT NULL,
	`scheduled_at` text,
	`last_event` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `emails_account` ON `emails` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `emails_account_event` ON `emails` (`account_id`,`last_event`,`id`);--> statement-breakpoint
CREATE INDEX `emails_account_from` ON `emails` (`account_id`,`from_email`,`id`);--> statement-breakpoint
CREATE INDEX `emails_account_from_domain` ON `emails` (`account_id`,`from_domain`,`id`);--> statement-breakpoint
CREATE INDEX `emails_message_id` ON `emails` (`message_id`);--> statement-breakpoint
CREATE INDEX `emails_broadcast` ON `emails` (`broadcast_id`,`id`);--> statement-breakpoint
CREATE TABLE `suppressions` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`email` text NOT NULL,
	`reason` text NOT NULL,
	`source_email_id` text,
	`detail` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `suppressions_account_email` ON `suppressions` (`account_id`,`email`);--> statement-breakpoint
CREATE TABLE `inbound_attachments` (
	`id` text PRIMARY KEY NOT NULL,
	`email_id` text NOT NULL,
	`account_id` text NOT NULL,
	`filename` text NOT NULL,
	`content_type` text NOT NULL,
	`content_id` text,
	`disposition` text NOT NULL,
	`size` integer NOT NULL,
	`content` blob NOT NULL
);
--> statement-breakpoint
CREATE INDEX `inbound_attachments_email` ON `inbound_attachments` (`email_id`);--> statement-breakpoint
CREATE TABLE `inbound_emails` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`raw_id` text NOT NULL,
	`domain_id` text NOT NULL,
	`thread_id` text NOT NULL,
	`from` text NOT NULL,
	`from_email` text NOT NULL,
	`to` text NOT NULL,
	`cc` text NOT NULL,
	`bcc` text NOT NULL,
	`reply_to` text NOT NULL,
	`received_for` text NOT NULL,
	`subject` text NOT NULL,
	`html` text,
	`text` text,
	`headers` text NOT NULL,
	`message_id` text NOT NULL,
	`in_reply_to` text,
	`references` text NOT NULL,
	`auth` text NOT NULL,
	`size` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `inbound_emails_account` ON `inbound_emails` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `inbound_emails_thread` ON `inbound_emails` (`thread_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `inbound_emails_raw_account` ON `inbound_emails` (`raw_id`,`account_id`);--> statement-breakpoint
CREATE TABLE `inbound_raw` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`state` text NOT NULL,
	`remote_address` text NOT NULL,
	`helo` text,
	`mail_from` text,
	`rcpt_to` text NOT NULL,
	`size` integer NOT NULL,
	`raw` blob NOT NULL,
	`detail` text,
	`received_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `inbound_raw_state` ON `inbound_raw` (`state`);--> statement-breakpoint
CREATE TABLE `thread_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`thread_id` text NOT NULL,
	`message_id` text NOT NULL,
	`direction` text NOT NULL,
	`email_id` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `thread_messages_account_message` ON `thread_messages` (`account_id`,`message_id`,`email_id`);--> statement-breakpoint
CREATE INDEX `thread_messages_thread` ON `thread_messages` (`thread_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `threads` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`subject` text NOT NULL,
	`last_message_at` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `threads_account` ON `threads` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `audit_entries` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`actor_kind` text NOT NULL,
	`actor_key_id` text,
	`actor_person_id` text,
	`actor_session_id` text,
	`resource` text NOT NULL,
	`resource_id` text NOT NULL,
	`action` text NOT NULL,
	`before` text,
	`after` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_entries_account` ON `audit_entries` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_entries_resource` ON `audit_entries` (`account_id`,`resource`,`resource_id`,`id`);--> statement-breakpoint
CREATE TABLE `request_logs` (
	`id` text NOT NULL,
	`account_id` text NOT NULL,
	`key_id` text,
	`method` text NOT NULL,
	`path` text NOT NULL,
	`query` text,
	`status` integer NOT NULL,
	`error_code` text,
	`duration_ms` real NOT NULL,
	`user_agent` text,
	`request_headers` text NOT NULL,
	`request_body` text,
	`request_body_truncated` integer NOT NULL,
	`response_body` text,
	`response_body_truncated` integer NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`account_id`, `id`)
);
--> statement-breakpoint
CREATE TABLE `event_definitions` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`schema` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `event_definitions_account_name` ON `event_definitions` (`account_id`,`name`);--> statement-breakpoint
CREATE INDEX `event_definitions_account` ON `event_definitions` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `event_occurrences` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`event_id` text NOT NULL,
	`name` text NOT NULL,
	`contact_id` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `event_occurrences_contact` ON `event_occurrences` (`account_id`,`contact_id`,`name`,`created_at`);--> statement-breakpoint
CREATE INDEX `event_occurrences_event` ON `event_occurrences` (`event_id`);--> statement-breakpoint
CREATE TABLE `webhook_attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`delivery_id` text NOT NULL,
	`endpoint_id` text NOT NULL,
	`started_at` text NOT NULL,
	`duration_ms` integer NOT NULL,
	`status` integer,
	`response` text NOT NULL,
	`outcome` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_attempts_delivery` ON `webhook_attempts` (`delivery_id`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_attempts_endpoint` ON `webhook_attempts` (`endpoint_id`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`endpoint_id` text NOT NULL,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`order_key` text,
	`state` text NOT NULL,
	`retries` integer NOT NULL,
	`attempts` integer NOT NULL,
	`next_attempt_at` text NOT NULL,
	`lease_owner` text,
	`lease_until` text,
	`last_status` integer,
	`delivered_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due` ON `webhook_deliveries` (`endpoint_id`,`next_attempt_at`,`id`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `webhook_deliveries_order` ON `webhook_deliveries` (`endpoint_id`,`order_key`,`id`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint` ON `webhook_deliveries` (`endpoint_id`,`id`);--> statement-breakpoint
CREATE TABLE `webhook_endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`disabled` integer NOT NULL,
	`disabled_reason` text,
	`webhook_compat` integer NOT NULL,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_secret_expires_at` text,
	`failing_since` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_endpoints_account` ON `webhook_endpoints` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `template_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`template_id` text NOT NULL,
	`account_id` text NOT NULL,
	`from` text,
	`subject` text,
	`reply_to` text NOT NULL,
	`html` text NOT NULL,
	`text` text,
	`variables` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `template_versions_template` ON `template_versions` (`template_id`,`id`);--> statement-breakpoint
CREATE TABLE `templates` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`alias` text,
	`from` text,
	`subject` text,
	`reply_to` text NOT NULL,
	`html` text NOT NULL,
	`text` text,
	`variables` text NOT NULL,
	`published_version_id` text,
	`published_at` text,
	`unpublished_changes` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `templates_account_name` ON `templates` (`account_id`,`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `templates_account_alias` ON `templates` (`account_id`,`alias`);--> statement-breakpoint
CREATE INDEX `templates_account` ON `templates` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `segment_contacts` (
	`segment_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`account_id` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`segment_id`, `contact_id`)
);
--> statement-breakpoint
CREATE INDEX `segment_contacts_contact` ON `segment_contacts` (`contact_id`);--> statement-breakpoint
CREATE TABLE `segments` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`match` text DEFAULT 'all' NOT NULL,
	`rules` text DEFAULT '[]' NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `segments_account` ON `segments` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `contact_properties` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`key` text NOT NULL,
	`type` text NOT NULL,
	`fallback_value` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `contact_properties_account_key` ON `contact_properties` (`account_id`,`key`);--> statement-breakpoint
CREATE INDEX `contact_properties_account` ON `contact_properties` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `people` (
	`id` text PRIMARY KEY NOT NULL,
	`email` text NOT NULL,
	`name` text,
	`password_hash` text NOT NULL,
	`totp_secret` text,
	`totp_pending_secret` text,
	`totp_last_counter` integer,
	`mfa_enabled_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `people_email` ON `people` (`email`);--> statement-breakpoint
CREATE TABLE `recovery_codes` (
	`id` text PRIMARY KEY NOT NULL,
	`person_id` text NOT NULL,
	`code_hash` text NOT NULL,
	`used_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `recovery_codes_person` ON `recovery_codes` (`person_id`);--> statement-breakpoint
CREATE TABLE `invites` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`email` text NOT NULL,
	`role` text NOT NULL,
	`token_hash` text NOT NULL,
	`status` text NOT NULL,
	`invited_by` text,
	`expires_at` text NOT NULL,
	`accepted_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `invites_token_hash` ON `invites` (`token_hash`);--> statement-breakpoint
CREATE INDEX `invites_account` ON `invites` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `invites_account_email` ON `invites` (`account_id`,`email`);--> statement-breakpoint
CREATE TABLE `memberships` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`person_id` text NOT NULL,
	`role` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `memberships_account_person` ON `memberships` (`account_id`,`person_id`);--> statement-breakpoint
CREATE INDEX `memberships_person` ON `memberships` (`person_id`);--> statement-breakpoint
CREATE INDEX `memberships_account` ON `memberships` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `console_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`person_id` text NOT NULL,
	`account_id` text NOT NULL,
	`mfa_verified_at` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `console_sessions_token_hash` ON `console_sessions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `console_sessions_person` ON `console_sessions` (`person_id`);--> statement-breakpoint
CREATE INDEX `console_sessions_expires` ON `console_sessions` (`expires_at`);--> statement-breakpoint
CREATE TABLE `metric_counts` (
	`id` integer PRIMARY KEY NOT NULL,
	`received` integer DEFAULT 0 NOT NULL,
	`sent` integer DEFAULT 0 NOT NULL,
	`delivered` integer DEFAULT 0 NOT NULL,
	`delivery_delayed` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`suppressed` integer DEFAULT 0 NOT NULL,
	`bounced` integer DEFAULT 0 NOT NULL,
	`bounced_transient` integer DEFAULT 0 NOT NULL,
	`bounced_permanent` integer DEFAULT 0 NOT NULL,
	`bounced_undetermined` integer DEFAULT 0 NOT NULL,
	`opened` integer DEFAULT 0 NOT NULL,
	`unique_opened` integer DEFAULT 0 NOT NULL,
	`clicked` integer DEFAULT 0 NOT NULL,
	`unique_clicked` integer DEFAULT 0 NOT NULL,
	`complained` integer DEFAULT 0 NOT NULL,
	`unsubscribed` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `metric_series` (
	`id` integer PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`level` integer NOT NULL,
	`simulator` integer NOT NULL,
	`domain` text NOT NULL,
	`domain_id` text NOT NULL,
	`api_key_id` text NOT NULL,
	`broadcast_id` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `metric_series_key` ON `metric_series` (`account_id`,`level`,`simulator`,`domain`,`domain_id`,`api_key_id`,`broadcast_id`);--> statement-breakpoint
CREATE TABLE `automation_refs` (
	`version_id` text NOT NULL,
	`automation_id` text NOT NULL,
	`account_id` text NOT NULL,
	`kind` text NOT NULL,
	`ref` text NOT NULL,
	PRIMARY KEY(`version_id`, `kind`, `ref`)
);
--> statement-breakpoint
CREATE INDEX `automation_refs_ref` ON `automation_refs` (`account_id`,`kind`,`ref`);--> statement-breakpoint
CREATE TABLE `automation_run_steps` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`account_id` text NOT NULL,
	`step_key` text NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`output` text,
	`error` text,
	`started_at` text NOT NULL,
	`completed_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `automation_run_steps_run` ON `automation_run_steps` (`run_id`,`id`);--> statement-breakpoint
CREATE TABLE `automation_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`automation_id` text NOT NULL,
	`version_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`status` text NOT NULL,
	`trigger_event` text NOT NULL,
	`trigger_payload` text NOT NULL,
	`trigger_signal_id` integer NOT NULL,
	`wait_events` text NOT NULL,
	`cursor` text,
	`step_seq` integer NOT NULL,
	`step_log_id` text,
	`waiting_for` text,
	`wait_after` integer,
	`deadline` text,
	`wake_at` text,
	`lease_owner` text,
	`lease_until` text,
	`started_at` text NOT NULL,
	`completed_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `automation_runs_automation` ON `automation_runs` (`automation_id`,`id`);--> statement-breakpoint
CREATE INDEX `automation_runs_due` ON `automation_runs` (`status`,`wake_at`);--> statement-breakpoint
CREATE INDEX `automation_runs_waiting` ON `automation_runs` (`account_id`,`contact_id`,`waiting_for`);--> statement-breakpoint
CREATE TABLE `automation_signals` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`name` text NOT NULL,
	`payload` text NOT NULL,
	`occurrence_id` text,
	`created_at` text NOT NULL,
	`processed_at` text
);
--> statement-breakpoint
CREATE INDEX `automation_signals_pending` ON `automation_signals` (`processed_at`,`id`);--> statement-breakpoint
CREATE INDEX `automation_signals_contact` ON `automation_signals` (`account_id`,`contact_id`,`name`,`id`);--> statement-breakpoint
CREATE TABLE `automation_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`automation_id` text NOT NULL,
	`account_id` text NOT NULL,
	`version` integer NOT NULL,
	`name` text NOT NULL,
	`steps` text NOT NULL,
	`connections` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `automation_versions_automation` ON `automation_versions` (`automation_id`,`id`);--> statement-breakpoint
CREATE TABLE `automations` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`enabled_at` text,
	`version_id` text NOT NULL,
	`version` integer NOT NULL,
	`trigger_event` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `automations_account` ON `automations` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `automations_trigger` ON `automations` (`account_id`,`trigger_event`,`status`);--> statement-breakpoint
CREATE TABLE `broadcasts` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text,
	`segment_id` text NOT NULL,
	`topic_id` text,
	`template_id` text,
	`template_variables` text,
	`from` text NOT NULL,
	`subject` text NOT NULL,
	`reply_to` text NOT NULL,
	`preview_text` text,
	`html` text,
	`text` text,
	`status` text NOT NULL,
	`scheduled_at` text,
	`started_at` text,
	`sent_at` text,
	`canceled_at` text,
	`api_key_id` text,
	`domain_id` text,
	`recipient_count` integer,
	`enqueued` integer NOT NULL,
	`canceled_count` integer NOT NULL,
	`fanout_cursor` text,
	`lease_owner` text,
	`lease_until` text,
	`error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `broadcasts_account` ON `broadcasts` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `broadcasts_status` ON `broadcasts` (`status`,`scheduled_at`);--> statement-breakpoint
CREATE INDEX `broadcasts_segment` ON `broadcasts` (`account_id`,`segment_id`);--> statement-breakpoint
CREATE INDEX `broadcasts_template` ON `broadcasts` (`account_id`,`template_id`);--> statement-breakpoint
CREATE TABLE `agent_actions` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`key_id` text NOT NULL,
	`kind` text NOT NULL,
	`reason` text NOT NULL,
	`detail` text NOT NULL,
	`request` text NOT NULL,
	`request_hash` text NOT NULL,
	`status` text NOT NULL,
	`result` text,
	`decided_by` text,
	`decided_at` text,
	`expires_at` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `agent_actions_account` ON `agent_actions` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `agent_actions_pending` ON `agent_actions` (`key_id`,`request_hash`,`status`);--> statement-breakpoint
CREATE INDEX `agent_actions_expiry` ON `agent_actions` (`status`,`expires_at`);--> statement-breakpoint
CREATE TABLE `mcp_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`principal` text NOT NULL,
	`client_name` text,
	`protocol_version` text NOT NULL,
	`created_at` text NOT NULL,
	`last_used_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `oauth_clients` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`redirect_uris` text NOT NULL,
	`client_uri` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `oauth_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`grant_id` text NOT NULL,
	`client_id` text NOT NULL,
	`redirect_uri` text NOT NULL,
	`code_challenge` text NOT NULL,
	`expires_at` text NOT NULL,
	`used_at` text
);
--> statement-breakpoint
CREATE TABLE `oauth_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`client_id` text NOT NULL,
	`key_id` text NOT NULL,
	`person_id` text NOT NULL,
	`permission` text NOT NULL,
	`created_at` text NOT NULL,
	`revoked_at` text
);
--> statement-breakpoint
CREATE INDEX `oauth_grants_account` ON `oauth_grants` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `oauth_grants_key` ON `oauth_grants` (`key_id`);--> statement-breakpoint
CREATE TABLE `oauth_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`grant_id` text NOT NULL,
	`kind` text NOT NULL,
	`expires_at` text NOT NULL,
	`used_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `oauth_tokens_grant` ON `oauth_tokens` (`grant_id`);--> statement-breakpoint
CREATE TABLE `support_attachments` (
	`id` text PRIMARY KEY NOT NULL,
	`request_id` text NOT NULL,
	`message_id` text NOT NULL,
	`account_id` text NOT NULL,
	`filename` text NOT NULL,
	`content_type` text NOT NULL,
	`size` integer NOT NULL,
	`content` blob,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`purged_at` text
);
--> statement-breakpoint
CREATE INDEX `support_attachments_request` ON `support_attachments` (`request_id`,`id`);--> statement-breakpoint
CREATE INDEX `support_attachments_expiry` ON `support_attachments` (`purged_at`,`expires_at`);--> statement-breakpoint
CREATE TABLE `support_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`request_id` text NOT NULL,
	`account_id` text NOT NULL,
	`kind` text NOT NULL,
	`body` text NOT NULL,
	`by_key_id` text,
	`by_person_id` text,
	`desk_email_id` text,
	`desk_error` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `support_messages_request` ON `support_messages` (`request_id`,`id`);--> statement-breakpoint
CREATE INDEX `support_messages_account_created` ON `support_messages` (`account_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `support_requests` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`subject` text NOT NULL,
	`status` text NOT NULL,
	`contact_email` text,
	`opened_by_key_id` text,
	`opened_by_person_id` text,
	`merged_into_id` text,
	`closed_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `support_requests_account` ON `support_requests` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `support_requests_account_created` ON `support_requests` (`account_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `support_votes` (
	`slug` text NOT NULL,
	`voter` text NOT NULL,
	`day` text NOT NULL,
	`account_id` text NOT NULL,
	`helpful` integer NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`slug`, `voter`, `day`)
);
--> statement-breakpoint
CREATE INDEX `support_votes_slug` ON `support_votes` (`slug`,`helpful`);--> statement-breakpoint
CREATE TABLE `blocklist_listings` (
	`kind` text NOT NULL,
	`subject` text NOT NULL,
	`zone` text NOT NULL,
	`status` text NOT NULL,
	`code` text,
	`reason` text,
	`listed_since` text,
	`checked_at` text NOT NULL,
	PRIMARY KEY(`kind`, `subject`, `zone`)
);
--> statement-breakpoint
CREATE TABLE `dedicated_ip_domains` (
	`domain_id` text PRIMARY KEY NOT NULL,
	`ip_id` text NOT NULL,
	`account_id` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `dedicated_ip_domains_ip` ON `dedicated_ip_domains` (`ip_id`);--> statement-breakpoint
CREATE TABLE `dedicated_ip_usage` (
	`ip_id` text NOT NULL,
	`day` text NOT NULL,
	`sent` integer NOT NULL,
	PRIMARY KEY(`ip_id`, `day`)
);
--> statement-breakpoint
CREATE TABLE `dedicated_ips` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`ip` text NOT NULL,
	`family` integer NOT NULL,
	`ptr` text,
	`warmup_started_at` text,
	`overflow` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dedicated_ips_ip` ON `dedicated_ips` (`ip`);--> statement-breakpoint
CREATE INDEX `dedicated_ips_account` ON `dedicated_ips` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `billing_accounts` (
	`account_id` text PRIMARY KEY NOT NULL,
	`customer_id` text,
	`subscription_id` text,
	`subscription_item_id` text,
	`plan` text,
	`term` text,
	`status` text NOT NULL,
	`period_start` text,
	`period_end` text,
	`trial_started_at` text,
	`trial_ends_at` text,
	`overage_enabled` integer NOT NULL,
	`overage_cap` integer,
	`provider_event_at` integer,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `billing_accounts_customer` ON `billing_accounts` (`customer_id`);--> statement-breakpoint
CREATE TABLE `billing_events` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`account_id` text,
	`outcome` text NOT NULL,
	`provider_created_at` text NOT NULL,
	`received_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `billing_invoices` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`provider_id` text NOT NULL,
	`number` text,
	`status` text NOT NULL,
	`amount_due` integer NOT NULL,
	`amount_paid` integer NOT NULL,
	`currency` text NOT NULL,
	`hosted_url` text,
	`pdf_url` text,
	`period_start` text,
	`period_end` text,
	`issued_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `billing_invoices_provider` ON `billing_invoices` (`provider_id`);--> statement-breakpoint
CREATE INDEX `billing_invoices_account` ON `billing_invoices` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `trust_appeals` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`person_email` text NOT NULL,
	`reason` text NOT NULL,
	`status` text NOT NULL,
	`outcome` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `trust_appeals_account` ON `trust_appeals` (`account_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `trust_changes` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`from` text NOT NULL,
	`to` text NOT NULL,
	`reason` text NOT NULL,
	`by` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `trust_changes_account` ON `trust_changes` (`account_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `trust_standings` (
	`account_id` text PRIMARY KEY NOT NULL,
	`level` text NOT NULL,
	`state` text NOT NULL,
	`state_reason` text,
	`state_since` text,
	`paused_domains` text NOT NULL,
	`level_since` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `job_ticks` (
	`name` text PRIMARY KEY NOT NULL,
	`tick` text NOT NULL,
	`owner` text NOT NULL
);
