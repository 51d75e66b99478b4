// Fuzzing every operation that GET /openapi.json describes, with inputs drawn by
// fast-check from the operation's own schemas: values that fit, values at and
// past each bound, and junk. Whatever comes in, the service never answers 500,
// every refusal is a catalogue error in the full envelope, and a refused request
// leaves every table as it was. The seed is fixed so a failure replays;
// FUZZ_SEED and FUZZ_RUNS explore further.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { CATALOGUE, type ErrorCode } from '../src/errors/catalogue'
import { harness, type Harness } from './support/harness'
import { encodeBody, operationsOf, requestOf, scalar, type Operation } from './support/openapi-fuzz'
import { person } from './support/people'
import { changedTables, tableCounts, tableNames } from './support/tables'

const SEED = Number(process.env.FUZZ_SEED ?? 20261121)
const RUNS = Number(process.env.FUZZ_RUNS ?? 25)

/**
 * Tables a refused request may still write, each for a reason of its own: a
 * held agent action is the refusal's subject (`approval_required` names it),
 * request logs record refusals too, and key use is counted in memory and
 * flushed every few seconds.
 */
const WRITTEN_ON_REFUSAL = new Set(['request_logs', 'agent_actions', 'api_key_usage'])
let watched: string[] = []

let h: Harness
let ops: Operation[] = []

beforeAll(async () => {
  // DNS answers from a port where nothing listens: lookups fail at once instead of leaving the machine.
  h = await harness({ MAILROOM_RATE_LIMIT: '1000000', MAILROOM_PUBLIC_RATE_LIMIT: '1000000', MAILROOM_DNS_SERVERS: '127.0.0.1:9', MAILROOM_ALLOW_PRIVATE_WEBHOOKS: 'true' })
  ops = await operationsOf(h)
  watched = (await tableNames(h)).filter((t) => !WRITTEN_ON_REFUSAL.has(t))
})
afterAll(() => h?.close())

describe('fuzzing every operation from /openapi.json', () => {
  test('finds all 195 operations', () => expect(ops.length).toBe(195))

  test('every operation: no 500, refusals from the catalogue, nothing written by a refusal', async () => {
    const failures: string[] = []
    for (const op of ops) {
      // A session of its own per operation, so signing out or deleting a member spoils nothing else.
      const me = op.auth === 'session' || op.auth === 'person' ? await person(h) : null
      const result = await fc.check(
        fc.asyncProperty(requestOf(op), async (input) => {
          let path = op.path
          for (const [k, v] of Object.entries(input.path)) path = path.replace(`{${k}}`, encodeURIComponent(scalar(v)))
          const query = Object.fromEntries(Object.entries(input.query).map(([k, v]) => [k, scalar(v)]))
          const headers: Record<string, string> = me ? { cookie: me.cookie, origin: 'http://mailroom.test' } : {}
          let raw: string | undefined
          if (op.body) {
            headers['content-type'] = op.body.type
            if (input.body === Symbol.for('broken')) raw = '{"unterminated'
            else raw = encodeBody(op.body.type, input.body)
          }
          const before = await tableCounts(h, watched)
          const r = await h.call(op.method, path, { key: me || op.auth === 'public' ? null : h.token, headers, raw, query })
          const where = `${op.method} ${path}?${new URLSearchParams(query)} ${raw?.slice(0, 300) ?? ''}`
          if (r.status >= 500 && r.status !== 503) throw new Error(`${r.status} for ${where}: ${JSON.stringify(r.body).slice(0, 300)}`)
          if (r.status < 400) return
          const code = (r.body as { code?: string })?.code
          if (!code || !(code in CATALOGUE)) throw new Error(`${r.status} without a catalogue code for ${where}: ${String(JSON.stringify(r.body)).slice(0, 300)}`)
          expect({ status: r.status, fix: typeof r.body.fix, message: typeof r.body.message, docs: r.body.docs_url }).toEqual({
            status: CATALOGUE[code as ErrorCode].status,
            fix: 'string',
            message: 'string',
            docs: `http://mailroom.test/docs/errors/${code}`,
          })
          const changed = changedTables(before, await tableCounts(h, watched))
          if (changed.length) throw new Error(`${code} for ${where}, but rows changed in ${changed.join(', ')}`)
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      )
      if (result.failed) failures.push(`${op.method} ${op.path} (${op.id}): ${String(result.errorInstance).split('\n')[0]}\n    counterexample: ${JSON.stringify(result.counterexample)?.slice(0, 400)}`)
    }
    expect(failures).toEqual([])
  }, 240_000)
})
