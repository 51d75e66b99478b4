import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { CATALOGUE } from '../src/errors/catalogue'
import { harness, type Harness } from './support/harness'
import { catalogueOperations } from './support/operations'


let h: Harness
let spec: any
beforeAll(async () => {
  h = await harness()
  spec = (await h.call('GET', '/openapi.json', { key: null })).body
})
afterAll(() => h.close())

const operations = () =>
  Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
  )

describe('GET /openapi.json', () => {
  test('is OpenAPI 3.1 with the bearer scheme and the error envelope', () => {
    expect(spec.openapi).toMatch(/^3\.1\./)
    expect(spec.info.version).toBe('0.1.0')
    expect(spec.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(spec.components.schemas.Error.required).toEqual(expect.arrayContaining(['code', 'message', 'fix', 'docs_url']))
  })

  test('lists only operations of the catalogue, each with the catalogue’s auth', () => {
    const catalogue = new Map(catalogueOperations().map((o) => [`${o.method} ${o.path}`, o]))
    expect(catalogue.size).toBe(195)
    for (const { method, path, op } of operations()) {
      const entry = catalogue.get(`${method} ${path}`)
      expect(entry, `${method} ${path} is not in operations.md`).toBeDefined()
      expect(op['x-auth'], `${method} ${path}`).toBe(entry!.auth)
    }
  })

  test('holds all 195 operations of operations.md (test/fuzz.test.ts calls each: none answers 500 or 501)', () => {
    const documented = new Set(operations().map((o) => `${o.method} ${o.path}`))
    expect(documented.size).toBe(195)
    for (const o of catalogueOperations()) expect(documented.has(`${o.method} ${o.path}`), `${o.method} ${o.path}`).toBe(true)
  })

  test('every operation has a unique operationId, a summary, a tag, a success reply and its error replies from the catalogue', () => {
    const ids = new Set<string>()
    for (const { method, path, op } of operations()) {
      const where = `${method} ${path}`
      expect(op.operationId, where).toMatch(/^[a-z][A-Za-z0-9]+$/)
      expect(ids.has(op.operationId), `${where}: duplicate operationId`).toBe(false)
      ids.add(op.operationId)
      expect(op.summary, where).toBeTruthy()
      expect(op.tags?.length, where).toBe(1)
      const statuses = Object.keys(op.responses)
      expect(statuses.some((s) => /^2/.test(s)), `${where}: no success reply`).toBe(true)
      expect(statuses).toContain('500')
      for (const [status, reply] of Object.entries(op.responses as Record<string, any>)) {
        if (!/^[45]/.test(status)) continue
        expect(reply['x-error-codes'].length, `${where} ${status}`).toBeGreaterThan(0)
        for (const code of reply['x-error-codes']) expect(CATALOGUE[code as keyof typeof CATALOGUE].status, `${where} ${code}`).toBe(Number(status))
      }
      if (op['x-auth'] !== 'public') expect(op.responses['401']['x-error-codes']).toContain('missing_api_key')
    }
  })

  test('request bodies are JSON, except OAuth’s form-encoded endpoints (RFC 6749, RFC 7009), and described by their schemas', () => {
    const create = spec.paths['/api-keys'].post
    expect(Object.keys(create.requestBody.content)).toEqual(['application/json'])
    for (const path of ['/oauth/token', '/oauth/revoke']) expect(Object.keys(spec.paths[path].post.requestBody.content)).toEqual(['application/x-www-form-urlencoded'])
    expect(create.requestBody.content['application/json'].schema.properties.name).toMatchObject({ type: 'string' })
    expect(spec.paths['/api-keys/{id}'].get.parameters[0]).toMatchObject({ name: 'id', in: 'path', required: true })
  })

  test('the docs pages are served from the binary: the reference and one page per error code', async () => {
    const ref = await h.call('GET', '/docs', { key: null })
    expect(ref.status).toBe(200)
    expect(ref.headers.get('content-type')).toContain('text/html')
    expect(ref.body).toContain('/api-keys')
    expect(ref.body).not.toMatch(/https?:\/\/(?!mailroom\.test)[a-z]/i)
    for (const code of Object.keys(CATALOGUE)) {
      const page = await h.call('GET', `/docs/errors/${code}`, { key: null })
      expect(page.status, code).toBe(200)
      expect(page.body).toContain(`<h1><code>${code}</code></h1>`)
      expect(page.body).toContain(`HTTP status <b>${CATALOGUE[code as keyof typeof CATALOGUE].status}</b>`)
    }
    expect((await h.call('GET', '/docs/errors/no_such_code', { key: null })).status).toBe(404)
  })
})
