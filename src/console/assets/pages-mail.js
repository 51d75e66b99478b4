// The overview, sent emails with their timelines, and inbound mail with its threads.
import { get } from './api.js'
import { every } from './app.js'
import { attempt, badge, chart, clear, code, errorBox, fields, form, h, mailFrame, pagedTable, table, tabs, when } from './ui.js'

const SERIES = ['sent', 'delivered', 'bounced', 'complaints', 'opens', 'clicks']
/** States after which an email's timeline changes no more by itself (opens and clicks aside). */
const SETTLED = new Set(['delivered', 'bounced', 'failed', 'suppressed', 'canceled', 'complained', 'opened', 'clicked', 'unsubscribed'])

/** What needs a person first: the trust standing, paused keys, pending approvals. */
async function attention() {
  const box = h('section', { 'aria-label': 'Needs attention' })
  const [standing, keys, actions] = await Promise.allSettled([get('/trust/standing'), get('/api-keys', { limit: 100 }), get('/agent-actions', { status: 'pending', limit: 20 })])
  if (standing.status === 'fulfilled') {
    // The shape of GET /trust/standing (src/trust/schema.ts).
    const s = standing.value
    const cap = s.limits.daily_cap === null ? 'no daily cap' : `${s.limits.sent_today} of ${s.limits.daily_cap} emails sent today`
    box.append(
      h(
        'div',
        { class: 'banner', 'data-testid': 'standing' },
        h('strong', null, `Trust standing: ${s.level}, ${s.state}. `),
        cap,
        s.reasons.length ? h('ul', null, s.reasons.map((r) => h('li', null, r))) : null,
        s.next_level ? h('details', null, h('summary', null, `What raises it to ${s.next_level}`), h('ul', null, s.raises_it.map((r) => h('li', null, r.met ? '✓ ' : '✗ ', r.detail)))) : null,
      ),
    )
  } else if (standing.reason.code !== 'not_found') box.append(errorBox(standing.reason))
  const paused = keys.status === 'fulfilled' ? keys.value.data.filter((k) => k.paused_at) : []
  for (const k of paused) box.append(h('div', { class: 'banner', role: 'alert' }, h('strong', null, `API key “${k.name}” is paused by the kill switch. `), k.paused_reason ?? '', ' ', h('a', { href: '#/keys' }, 'Review and resume')))
  const pending = actions.status === 'fulfilled' ? actions.value.data : []
  if (pending.length) box.append(h('div', { class: 'banner', role: 'alert' }, h('strong', null, `${pending.length} agent action${pending.length > 1 ? 's' : ''} waiting for approval. `), h('a', { href: '#/actions' }, 'Decide')))
  return box
}

async function overview(main) {
  main.append(h('h1', null, 'Overview'), await attention())
  const box = h('section', { 'aria-label': 'Sending over time' })
  main.append(box)
  async function load(v = {}) {
    const m = await attempt(box, null, () => get('/metrics', v))
    if (!m) return
    clear(
      box,
      h('h2', null, `From ${m.since.slice(0, 10)} to ${m.until.slice(0, 10)}`),
      h('div', { class: 'cards' }, SERIES.map((k) => h('div', { class: 'card', 'data-metric': k }, k, h('b', null, String(m.totals[k] ?? 0))))),
      chart(m.series, SERIES, 'Sends, deliveries, bounces, complaints, opens and clicks by day'),
      form(
        [
          { name: 'since', label: 'From', type: 'date' },
          { name: 'until', label: 'To', type: 'date' },
        ],
        'Show',
        load,
        { inline: true },
      ),
    )
  }
  await load()
}

function emailLink(e) {
  return h('a', { href: `#/emails/${e.id}` }, e.subject || '(no subject)')
}

