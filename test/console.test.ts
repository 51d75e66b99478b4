// The console's routes through app.handle: the page, its embedded files, the
// enrolment QR code, and that none of it is an API operation.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ASSETS } from '../src/console/assets'
import { expectError, harness, type Harness } from './support/harness'

let h: Harness
beforeAll(async () => {
  h = await harness()
})
afterAll(() => h.close())

const browser = { accept: 'text/html,application/xhtml+xml' }

describe('console routes', () => {
  test('the page: served without credentials, under a policy that allows only its own origin', async () => {
    const r = await h.call('GET', '/console', { key: null, headers: browser })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(r.headers.get('content-security-policy')).toStartWith("default-src 'self';")
    expect(r.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(r.body).toContain('<script type="module" src="/console/assets/app.js"></script>')
    // Nothing refers to another host: no CDN, no web font, no analytics.
    for (const text of [r.body as string, ...Object.values(ASSETS).map((a) => a.body)]) expect(text.match(/\b(src|href)=["']?(https?:)?\/\//g)).toBeNull()
  })

  test('every file the page imports is embedded and served with its type', async () => {
    const files = new Set(['app.js', 'style.css'])
    for (const a of Object.values(ASSETS)) for (const m of a.body.matchAll(/from '\.\/([\w-]+\.js)'/g)) files.add(m[1])
    for (const f of files) {
      const r = await h.call('GET', `/console/assets/${f}`, { key: null })
      expect(r.status, f).toBe(200)
      expect(r.headers.get('content-type'), f).toStartWith(f.endsWith('.css') ? 'text/css' : 'text/javascript')
      expect(r.headers.get('x-content-type-options')).toBe('nosniff')
    }
    expect([...files].sort()).toEqual(Object.keys(ASSETS).sort())
    expectError(await h.call('GET', '/console/assets/nope.js', { key: null }), 'not_found', 404)
  })

  test('a browser opening / lands on the console; an API client gets not_found', async () => {
    const r = await h.app.handle(new Request('http://localhost/', { headers: browser }))
    expect(r.status).toBe(302)
    expect(r.headers.get('location')).toBe('/console')
    expectError(await h.call('GET', '/', { key: null, headers: { accept: 'application/json' } }), 'not_found', 404)
  })

  test('the enrolment QR code: an SVG drawn from the URI in the body', async () => {
    const uri = 'otpauth://totp/Mailroom:owner%40console.test?issuer=Mailroom&secret=JBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30'
    const r = await h.call('POST', '/console/qr', { key: null, body: { text: uri } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('image/svg+xml')
    const svg = r.body as string
    // A version-5 or larger symbol for this length, with its three finder patterns at the corners.
    const size = Number(svg.match(/viewBox="0 0 (\d+) \1"/)![1]) - 8
    expect(size).toBeGreaterThanOrEqual(37)
    for (const [x, y] of [[4, 4], [size - 3, 4], [4, size - 3]]) expect(svg).toContain(`M${x} ${y}h1v1h-1z`)
    expect((await h.call('POST', '/console/qr', { key: null, body: { text: uri + 'x' } })).body).not.toBe(svg)
    expectError(await h.call('POST', '/console/qr', { key: null, body: { text: '' } }), 'validation_error', 400)
  })

  test('none of it is in the API description', async () => {
    const doc = (await h.call('GET', '/openapi.json', { key: null })).body
    expect(Object.keys(doc.paths).filter((p) => p === '/' || p.startsWith('/console'))).toEqual([])
  })
})
