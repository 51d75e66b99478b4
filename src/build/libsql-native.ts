import type { BunPlugin } from 'bun'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/**
 * The prebuilt libSQL package for this machine (`linux-x64-gnu`, `darwin-arm64`, ...),
 * chosen with the same helpers and the same glibc/musl corrections as `libsql/index.js`.
 */
export function libsqlTarget(libsqlEntry: string): string {
  const fromLibsql = createRequire(libsqlEntry)
  const { currentTarget } = fromLibsql('@neon-rs/load') as { currentTarget(): string }
  const { familySync, GLIBC, MUSL } = fromLibsql('detect-libc') as { familySync(): string | null; GLIBC: string; MUSL: string }
  let target = currentTarget()
  if (familySync() === GLIBC) {
    if (target === 'linux-x64-musl') target = 'linux-x64-gnu'
    if (target === 'linux-arm64-musl') target = 'linux-arm64-gnu'
  }
  if (target === 'linux-arm-gnueabihf' && familySync() === MUSL) target = 'linux-arm-musleabihf'
  return target
}

/** The line in libsql/index.js that loads the native package by a computed name. */
const DYNAMIC_REQUIRE = 'return require(`@libsql/${target}`);'

/**
 * `bun build --compile` embeds a `.node` file only when a static string requires
 * it; libSQL picks its native package with a template string at run time, so by
 * itself the binary would look for node_modules wherever it runs. This plugin
 * rewrites that one `require` into a static require of this platform's
 * `index.node`, which the bundler then embeds (the binary writes it to TMPDIR to
 * load it, hence the writable TMPDIR the binary needs).
 */
export function libsqlNativePlugin(root: string): BunPlugin & { nativePath: string } {
  const libsqlEntry = createRequire(join(root, 'package.json')).resolve('libsql')
  const pkg = `@libsql/${libsqlTarget(libsqlEntry)}`
  let nativePath: string
  try {
    nativePath = createRequire(libsqlEntry).resolve(`${pkg}/index.node`)
  } catch {
    throw new Error(`libSQL's native package ${pkg} is not installed; run npm install on this platform first`)
  }
  const libsqlDir = dirname(libsqlEntry)
  return {
    name: 'libsql-native-static-require',
    nativePath,
    setup(build) {
      build.onLoad({ filter: /[\\/]libsql[\\/]index\.js$/ }, (args) => {
        if (dirname(args.path) !== libsqlDir) return undefined
        const source = readFileSync(args.path, 'utf8')
        if (!source.includes(DYNAMIC_REQUIRE)) {
          throw new Error(`libsql/index.js no longer contains ${DYNAMIC_REQUIRE}; update src/build/libsql-native.ts for the new libsql version`)
        }
        // Still a static require (so it is embedded); a failure to load it, nearly always an
        // unwritable TMPDIR, ends the process with one readable line instead of a bundle dump.
        const load = [
          'try {',
          `  return require(${JSON.stringify(nativePath)});`,
          '} catch (e) {',
          '  const tmp = process.env.TMPDIR || "/tmp";',
          '  console.error(`mailroom: cannot load the embedded libSQL module (${e && e.message}); TMPDIR (${tmp}) must be a writable folder`);',
          '  process.exit(1);',
          '}',
        ].join('\n')
        return { contents: source.replace(DYNAMIC_REQUIRE, load), loader: 'js' }
      })
    },
  }
}
