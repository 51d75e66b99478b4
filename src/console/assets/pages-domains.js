// Sending domains: the DNS records to publish, each with its live status, and verification.
import { del, get, patch, post } from './api.js'
import { go } from './app.js'
import { attempt, badge, clear, code, copyButton, fields, form, h, pagedTable, table, toast, when } from './ui.js'

/** The records as zone-file lines, for pasting into a DNS provider that takes a zone file. */
const zoneLines = (records) => records.map((r) => `${r.name}.\t${r.ttl === 'Auto' ? 3600 : r.ttl}\tIN\t${r.type}\t${r.priority !== undefined ? `${r.priority} ` : ''}${r.type === 'TXT' ? JSON.stringify(r.value) : r.value}`).join('\n')

async function domain(main, id) {
  const head = h('div')
  const records = h('section', { 'aria-live': 'polite' })
  main.append(h('p', null, h('a', { href: '#/domains' }, '← Domains')), head, records)
  function draw(d) {
    clear(
      head,
      h('h1', null, d.name, ' ', badge(d.status)),
      fields({ Region: d.region, Sending: d.capabilities.sending, Receiving: d.capabilities.receiving, 'Last checked': when(d.last_checked_at), Verified: when(d.verified_at), 'Checks go on until': when(d.check_window_ends_at) }),
    )
    const verify = h('button', { type: 'button' }, 'Verify now')
    verify.addEventListener('click', () =>
      attempt(records, verify, async () => {
        draw(await post(`/domains/${id}/verify`, {}))
        toast('DNS checked.')
      }),
    )
    clear(
      records,
      h('h2', null, 'DNS records to publish'),
      h('p', { class: 'row' }, verify, copyButton(zoneLines(d.records), 'Copy all records', 'records')),
      table(
        [
          ['For', (r) => r.record + (r.required ? '' : ' (optional)')],
          ['Type', (r) => r.type],
          ['Name', (r) => h('span', null, code(r.name), ' ', copyButton(r.name, 'Copy', `${r.record} ${r.type} name`))],
          ['Value', (r) => h('span', null, code(r.value), ' ', copyButton(r.value, 'Copy', `${r.record} ${r.type} value`))],
          ['Priority', (r) => (r.priority === undefined ? '' : String(r.priority))],
          ['Status', (r) => h('span', { 'data-record-status': r.status }, badge(r.status), r.detail ? h('p', { class: 'muted' }, r.detail) : null)],
        ],
        d.records,
      ),
      h('h2', null, 'Tracking'),
      form(
        [
          { name: 'click_tracking', label: 'Click tracking', type: 'checkbox', value: d.click_tracking },
          { name: 'tracking_subdomain', label: 'Tracking subdomain label', value: d.tracking_subdomain ?? '' },
        ],
        'Save',
        async (v) => {
          draw(await patch(`/domains/${id}`, v))
          toast('Saved.')
        },
      ),
      h('h2', null, 'Remove'),
      removeButton(d),
    )
  }
  draw(await get(`/domains/${id}`))
}

function removeButton(d) {
  const b = h('button', { type: 'button', class: 'danger' }, `Remove ${d.name}`)
  b.addEventListener('click', () => {
    if (!confirm(`Remove ${d.name}? Mail from it stops being signed and sent.`)) return
    attempt(b.parentElement, b, async () => {
      await del(`/domains/${d.id}`)
      go('domains')
    })
  })
  return b
}

async function domains(main, [id]) {
  if (id) return domain(main, id)
  main.append(
    h('h1', null, 'Domains'),
    pagedTable((cursor) => get('/domains', { limit: 100, cursor }), [
      ['Domain', (d) => h('a', { href: `#/domains/${d.id}` }, d.name)],
      ['Status', (d) => badge(d.status)],
      ['Region', (d) => d.region],
      ['Added', (d) => when(d.created_at)],
    ], 'No domains yet: add the one you send from.'),
    h('h2', null, 'Add a domain'),
    form(
      [
        { name: 'name', label: 'Domain', required: true, placeholder: 'mail.example.com' },
        { name: 'region', label: 'Region', type: 'select', options: ['us', 'eu'] },
      ],
      'Add domain',
      async (v) => {
        const d = await post('/domains', v)
        go(`domains/${d.id}`)
      },
    ),
  )
}

export const domainPages = { domains }
