// What the deployable costs before any work: the compiled binary's size, its memory
// at rest and how long it takes from spawn to its first answer.
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { compile } from '../../src/build/compile'
import { freePort, KEY, memoryMb, startProcess, stop, tempDir } from './lib'

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** Spawn to the first 200 from /health, polled every 2 ms; then its memory after a second at rest. */
async function coldStart(binary: string, dir: string) {
  const port = await freePort()
  const t0 = performance.now()
  const p = startProcess([binary], { PORT: String(port), MAILROOM_DATA_DIR: dir, MAILROOM_BOOTSTRAP_KEY: KEY, MAILROOM_HOSTNAME: 'bench.local', MAILROOM_SMTP_PORT: '0' })
  try {
    const until = t0 + 30_000
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
      if (ok) break
      if (performance.now() > until) throw new Error(`${binary} did not answer /health within 30 s: ${await new Response(p.stderr as ReadableStream).text()}`)
      await Bun.sleep(2)
    }
    const ms = performance.now() - t0
    await Bun.sleep(1000)
    return { ms, restMb: memoryMb(p.pid).rss }
  } finally {
    await stop(p)
  }
}

/** Builds the binary as `npm run build` does (into a temp folder), then five cold starts on fresh folders and five on one existing folder. */
export async function footprint() {
  const build = tempDir('build')
  try {
    const { outfile, bytes, millis } = await compile(join(build, 'mailroom'))
    const fresh: Awaited<ReturnType<typeof coldStart>>[] = []
    for (let i = 0; i < 5; i++) fresh.push(await coldStart(outfile, join(build, `fresh-${i}`)))
    const existing: typeof fresh = []
    // The first fresh start left its data folder migrated, with its account and key.
    for (let i = 0; i < 5; i++) existing.push(await coldStart(outfile, join(build, 'fresh-0')))
    return {
      mb: bytes / 1024 / 1024,
      buildSeconds: millis / 1000,
      freshMs: median(fresh.map((r) => r.ms)),
      existingMs: median(existing.map((r) => r.ms)),
      restMb: median(existing.map((r) => r.restMb)),
    }
  } finally {
    rmSync(build, { recursive: true, force: true })
  }
}

if (import.meta.main) console.log(await footprint())
