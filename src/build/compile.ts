// `npm run build`: compiles src/index.ts into one executable, dist/mailroom, with
// libSQL's native module, the migrations and every dependency inside it.
// Usage: bun src/build/compile.ts [--outfile path]
import { mkdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { libsqlNativePlugin } from './libsql-native'

const root = resolve(import.meta.dir, '../..')

export async function compile(outfile = join(root, 'dist/mailroom')): Promise<{ outfile: string; bytes: number; millis: number }> {
  const started = performance.now()
  mkdirSync(dirname(outfile), { recursive: true })
  const plugin = libsqlNativePlugin(root)
  const result = await Bun.build({
    // The DKIM signing and inbound reading threads are entries of their own, so the binary carries them at delivery/sign-worker.js and inbound/read-worker.js.
    entrypoints: [join(root, 'src/index.ts'), join(root, 'src/delivery/sign-worker.ts'), join(root, 'src/inbound/read-worker.ts')],
    compile: {
      outfile,
      // The binary is configured by its environment only (a .env beside it still loads, as with `npm start`);
      // a stray bunfig.toml in the folder it runs from must not change it.
      autoloadBunfig: false,
    },
    target: 'bun',
    // Keep names so the stack traces the binary logs stay readable.
    minify: { whitespace: true, syntax: true, identifiers: false },
    plugins: [plugin],
  })
  if (!result.success) {
    throw new AggregateError(result.logs, `build failed:\n${result.logs.map(String).join('\n')}`)
  }
  return { outfile, bytes: statSync(outfile).size, millis: Math.round(performance.now() - started) }
}

if (import.meta.main) {
  const i = process.argv.indexOf('--outfile')
  const out = i > 0 && process.argv[i + 1] ? resolve(process.argv[i + 1]) : undefined
  try {
    const { outfile, bytes, millis } = await compile(out)
    console.log(`built ${relative(process.cwd(), outfile) || outfile}: ${(bytes / 1024 / 1024).toFixed(1)} MB (${bytes} bytes) in ${(millis / 1000).toFixed(1)} s`)
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e))
    process.exit(1)
  }
}
