import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface CatalogueOp {
  section: string
  method: string
  /** OpenAPI form: `/api-keys/{id}`. */
  path: string
  auth: string
}

/** The 195 operations of the catalogue (a copy of shared/api/operations.md kept with the tests). */
export function catalogueOperations(): CatalogueOp[] {
  const text = readFileSync(join(import.meta.dir, '../contract/operations.md'), 'utf8')
  const ops: CatalogueOp[] = []
  let section = ''
  for (const line of text.split('\n')) {
    const h = line.match(/^## (.+?) \(\d+\)$/)
    if (h) section = h[1]
    const row = line.match(/^\| (GET|POST|PATCH|DELETE|PUT) \| (\S+) \| (\w+) \|/)
    if (row) ops.push({ section, method: row[1], path: row[2], auth: row[3] })
  }
  return ops
}
