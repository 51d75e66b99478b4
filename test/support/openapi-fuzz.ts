// Inputs for an operation of /openapi.json, drawn by fast-check from the
// operation's own schemas: values that fit, values at and past each bound, and
// junk. The fuzz test and the tenancy test share them.
import fc from 'fast-check'
import type { Harness } from './harness'

export type Schema = {
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  anyOf?: Schema[]
  oneOf?: Schema[]
  enum?: unknown[]
  const?: unknown
  format?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  maxItems?: number
  pattern?: string
}
export interface Parameter {
  name: string
  in: 'path' | 'query' | 'header'
  required?: boolean
  schema: Schema
}
export interface Operation {
  method: string
  path: string
  id: string
  auth: string
  parameters: Parameter[]
  body?: { type: string; schema: Schema }
}

const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.string({ maxLength: 20 }),
  fc.constantFrom('', ' ', '\u0000', 'x'.repeat(5000), "'; DROP TABLE emails; --", '../../etc/passwd', '<script>alert(1)</script>', '💌', '-1', 'NaN', '9'.repeat(40)),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 2 }),
)

const bounded = (n: number | undefined, fallback: number) => Math.min(n ?? fallback, 64)

/** Strings a pattern accepts, where fast-check can draw them (it knows no lookahead). */
function matching(pattern: string, max: number | undefined): fc.Arbitrary<string> | undefined {
  try {
    return fc.stringMatching(new RegExp(pattern)).filter((x) => x.length <= (max ?? Infinity))
  } catch {
    return undefined
  }
}

function stringOf(s: Schema): fc.Arbitrary<string> {
  // Query integers are strings on the wire; the schema's own bounds sit beside them.
  if (s.format === 'integer') return numberOf(s, true).map(String)
  const min = s.minLength ?? 0
  const max = s.maxLength
  const edges = [min > 0 ? 'x'.repeat(min - 1) : '', ...(max !== undefined ? ['x'.repeat(max), 'x'.repeat(max + 1)] : [])]
  const formatted: Record<string, fc.Arbitrary<string>> = {
    uuid: fc.uuid(),
    email: fc.constantFrom('delivered@simulator.test', 'bounced@resend.dev', 'someone@example.com', 'not-an-address', 'a@b'),
    'date-time': fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
    uri: fc.constantFrom('http://127.0.0.1:9/hook', 'https://example.invalid/x', 'ftp://nope', 'not a url'),
  }
  const shaped = (s.pattern && matching(s.pattern, max)) || formatted[s.format ?? '']
  return fc.oneof(
    { weight: 3, arbitrary: shaped ?? fc.string({ minLength: min, maxLength: bounded(max, 40) }) },
    { weight: 1, arbitrary: fc.constantFrom(...edges) },
    { weight: 1, arbitrary: fc.constantFrom('delivered@simulator.test', 'example.com', 'Ünïcödé', 'in 1 hour', '2026-03-02T10:00:00Z', 'monthly', 'full_access') },
  )
}

function numberOf(s: Schema, integer: boolean): fc.Arbitrary<number> {
  const min = s.minimum ?? -1_000_000
  const max = s.maximum ?? 1_000_000
  const inside = integer ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) }) : fc.double({ min, max, noNaN: true })
  return fc.oneof({ weight: 3, arbitrary: inside }, { weight: 1, arbitrary: fc.constantFrom(min, max, min - 1, max + 1, 0, 0.5) })
}

/** Values that fit the schema, most of the time, and junk otherwise: deep fields get junk too. */
export function valueOf(s: Schema, depth = 0): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 15, arbitrary: fitting(s, depth) }, { weight: 1, arbitrary: junk })
}