async function emails(main, [id]) {
  if (id) return email(main, id)
  main.append(h('h1', null, 'Emails'))
  const results = h('div')
  const search = (v) => {
    clear(results, pagedTable((cursor) => get('/emails', { ...v, limit: 50, cursor }), [
      ['Subject', emailLink],
      ['To', (e) => e.to.join(', ')],
      ['From', (e) => e.from],
      ['Status', (e) => badge(e.last_event)],
      ['Sent', (e) => when(e.created_at)],
    ], 'No email matches.'))
  }
  main.append(
    form(
      [
        { name: 'to', label: 'To', type: 'search' },
        { name: 'from', label: 'From', type: 'search' },
        { name: 'status', label: 'Status', type: 'select', options: ['', 'queued', 'scheduled', 'sent', 'delivered', 'delivery_delayed', 'bounced', 'failed', 'suppressed', 'canceled', 'complained', 'opened', 'clicked'] },
        { name: 'tag', label: 'Tag (name:value)', type: 'search' },
      ],
      'Search',
      async (v) => search(v),
      { inline: true },
    ),
    results,
  )
  search({})
}

/** An event's data: short ones inline, long ones (the checks at acceptance) folded. */
function detail(data) {
  if (!Object.keys(data).length) return ''
  const text = JSON.stringify(data)
  return text.length <= 120 ? code(text) : h('details', null, h('summary', null, 'Details'), h('pre', { class: 'mono' }, JSON.stringify(data, null, 2)))
}

function timeline(events) {
  return table(
    [
      ['When', (e) => when(e.created_at)],
      ['Event', (e) => badge(e.type)],
      ['Recipient', (e) => e.recipient ?? '—'],
      ['Detail', (e) => detail(e.data)],
    ],
    events,
    'No events yet.',
  )
}

function attempts(explain) {
  return explain.deliveries.map((d) =>
    h(
      'div',
      null,
      h('h3', null, d.recipient, ' ', badge(d.state)),
      d.suppressed ? h('p', null, `Suppressed since ${when(d.suppressed.since)}: ${d.suppressed.reason}`) : null,
      table(
        [
          ['Started', (a) => when(a.started_at)],
          ['Server', (a) => a.host ?? '—'],
          ['Reply', (a) => code([a.smtp_code, a.enhanced_code, a.response].filter(Boolean).join(' ') || '—')],
          ['Outcome', (a) => a.outcome],
          ['Took', (a) => `${a.duration_ms} ms`],
        ],
        d.history,
        d.next_attempt_at ? `No attempt yet; the next is due ${when(d.next_attempt_at)}.` : 'No delivery attempt was recorded.',
      ),
    ),
  )
}

function headerTable(list) {
  return table([['Header', (x) => x.name], ['Value', (x) => code(x.value)]], list)
}

async function email(main, id) {
  const head = h('div')
  const live = h('section', { 'aria-live': 'polite' })
  main.append(h('p', null, h('a', { href: '#/emails' }, '← Emails')), head, live)
  const e = await get(`/emails/${id}`)
  const content = tabs([
    ['HTML', () => (e.html ? mailFrame(e.html) : h('p', { class: 'muted' }, 'This email has no HTML part.'))],
    ['Text', () => h('pre', null, e.text ?? '(no text part)')],
    ['Headers', () => lazy(() => get(`/emails/${id}/mime`), (m) => headerTable(m.root.headers))],
    ['Raw source', () => lazy(() => get(`/emails/${id}/eml`), (raw) => h('pre', { class: 'mono' }, raw))],
  ])
  clear(
    head,
    h('h1', null, e.subject || '(no subject)'),
    fields({ From: e.from, To: e.to.join(', '), Cc: e.cc?.join(', '), Status: badge(e.last_event), Sent: when(e.created_at), Scheduled: when(e.scheduled_at), 'Message-ID': code(e.message_id), Simulator: e.simulator ? 'yes' : 'no' }),
  )
  async function refresh() {
    const [events, explain] = await Promise.all([get(`/emails/${id}/events`, { limit: 100 }), get(`/emails/${id}/explain`)])
    const last = events.data.at(-1)?.type ?? e.last_event
    clear(live, h('p', null, explain.summary), h('h2', null, 'Timeline'), h('div', { 'data-testid': 'timeline', 'data-last': last }, timeline(events.data)), h('h2', null, 'Delivery attempts'), attempts(explain))
    return last
  }
  const last = await refresh()
  main.append(h('h2', null, 'Content'), content)
  // Until the email settles, the timeline follows it.
  if (!SETTLED.has(last)) {
    const id2 = every(1500, async () => {
      const now = await refresh().catch(() => undefined)
      if (now && SETTLED.has(now)) clearInterval(id2)
    })
  }
}

