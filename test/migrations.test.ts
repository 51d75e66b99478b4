// The tables in src/db/tables and the SQL in migrations/ describe the same schema,
// and the binary embeds every migration.
import { afterAll, describe, expect, test } from 'bun:test'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { run } from '../src/build/process'
import { journal, migrationSql } from '../src/db/migrations.gen'

const ROOT = resolve(import.meta.dir, '..')
const SCHEMA = join(ROOT, 'src/db/tables/index.ts')
const work = mkdtempSync(join(tmpdir(), 'mailroom-migrations-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

/** Every file under dir, as relative path → content. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const full = join(entry.parentPath, entry.name)
    out[full.slice(dir.length + 1)] = readFileSync(full, 'utf8')
  }
  return out
}

/**
 * drizzle-kit generate into `<work>/<out>`. It is run from the work folder with a
 * relative --out because it prefixes `./` to the folder it is given; it exits 0
 * even when it fails, so callers read its output too. No stdin: a rename question
 * would end it instead of hanging.
 */
async function generate(out: string) {
  const node = Bun.which('node')
  const cli = join(ROOT, 'node_modules/drizzle-kit/bin.cjs')
  const cmd = [node ?? process.execPath, cli, 'generate', '--dialect', 'sqlite', '--schema', SCHEMA, '--out', out]
  const r = await run(cmd, { cwd: work, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, NO_COLOR: '1' } }, 60_000)
  return { ...r, output: r.stdout + r.stderr }
}

describe('migrations', () => {
  test('drizzle-kit finds nothing to generate: the tables and the migrations agree', async () => {
    const before = tree(join(ROOT, 'migrations'))
    cpSync(join(ROOT, 'migrations'), join(work, 'current'), { recursive: true })
    const r = await generate('current')
    expect(r.code, r.output).toBe(0)
    expect(r.output).not.toMatch(/\bError\b|ENOENT/)
    const after = tree(join(work, 'current'))
    // A schema change shows up as a new .sql file, a new snapshot and a new journal entry.
    expect(Object.keys(after).sort(), `drizzle-kit generated a migration: run \`npm run db:generate\` and commit it.\n${r.output}`).toEqual(
      Object.keys(before).sort(),
    )
    expect(after).toEqual(before)
    expect(r.output).toContain('No schema changes')
  }, 90_000)

  test('the check can see a difference: from an empty folder it generates the whole schema', async () => {
    mkdirSync(join(work, 'empty'))
    const r = await generate('empty')
    expect(r.code, r.output).toBe(0)
    const files = Object.keys(tree(join(work, 'empty')))
    expect(files.filter((f) => f.endsWith('.sql')), r.output).toHaveLength(1)
    expect(files).toContain(join('meta', '_journal.json'))
  }, 90_000)

  test('migrations.gen.ts embeds every migration of the journal, byte for byte', () => {
    const onDisk = JSON.parse(readFileSync(join(ROOT, 'migrations/meta/_journal.json'), 'utf8')) as typeof journal
    expect(journal).toEqual(onDisk)
    const tags = onDisk.entries.map((e) => e.tag)
    expect(Object.keys(migrationSql).sort()).toEqual([...tags].sort())
    for (const tag of tags) {
      expect(migrationSql[tag], `${tag}.sql differs from its embedded copy: run \`bun src/db/embed-migrations.ts\``).toBe(
        readFileSync(join(ROOT, 'migrations', `${tag}.sql`), 'utf8'),
      )
    }
    // No .sql file in migrations/ is left out of the journal.
    const sqlFiles = readdirSync(join(ROOT, 'migrations')).filter((f) => f.endsWith('.sql'))
    expect(sqlFiles.sort()).toEqual(tags.map((t) => `${t}.sql`).sort())
  })
})