export function fitting(s: Schema, depth: number): fc.Arbitrary<unknown> {
  if (s.const !== undefined) return fc.constant(s.const)
  if (s.enum?.length) return fc.constantFrom(...s.enum)
  const union = s.anyOf ?? s.oneOf
  if (union?.length) return fc.oneof(...union.map((u) => fitting({ minimum: s.minimum, maximum: s.maximum, ...u }, depth)))
  const type = Array.isArray(s.type) ? s.type[0] : s.type
  if (depth > 4) return junk
  switch (type) {
    case 'string':
      return stringOf(s)
    case 'integer':
      return numberOf(s, true)
    case 'number':
      return numberOf(s, false)
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array':
      return fc.array(valueOf(s.items ?? {}, depth + 1), { maxLength: Math.min(s.maxItems ?? 3, 3) })
    case 'object':
      return objectOf(s, depth)
    default:
      return junk
  }
}

function objectOf(s: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const props = Object.entries(s.properties ?? {})
  if (!props.length) return fc.dictionary(fc.string({ maxLength: 8 }), junk, { maxKeys: 2 })
  const fields = Object.fromEntries(props.map(([k, v]) => [k, valueOf(v, depth + 1)]))
  // Required fields are usually there and sometimes left out; unknown fields now and then.
  return fc
    .tuple(fc.record(fields, { requiredKeys: [] }), fc.subarray(s.required ?? []), fc.option(fc.dictionary(fc.constantFrom('zzz_unknown', 'id', '__proto__'), junk, { maxKeys: 1 }), { freq: 5 }))
    .chain(([record, dropped, extra]) =>
      fc.record(Object.fromEntries((s.required ?? []).filter((k) => !dropped.includes(k) || Math.random() < 0.8).map((k) => [k, valueOf(s.properties![k] ?? {}, depth + 1)]))).map((req) => ({ ...record, ...req, ...(extra ?? {}) })),
    )
}

const pathValue = (p: Parameter) => fc.oneof({ weight: 3, arbitrary: fitting(p.schema, 0) }, { weight: 2, arbitrary: fc.uuid() }, { weight: 1, arbitrary: fc.constantFrom('..', '%00', ' ', 'x'.repeat(400), 'delivered@simulator.test') })

export function requestOf(op: Operation) {
  const path = fc.record(Object.fromEntries(op.parameters.filter((p) => p.in === 'path').map((p) => [p.name, pathValue(p)])))
  // A few query parameters at a time: lists refuse some together (`cursor` beside `after`), which would hide the rest.
  const optional = op.parameters.filter((p) => p.in === 'query' && !p.required)
  const required = op.parameters.filter((p) => p.in === 'query' && p.required)
  const query = fc.subarray(optional, { maxLength: Math.min(2, optional.length) }).chain((some) => fc.record(Object.fromEntries([...required, ...some].map((p) => [p.name, fitting(p.schema, 0)]))))
  const body = op.body ? fc.oneof({ weight: 8, arbitrary: valueOf(op.body.schema) }, { weight: 1, arbitrary: fc.constant(Symbol.for('broken')) }) : fc.constant(undefined)
  return fc.record({ path, query, body })
}

/** Every operation the document describes, with its auth level and body media type. */
export async function operationsOf(h: Harness): Promise<Operation[]> {
  const doc = (await h.call('GET', '/openapi.json')).body
  const ops: Operation[] = []
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, o] of Object.entries(methods)) {
      const content = o.requestBody?.content ?? {}
      const type = Object.keys(content)[0]
      ops.push({ method: method.toUpperCase(), path, id: o.operationId, auth: o['x-auth'], parameters: o.parameters ?? [], body: type ? { type, schema: content[type].schema } : undefined })
    }
  }
  return ops
}

export function scalar(v: unknown) {
  return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)
}

/** A body as its media type sends it. */
export function encodeBody(type: string, body: unknown) {
  if (type === 'application/x-www-form-urlencoded') return new URLSearchParams(Object.entries((body ?? {}) as object).map(([k, v]) => [k, scalar(v)] as [string, string])).toString()
  return JSON.stringify(body ?? null)
}
