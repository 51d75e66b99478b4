import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export type TemplateVariableType = 'string' | 'number' | 'boolean'
export type TemplateValue = string | number | boolean

/** A declared variable, stored as the API shows it; no fallback makes it required. */
export interface TemplateVariable {
  key: string
  type: TemplateVariableType
  fallback_value: TemplateValue | null
}

/** What a template version holds: the fields a send takes from it. */
const content = () => ({
  from: text('from'),
  subject: text('subject'),
  replyTo: text('reply_to', { mode: 'json' }).$type<string[]>().notNull(),
  html: text('html').notNull(),
  /** Null: derived from the html when rendered; `''`: no text part. */
  text: text('text'),
  variables: text('variables', { mode: 'json' }).$type<TemplateVariable[]>().notNull(),
})

/**
 * A template and its draft (the content columns). Publishing copies the draft into
 * `template_versions`; sends use the version `published_version_id` names, so the
 * draft can change without touching what goes out.
 */
export const templates = sqliteTable(
  'templates',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
    alias: text('alias'),
    ...content(),
    publishedVersionId: text('published_version_id'),
    publishedAt: text('published_at'),
    /** The draft differs from the published version (or was never published). */
    unpublishedChanges: integer('unpublished_changes', { mode: 'boolean' }).notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('templates_account_name').on(t.accountId, t.name),
    uniqueIndex('templates_account_alias').on(t.accountId, t.alias),
    index('templates_account').on(t.accountId, t.id),
  ],
)

/** Every published version of a template, kept as published. */
export const templateVersions = sqliteTable(
  'template_versions',
  {
    id: text('id').primaryKey(),
    templateId: text('template_id').notNull(),
    accountId: text('account_id').notNull(),
    ...content(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('template_versions_template').on(t.templateId, t.id)],
)
