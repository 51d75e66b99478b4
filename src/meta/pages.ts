import { CATALOGUE, type ErrorCode } from '../errors/catalogue'
import { escapeHtml as esc } from '../lib/html'

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · Mailroom</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}code{background:#f2f2f2;padding:.1em .3em;border-radius:3px}
table{border-collapse:collapse;width:100%}td,th{text-align:left;border-bottom:1px solid #ddd;padding:.35rem .5rem;vertical-align:top}a{color:#0b57d0}
.m{font-weight:600;font-family:ui-monospace,monospace}</style></head><body>${body}</body></html>`

/** The page `docs_url` points at: what a code means and what to do. */
export function errorPage(code: string): string | null {
  if (!(code in CATALOGUE)) return null
  const e = CATALOGUE[code as ErrorCode]
  return page(
    code,
    `<p><a href="/docs">API reference</a></p><h1><code>${esc(code)}</code></h1>
<p>HTTP status <b>${e.status}</b>${e.legacy !== code ? ` · legacy name <code>${esc(e.legacy)}</code>` : ''}</p>
<h2>What it means</h2><p>${esc(e.message)}</p><h2>What to do</h2><p>${esc(e.fix)}</p>
${e.retryAfter ? `<p>Waiting cures it: retry after ${e.retryAfter} seconds (also in <code>Retry-After</code> and <code>retry_after_seconds</code>).</p>` : ''}`,
  )
}

type Spec = { paths: Record<string, Record<string, { operationId?: string; summary?: string; tags?: string[]; 'x-auth'?: string }>> }

/** A readable index of the API, built from the OpenAPI document; served offline, no CDN. */
export function referencePage(spec: Spec): string {
  const rows: { tag: string; method: string; path: string; summary: string; auth: string }[] = []
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, o] of Object.entries(item)) {
      rows.push({ tag: o.tags?.[0] ?? '', method: method.toUpperCase(), path, summary: o.summary ?? '', auth: o['x-auth'] ?? '' })
    }
  }
  rows.sort((a, b) => a.tag.localeCompare(b.tag) || a.path.localeCompare(b.path))
  const errors = Object.entries(CATALOGUE)
    .map(([c, e]) => `<tr><td><a href="/docs/errors/${c}"><code>${c}</code></a></td><td>${e.status}</td><td>${esc(e.message)}</td></tr>`)
    .join('')
  return page(
    'API reference',
    `<h1>Mailroom API</h1><p>The machine-readable description is <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). Authenticate with <code>Authorization: Bearer &lt;API key&gt;</code>.</p>
<h2>Operations (${rows.length})</h2><table><tr><th>Group</th><th>Method</th><th>Path</th><th>Auth</th><th>What it does</th></tr>
${rows.map((r) => `<tr><td>${esc(r.tag)}</td><td class="m">${r.method}</td><td><code>${esc(r.path)}</code></td><td>${esc(r.auth)}</td><td>${esc(r.summary)}</td></tr>`).join('')}</table>
<h2>Errors</h2><table><tr><th>Code</th><th>Status</th><th>Meaning</th></tr>${errors}</table>`,
  )
}
