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
CREATE INDEX `contacts_account` ON `contacts` (`account_id`,`id`);