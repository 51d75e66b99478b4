// The README's error table, generated from the catalogue so the two cannot drift.
// `npm run docs:errors` rewrites README.md between the markers; `--check` only
// reports whether it is up to date (exit 1 when not).
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CATALOGUE, ERROR_CODES } from './catalogue'

export const START_MARKER = '<!-- errors:start -->'
export const END_MARKER = '<!-- errors:end -->'

const cell = (s: string) => s.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ')

/** The markdown table of every error code, in catalogue order. */
export function renderErrorTable(): string {
  const rows = ERROR_CODES.map((code) => {
    const e = CATALOGUE[code]
    const retry = e.retryAfter ? `after ${e.retryAfter} s` : '—'
    return `| \`${code}\` | ${e.status} | \`${e.legacy}\` | ${retry} | ${cell(e.message)} |`
  })
  return ['| code | status | legacy name | retry hint | meaning |', '| --- | --- | --- | --- | --- |', ...rows].join('\n')
}

/** README text with the table between the markers replaced; throws when the markers are missing. */
export function withErrorTable(readme: string): string {
  const start = readme.indexOf(START_MARKER)
  const end = readme.indexOf(END_MARKER)
  if (start < 0 || end < start) throw new Error(`README.md needs ${START_MARKER} followed by ${END_MARKER}`)
  return `${readme.slice(0, start + START_MARKER.length)}\n${renderErrorTable()}\n${readme.slice(end)}`
}

if (import.meta.main) {
  const path = join(import.meta.dir, '../../README.md')
  const current = readFileSync(path, 'utf8')
  let next: string
  try {
    next = withErrorTable(current)
  } catch (e) {
    console.error((e as Error).message)
    process.exit(1)
  }
  if (process.argv.includes('--check')) {
    if (next !== current) {
      console.error('README.md error table is out of date: run `npm run docs:errors`')
      process.exit(1)
    }
    console.log('README.md error table is up to date')
  } else if (next !== current) {
    writeFileSync(path, next)
    console.log(`README.md: error table rewritten (${ERROR_CODES.length} codes)`)
  } else {
    console.log(`README.md: error table already up to date (${ERROR_CODES.length} codes)`)
  }
}
