import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

export const ImportField = t.Union([t.Literal('email'), t.Literal('first_name'), t.Literal('last_name'), t.Literal('unsubscribed')])

export const CreateImport = t.Object({
  csv: t.String({
    minLength: 1,
    description: 'CSV text (RFC 4180: comma-separated, fields with commas, quotes or line breaks in double quotes). The first row is the header and must include `email`; at most 1,000 data rows.',
  }),
  column_map: t.Optional(
    t.Record(t.String({ minLength: 1, maxLength: 200 }), ImportField, {
      description: 'maps a CSV header name to `email`, `first_name`, `last_name` or `unsubscribed`; headers named like those fields (any case) need no mapping, and a header equal to a contact property key fills that property',
    }),
  ),
  on_conflict: t.Optional(t.Union([t.Literal('upsert'), t.Literal('skip')], { description: '`upsert` (the default) updates an existing contact; `skip` leaves it unchanged' })),
})
export type CreateImport = Static<typeof CreateImport>

const Counts = t.Object({
  created: t.Integer({ description: 'always 0: an import never creates contacts' }),
  updated: t.Integer({ description: 'rows that changed a contact' }),
  skipped: t.Integer({ description: 'rows of existing contacts left as they were (`on_conflict: skip`, or nothing to change)' }),
  failed: t.Integer({ description: 'rows rejected; each is in `rejected`' }),
  total: t.Integer({ description: 'data rows read: created + updated + skipped + failed' }),
})

export const RejectedRow = t.Object({
  row: t.Integer({ description: 'the data row, counting from 1 after the header' }),
  line: t.Integer({ description: 'the line of the CSV text the row starts on' }),
  code: t.String({ description: 'an error code of the catalogue: `not_found` (no contact has the address), `validation_error`, `missing_required_field`, `contact_resubscribe_required`' }),
  email: t.String({ description: 'the row’s address as far as it could be read; empty when none could' }),
  message: t.String(),
  fix: t.String(),
})

const summary = {
  object: t.Literal('contact_import'),
  id: Uuid,
  status: t.Literal('completed', { description: 'an import is applied within its request' }),
  on_conflict: t.Union([t.Literal('upsert'), t.Literal('skip')]),
  counts: Counts,
  created_at: Timestamp,
  completed_at: Timestamp,
}
export const ImportSummary = t.Object(summary)
export const ImportResult = t.Object({
  ...summary,
  rejected: t.Array(RejectedRow),
  ignored_columns: t.Array(t.String(), { description: 'header columns that named neither a contact field nor a contact property, so were not read' }),
})

export const ImportList = t.Object({ object: t.Literal('list'), data: t.Array(ImportSummary), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

export const ListImportsQuery = t.Composite([
  Paging,
  t.Object({
    status: t.Optional(t.Union([t.Literal('queued'), t.Literal('in_progress'), t.Literal('completed'), t.Literal('failed')], { description: 'Resend’s statuses; imports here are always `completed`' })),
  }),
])
export type ListImportsQuery = Static<typeof ListImportsQuery>

export const ImportIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 100 }) })
