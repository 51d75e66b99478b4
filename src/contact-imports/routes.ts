import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import * as s from './schema'
import * as svc from './service'

const tag = 'contacts'

export const contactImportRoutes = (platform: Platform) =>
  new Elysia({ name: 'contact-imports', prefix: '/contacts/imports' })
    .use(platform)
    .post('', ({ deps, actor, body }) => svc.importContacts(deps, actor, body), {
      ...op({
        id: 'importContacts',
        summary: 'Update existing contacts from CSV text (at most 1,000 rows)',
        description:
          'JSON body with the CSV as text. A new address is rejected (in `rejected`), never created. Each row updates a contact (`upsert`, the default), leaves it (`skip`, or nothing to change) or is rejected with its code, address, message and fix: broken quotes, a wrong field count, a bad value, an address given twice. A problem with the whole request (no `email` column, an unknown `column_map` column, more than 1,000 rows) answers 400 `validation_error` and changes nothing.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
      }),
      body: s.CreateImport,
      response: { 200: s.ImportResult },
    })
    .get('', ({ deps, actor, query }) => svc.listImports(deps, actor, query), {
      ...op({ id: 'listContactImports', summary: 'Past contact imports, newest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListImportsQuery,
      response: { 200: s.ImportList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getImport(deps, actor, params.id), {
      ...op({ id: 'getContactImport', summary: 'One contact import with its rejected rows', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.ImportIdParams,
      response: { 200: s.ImportResult },
    })
