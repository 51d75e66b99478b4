import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

const MAX_VARIABLES = 50

const VariableType = t.Union([t.Literal('string'), t.Literal('number'), t.Literal('boolean')])
/** A variable's value in a send or a preview; a `string` variable also takes a number. */
export const VariableValue = t.Union([t.String({ maxLength: 100_000 }), t.Number(), t.Boolean()])
export const VariableValues = t.Record(t.String(), VariableValue, { description: 'a value for each variable the template declares; variables with a fallback may be left out' })

const VariableInput = t.Object({
  key: t.String({
    pattern: '^[A-Za-z_][A-Za-z0-9_]{0,99}$',
    description: 'letters, digits and `_`, not starting with a digit; used as `{{{KEY}}}` (or `{{KEY}}`). FIRST_NAME, LAST_NAME, EMAIL, UNSUBSCRIBE_URL, contact and this are reserved',
    error: 'must be letters, digits and `_`, not starting with a digit, at most 100',
  }),
  type: VariableType,
  fallback_value: t.Optional(t.Nullable(VariableValue, { description: 'used when a send gives no value; without one the variable is required' })),
})
const Variables = t.Array(VariableInput, { maxItems: MAX_VARIABLES, description: `at most ${MAX_VARIABLES}; every variable the subject, html or text uses must be declared` })

const Name = t.String({ minLength: 1, maxLength: 200, description: 'unique in the account (compared case-insensitively)' })
const Alias = t.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$',
  description: 'a slug that may stand for the id wherever a template is named (`order-confirmation`); unique in the account, compared case-insensitively; not UUID-shaped',
  error: 'must be letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 100',
})
const Addresses = t.Union([t.String({ maxLength: 1000 }), t.Array(t.String({ maxLength: 1000 }), { maxItems: 50 })], {
  description: '`a@b.com` or `Name <a@b.com>`, one or a list of at most 50',
})

const ContentFields = {
  from: t.Optional(t.Nullable(t.String({ maxLength: 1000, description: 'the default sender, `a@b.com` or `Name <a@b.com>`; a send’s own `from` wins' }))),
  subject: t.Optional(t.Nullable(t.String({ maxLength: 998, description: 'the default subject, variables allowed; a send’s own `subject` wins' }))),
  reply_to: t.Optional(t.Nullable(Addresses)),
  text: t.Optional(t.Nullable(t.String({ description: 'variables allowed; left out, the text is derived from the rendered html; `""` sends no text part' }))),
  variables: t.Optional(Variables),
}

export const CreateTemplate = t.Object({
  name: Name,
  alias: t.Optional(t.Nullable(Alias)),
  html: t.String({ minLength: 1, description: 'variables allowed; their values are HTML-escaped' }),
  ...ContentFields,
})
export type CreateTemplate = Static<typeof CreateTemplate>

export const UpdateTemplate = t.Object({
  name: t.Optional(Name),
  alias: t.Optional(t.Nullable(Alias)),
  html: t.Optional(t.String({ minLength: 1 })),
  ...ContentFields,
})
export type UpdateTemplate = Static<typeof UpdateTemplate>

export const RenderTemplate = t.Object({
  variables: t.Optional(VariableValues),
  version: t.Optional(t.Union([t.Literal('draft'), t.Literal('published')], { description: '`draft` (the default): what is being edited; `published`: what sends use now' })),
})
export type RenderTemplate = Static<typeof RenderTemplate>

const Variable = t.Object({ key: t.String(), type: VariableType, fallback_value: t.Nullable(VariableValue) })
const Status = t.Union([t.Literal('draft'), t.Literal('published')], { description: '`published` once any version was published' })

const Summary = {
  object: t.Literal('template'),
  id: Uuid,
  name: t.String(),
  alias: t.Nullable(t.String()),
  status: Status,
  current_version_id: t.Nullable(Uuid, { description: 'the published version sends use; null until the first publish' }),
  published_at: t.Nullable(Timestamp),
  has_unpublished_versions: t.Boolean({ description: 'the draft holds changes no published version has' }),
  created_at: Timestamp,
  updated_at: Timestamp,
}
export const TemplateSummary = t.Object(Summary)
export const Template = t.Object({
  ...Summary,
  from: t.Nullable(t.String()),
  subject: t.Nullable(t.String()),
  reply_to: t.Nullable(t.Array(t.String())),
  html: t.String(),
  text: t.Nullable(t.String()),
  variables: t.Array(Variable),
})
export const TemplateList = t.Object({ object: t.Literal('list'), data: t.Array(TemplateSummary), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListTemplatesQuery = Paging

export const Rendered = t.Object({
  object: t.Literal('template_render'),
  template_id: Uuid,
  version: t.Union([t.Literal('draft'), t.Literal('published')]),
  version_id: t.Nullable(Uuid, { description: 'the published version rendered; null for the draft' }),
  from: t.Nullable(t.String()),
  reply_to: t.Nullable(t.Array(t.String())),
  subject: t.Nullable(t.String()),
  html: t.String(),
  text: t.Nullable(t.String({ description: 'derived from the html when the template has none; null when it opted out with `""`' })),
})

export const TemplateParams = t.Object({ id: t.String({ minLength: 1, maxLength: 100, description: 'the template’s id or alias' }) })
