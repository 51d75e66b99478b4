import { expect, test } from 'bun:test'
import { CATALOGUE, type ErrorCode } from '../../src/errors/catalogue'
import { expectError, harness, type CallOptions, type Harness, type Reply } from './harness'
import { person, type PersonSpec } from './people'

/** A named credential: the owner's key, a sending-only key, none, one that no longer works, or a console session of a new member. */
export type As = 'full' | 'sending' | 'none' | 'revoked' | 'unknown' | PersonSpec

export interface Scenario<C = any> {
  name: string
  method: string
  /** A path, or one built from what `setup` made. */
  path: string | ((ctx: C, h: Harness) => string)
  as?: As
  body?: unknown | ((ctx: C, h: Harness) => unknown)
  headers?: Record<string, string> | ((ctx: C, h: Harness) => Record<string, string>)
  query?: CallOptions['query']
  raw?: string
  /** Makes what the scenario needs; its result is handed to path, body and check. */
  setup?: (h: Harness) => Promise<C>
  status: number
  /** A deep-partial expectation of the reply body. */
  expect?: Record<string, unknown>
  /** The error code expected; also checks the envelope. */
  code?: ErrorCode
  /** Anything further to assert, for example what the change left in the database. */
  check?: (r: Reply, ctx: C, h: Harness) => Promise<void> | void
  /** Settings for this scenario's app, beside the table's. */
  env?: Record<string, string>
}

export interface ScenarioOptions {
  /** Settings for every scenario's app (read when the scenario runs, so values made in beforeAll work). */
  env?: () => Record<string, string>
  /** Runs before and after each scenario, e.g. to reset a test server. */
  reset?: () => void
}

async function credential(h: Harness, as: As): Promise<Pick<CallOptions, 'key' | 'headers'>> {
  if (typeof as === 'object') return { key: null, headers: { cookie: (await person(h, as)).cookie } }
  return { key: await keyFor(h, as) }
}

async function keyFor(h: Harness, as: Exclude<As, PersonSpec>): Promise<string | null> {
  switch (as) {
    case 'full':
      return h.token
    case 'none':
      return null
    case 'unknown':
      return 'mr_thisKeyWasNeverIssuedByThisServer000000'
    case 'sending':
      return (await h.key({ name: 'sender', permission: 'sending_access' })).token
    case 'revoked': {
      const k = await h.key({ name: 'revoked' })
      await h.call('DELETE', `/api-keys/${k.id}`)
      return k.token
    }
  }
}

/** Runs a table of scenarios, each on a fresh app and database. */
export function scenarios(table: Scenario[], opts: ScenarioOptions = {}) {
  for (const s of table) {
    test(`${s.method} ${typeof s.path === 'string' ? s.path : '…'}: ${s.name}`, async () => {
      opts.reset?.()
      const h = await harness({ ...opts.env?.(), ...s.env })
      try {
        const ctx = s.setup ? await s.setup(h) : undefined
        const path = typeof s.path === 'function' ? s.path(ctx, h) : s.path
        const body = typeof s.body === 'function' ? (s.body as (c: unknown, h: Harness) => unknown)(ctx, h) : s.body
        const cred = await credential(h, s.as ?? 'full')
        const headers = { ...cred.headers, ...(typeof s.headers === 'function' ? s.headers(ctx, h) : s.headers) }
        const r = await h.call(s.method, path, { key: cred.key, body, headers, query: s.query, raw: s.raw })
        if (s.code) {
          expectError(r, s.code, s.status)
          expect(CATALOGUE[s.code].status).toBe(s.status)
        } else {
          expect(r.status, JSON.stringify(r.body)).toBe(s.status)
        }
        if (s.expect) expect(structuredClone(r.body)).toMatchObject(s.expect)
        if (s.check) await s.check(r, ctx, h)
      } finally {
        await h.close()
        opts.reset?.()
      }
    })
  }
}
