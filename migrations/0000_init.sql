CREATE TABLE `accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
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
	`status_code` integer,
	`response_body` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`account_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_expires` ON `idempotency_keys` (`expires_at`);--> statement-breakpoint
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
	`outcome` text NOT NULL
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
CREATE TABLE `emails` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`api_key_id` text,
	`domain_id` text,
	`from` text NOT NULL,
	`from_email` text NOT NULL,
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
CREATE INDEX `emails_message_id` ON `emails` (`message_id`);--> statement-breakpoint
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
CREATE INDEX `event_occurrences_event` ON `event_occurrences` (`event_id`);