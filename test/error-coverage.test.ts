import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CATALOGUE, ERROR_CODES } from '../src/errors/catalogue'
import { harness, type Harness } from './support/harness'

/**
 * Every error code an operation documents must be produced by a test that checks
 * its envelope (`expectError(...)` or a scenario's `code:`), so the OpenAPI never
 * promises a refusal nobody has seen.
 */
function testedCodes(): Set<string> {
  const codes = new Set<string>()
  for (const file of readdirSync(import.meta.dir).filter((f) => f.endsWith('.test.ts'))) {
    const text = readFileSync(join(import.meta.dir, file), 'utf8')
    for (const m of text.matchAll(/expectError\([^;]*?'([a-z_]+)'/g)) codes.add(m[1])
    for (const m of text.matchAll(/\bcode: '([a-z_]+)'/g)) codes.add(m[1])
    for (const m of text.matchAll(/\[(?:'([a-z_]+)', \d{3})\]/g)) codes.add(m[1])
  }
  return codes
}

let h: Harness
beforeAll(async () => {
  h = await harness()
})
afterAll(() => h.close())

test('every error code an operation documents is produced by some test', async () => {
  const spec = (await h.call('GET', '/openapi.json', { key: null })).body
  const tested = testedCodes()
  const missing: string[] = []
  for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, { responses: Record<string, { 'x-error-codes'?: string[] }> }>>)) {
    for (const [method, op] of Object.entries(item)) {
      for (const reply of Object.values(op.responses)) {
        for (const code of reply['x-error-codes'] ?? []) if (!tested.has(code)) missing.push(`${method.toUpperCase()} ${path}: ${code}`)
      }
    }
  }
  expect(missing).toEqual([])
})

test('every catalogue entry is complete', () => {
  for (const code of ERROR_CODES) {
    const e = CATALOGUE[code]
    expect(e.status, code).toBeGreaterThanOrEqual(400)
    expect(e.message.length, code).toBeGreaterThan(10)
    expect(e.fix.length, code).toBeGreaterThan(10)
    expect(e.legacy, code).toMatch(/^[a-z_]+$/)
  }
})

test('the seed’s aliases and groups give the legacy names', () => {
  expect(CATALOGUE.idempotency_in_flight.legacy).toBe('concurrent_idempotent_requests')
  expect(CATALOGUE.idempotency_payload_mismatch.legacy).toBe('invalid_idempotent_request')
  expect(CATALOGUE.agent_budget_exceeded.legacy).toBe('monthly_quota_exceeded')
  expect(CATALOGUE.plan_limit_reached.legacy).toBe('monthly_quota_exceeded')
  expect(CATALOGUE.rate_ceiling_exceeded.legacy).toBe('rate_limit_exceeded')
  for (const c of ['domain_not_verified', 'invalid_parameter', 'validation_error'] as const) expect(CATALOGUE[c].legacy).toBe('validation_error')
  expect(CATALOGUE.domain_not_verified.status).toBe(403)
  expect(CATALOGUE.invalid_parameter.status).toBe(422)
  expect(CATALOGUE.trust_paused.legacy).toBe('application_error')
})

test('retry hints appear exactly where the seed says waiting cures the refusal', () => {
  const hinted = Object.fromEntries(ERROR_CODES.filter((c) => CATALOGUE[c].retryAfter).map((c) => [c, CATALOGUE[c].retryAfter]))
  expect(hinted).toMatchObject({ idempotency_in_flight: 5, rate_ceiling_exceeded: 60, rate_limit_exceeded: 60, rate_limiter_unavailable: 5, support_rate_limited: 3600 })
  expect(hinted.service_unavailable).toBeGreaterThan(0)
  for (const c of ['validation_error', 'daily_quota_exceeded', 'agent_budget_exceeded', 'internal_server_error'] as const) expect(CATALOGUE[c].retryAfter).toBeUndefined()
})