/** A panel filled when its data arrives. */
function lazy(load, render) {
  const box = h('div', null, h('p', { class: 'muted' }, 'Loading…'))
  load().then(
    (v) => clear(box, render(v)),
    (err) => clear(box, errorBox(err)),
  )
  return box
}

async function inbound(main, [id]) {
  if (id) return inboundEmail(main, id)
  main.append(h('h1', null, 'Inbound mail'), h('p', null, h('a', { href: '#/threads' }, 'View by thread')))
  main.append(
    pagedTable((cursor) => get('/emails/receiving', { limit: 50, cursor }), [
      ['Subject', (e) => h('a', { href: `#/inbound/${e.id}` }, e.subject || '(no subject)')],
      ['From', (e) => e.from],
      ['For', (e) => e.received_for.join(', ')],
      ['Received', (e) => when(e.created_at)],
      ['Thread', (e) => h('a', { href: `#/threads/${e.thread_id}` }, 'thread')],
    ], 'No mail received yet.'),
  )
}

async function inboundEmail(main, id) {
  const e = await get(`/emails/receiving/${id}`)
  main.append(
    h('p', null, h('a', { href: '#/inbound' }, '← Inbound')),
    h('h1', null, e.subject || '(no subject)'),
    fields({ From: e.from, To: e.to.join(', '), 'Received for': e.received_for.join(', '), Received: when(e.created_at), Size: `${e.size} bytes`, Thread: h('a', { href: `#/threads/${e.thread_id}` }, 'view thread'), Attachments: e.attachments.map((a) => a.filename).join(', ') }),
    tabs([
      ['HTML', () => (e.html ? mailFrame(e.html) : h('p', { class: 'muted' }, 'No HTML part.'))],
      ['Text', () => h('pre', null, e.text ?? '(no text part)')],
      ['Headers', () => headerTable(Object.entries(e.headers).map(([name, value]) => ({ name, value })))],
      ['Raw source', () => lazy(() => get(`/emails/receiving/${id}/raw`), (raw) => h('pre', { class: 'mono' }, raw))],
    ]),
  )
}

async function threads(main, [id]) {
  if (id) {
    const t = await get(`/emails/receiving/threads/${id}`)
    return main.append(
      h('p', null, h('a', { href: '#/threads' }, '← Threads')),
      h('h1', null, t.subject || '(no subject)'),
      table(
        [
          ['When', (m) => when(m.created_at)],
          ['Direction', (m) => m.direction],
          ['From', (m) => m.from],
          ['Subject', (m) => h('a', { href: m.direction === 'inbound' ? `#/inbound/${m.id}` : `#/emails/${m.id}` }, m.subject || '(no subject)')],
          ['Status', (m) => badge(m.last_event)],
        ],
        t.messages,
      ),
    )
  }
  main.append(
    h('h1', null, 'Threads'),
    pagedTable((cursor) => get('/emails/receiving/threads', { limit: 50, cursor }), [
      ['Subject', (t) => h('a', { href: `#/threads/${t.id}` }, t.subject || '(no subject)')],
      ['Messages', (t) => String(t.message_count)],
      ['Last message', (t) => when(t.last_message_at)],
    ], 'No threads yet.'),
  )
}

export const mailPages = { '': overview, emails, inbound, threads }
