// The README says how to start and test, and its error table is the catalogue's.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CATALOGUE, ERROR_CODES } from '../src/errors/catalogue'
import { END_MARKER, START_MARKER, renderErrorTable, withErrorTable } from '../src/errors/readme-table'

const ROOT = join(import.meta.dir, '..')
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }

describe('README', () => {
  test('the quick start is the two commands', () => {
    const quick = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1))
    const commands = [...quick.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1].trim())
    expect(commands).toEqual(['npm install && npm start', 'npm test'])
    expect(pkg.scripts.start).toBeDefined()
    expect(pkg.scripts.test).toBeDefined()
  })

  test('the error table is generated from the catalogue and up to date (fix: npm run docs:errors)', () => {
    expect(readme).toContain(START_MARKER)
    expect(readme).toContain(END_MARKER)
    const current = readme.slice(readme.indexOf(START_MARKER) + START_MARKER.length, readme.indexOf(END_MARKER)).trim()
    expect(current).toBe(renderErrorTable())
    expect(withErrorTable(readme)).toBe(readme)
    expect(pkg.scripts['docs:errors']).toBe('bun src/errors/readme-table.ts')
  })

  test('the table has one row per code with its status, legacy name and retry hint', () => {
    const rows = renderErrorTable().split('\n').slice(2)
    expect(rows).toHaveLength(ERROR_CODES.length)
    for (const [i, code] of ERROR_CODES.entries()) {
      const e = CATALOGUE[code]
      const cells = rows[i].split(' | ')
      expect(cells[0]).toBe(`| \`${code}\``)
      expect(cells[1]).toBe(String(e.status))
      expect(cells[2]).toBe(`\`${e.legacy}\``)
      expect(cells[3]).toBe(e.retryAfter ? `after ${e.retryAfter} s` : '—')
    }
  })

  test('every setting the configuration reads is documented', () => {
    const config = readFileSync(join(ROOT, 'src/config.ts'), 'utf8')
    const names = new Set([...config.matchAll(/\b(PORT|MAILROOM_[A-Z_]+)\b/g)].map((m) => m[1]))
    expect(names.size).toBeGreaterThan(5)
    for (const name of names) expect(readme, `${name} is not in the README's configuration table`).toContain(`| \`${name}\` |`)
  })

  test('it keeps the marker for the API notes', () => {
    expect(readme).toContain('<!-- api-notes -->')
  })
})
