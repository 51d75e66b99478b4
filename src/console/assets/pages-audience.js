// Webhooks, contacts, segments, topics, templates, broadcasts and automations.
import { del, get, patch, post } from './api.js'
import { go } from './app.js'
import { attempt, badge, clear, code, fields, form, h, json, mailFrame, pagedTable, secretBox, table, toast, when } from './ui.js'

const EVENT_KINDS = ['email.sent', 'email.delivered', 'email.delivery_delayed', 'email.bounced', 'email.complained', 'email.opened', 'email.clicked', 'email.failed', 'email.scheduled', 'email.suppressed', 'email.received', 'email.canceled', 'contact.created', 'contact.updated', 'contact.deleted', 'domain.created', 'domain.updated', 'domain.deleted']

const back = (path, label) => h('p', null, h('a', { href: `#/${path}` }, `← ${label}`))

/** A button that runs `fn` and reports its refusal in `where`. */
function action(label, where, fn, cls) {
  const b = h('button', { type: 'button', class: cls }, label)
  b.addEventListener('click', () => attempt(where, b, fn))
  return b
}

async function webhookEvent(main, id, eventId) {
  const box = h('div')
  main.append(back(`webhooks/${id}`, 'Endpoint'), box)
  async function draw() {
    const e = await get(`/webhooks/${id}/events/${eventId}`)
    clear(
      box,
      h('h1', null, e.type, ' ', badge(e.status)),
      h('p', { class: 'row' }, action('Replay', box, async () => {
        await post(`/webhooks/${id}/events/${eventId}/replay`)
        toast('Queued for delivery again.')
        await draw()
      })),
      h('h2', null, 'Attempts'),
      table(
        [
          ['Sent', (a) => when(a.sent_at)],
          ['Status', (a) => (a.http_status_code === null ? 'no answer' : String(a.http_status_code))],
          ['Outcome', (a) => badge(a.outcome)],
          ['Took', (a) => `${a.duration_ms} ms`],
          ['Response', (a) => code(a.response)],
        ],
        e.attempts,
        e.next_attempt_at ? `Not tried yet; due ${when(e.next_attempt_at)}.` : 'No attempts.',
      ),
      h('h2', null, 'Payload'),
      json(e.payload),
    )
  }
  await draw()
}

async function webhooks(main, [id, , eventId]) {
  if (id && eventId) return webhookEvent(main, id, eventId)
  if (id) {
    const w = await get(`/webhooks/${id}`)
    const box = h('div')
    return main.append(
      back('webhooks', 'Webhooks'),
      h('h1', null, w.url),
      box,
      fields({ Events: w.events.join(', '), Disabled: w.disabled ? 'yes' : 'no', Created: when(w.created_at) }),
      h('p', { class: 'row' },
        action('Send a test event', box, async () => (await post(`/webhooks/${id}/test`, {}), toast('Test event sent.'))),
        action(w.disabled ? 'Enable' : 'Disable', box, async () => (await patch(`/webhooks/${id}`, { disabled: !w.disabled }), go(`webhooks/${id}`), location.reload())),
        action('Rotate signing secret', box, async () => clear(box, secretBox('New signing secret', (await post(`/webhooks/${id}/signing-secret/rotate`)).signing_secret, 'Shown only now; the old one signs too for 24 hours.'))),
        action('Delete', box, async () => confirm('Delete this endpoint?') && (await del(`/webhooks/${id}`), go('webhooks')), 'danger'),
      ),
      h('h2', null, 'Delivery log'),
      pagedTable((cursor) => get(`/webhooks/${id}/events`, { limit: 50, cursor }), [
        ['Event', (e) => h('a', { href: `#/webhooks/${id}/events/${e.id}` }, e.type)],
        ['Status', (e) => badge(e.status)],
        ['Attempts', (e) => String(e.attempt_count)],
        ['Last HTTP status', (e) => (e.last_status_code === null ? '—' : String(e.last_status_code))],
        ['Created', (e) => when(e.created_at)],
      ], 'No events delivered yet.'),
    )
  }
  const notice = h('div')
  main.append(
    h('h1', null, 'Webhooks'),
    notice,
    pagedTable((cursor) => get('/webhooks', { limit: 100, cursor }), [
      ['Endpoint', (w) => h('a', { href: `#/webhooks/${w.id}` }, w.url)],
      ['Events', (w) => w.events.join(', ')],
      ['State', (w) => badge(w.disabled ? 'disabled' : 'enabled')],
    ], 'No endpoints.'),
    h('h2', null, 'Add an endpoint'),
    form(
      [{ name: 'url', label: 'URL', type: 'url', required: true, placeholder: 'https://example.com/hooks/mailroom' }, ...EVENT_KINDS.map((k) => ({ name: k, label: k, type: 'checkbox', value: k.startsWith('email.') }))],
      'Add endpoint',
      async (v) => {
        const w = await post('/webhooks', { url: v.url, events: EVENT_KINDS.filter((k) => v[k]) })
        clear(notice, secretBox('Signing secret', w.signing_secret, 'Shown only now: verify each delivery’s signature with it.'))
      },
    ),
  )
}

async function contacts(main, [id]) {
  if (id) {
    const c = await get(`/contacts/${encodeURIComponent(id)}`)
    const [segs, topics] = await Promise.all([get(`/contacts/${c.id}/segments`), get(`/contacts/${c.id}/topics`)])
    return main.append(
      back('contacts', 'Contacts'),
      h('h1', null, c.email),
      fields({ 'First name': c.first_name, 'Last name': c.last_name, Unsubscribed: c.unsubscribed ? 'yes' : 'no', Created: when(c.created_at) }),
      h('h2', null, 'Segments'),
      table([['Segment', (s) => h('a', { href: `#/segments/${s.id}` }, s.name)]], segs.data, 'In no segment.'),
      h('h2', null, 'Topics'),
      table([['Topic', (t) => t.name ?? t.topic_id ?? t.id], ['Subscribed', (t) => (t.subscribed ? 'yes' : 'no')]], topics.data, 'No topics.'),
      h('h2', null, 'Properties'),
      json(c.properties ?? {}),
    )
  }
  const results = h('div')
  const search = (v) =>
    clear(results, pagedTable((cursor) => get('/contacts', { ...v, limit: 100, cursor }), [
      ['Email', (c) => h('a', { href: `#/contacts/${c.id}` }, c.email)],
      ['Name', (c) => [c.first_name, c.last_name].filter(Boolean).join(' ')],
      ['Unsubscribed', (c) => (c.unsubscribed ? 'yes' : 'no')],
      ['Created', (c) => when(c.created_at)],
    ], 'No contacts.'))
  main.append(
    h('h1', null, 'Contacts'),
    form([{ name: 'email', label: 'Email', type: 'search' }], 'Search', async (v) => search(v), { inline: true }),
    results,
    h('h2', null, 'Add a contact'),
    form(
      [
        { name: 'email', label: 'Email', type: 'email', required: true },
        { name: 'first_name', label: 'First name' },
        { name: 'last_name', label: 'Last name' },
      ],
      'Add contact',
      async (v) => go(`contacts/${(await post('/contacts', v)).id}`),
    ),
  )
  search({})
}

async function segments(main, [id]) {
  if (id) {
    const s = await get(`/segments/${id}`)
    const box = h('div')
    return main.append(
      back('segments', 'Segments'),
      h('h1', null, s.name),
      box,
      fields({ Type: s.type, Match: s.match, Created: when(s.created_at) }),
      s.rules.length ? [h('h2', null, 'Rules'), json(s.rules)] : null,
      h('h2', null, 'Members'),
      pagedTable((cursor) => get(`/segments/${id}/contacts`, { limit: 100, cursor }), [['Email', (c) => h('a', { href: `#/contacts/${c.id}` }, c.email)], ['Unsubscribed', (c) => (c.unsubscribed ? 'yes' : 'no')]], 'No members.'),
      h('p', null, action('Delete segment', box, async () => confirm(`Delete ${s.name}?`) && (await del(`/segments/${id}`), go('segments')), 'danger')),
    )
  }
  main.append(
    h('h1', null, 'Segments'),
    pagedTable((cursor) => get('/segments', { limit: 100, cursor }), [
      ['Name', (s) => h('a', { href: `#/segments/${s.id}` }, s.name)],
      ['Type', (s) => s.type],
      ['Created', (s) => when(s.created_at)],
    ], 'No segments.'),
    h('h2', null, 'Create a segment'),
    form([{ name: 'name', label: 'Name', required: true }], 'Create segment', async (v) => go(`segments/${(await post('/segments', v)).id}`)),
  )
}

async function topics(main) {
  const list = h('div')
  const draw = () =>
    clear(list, pagedTable((cursor) => get('/topics', { limit: 100, cursor }), [
      ['Name', (t) => t.name],
      ['Description', (t) => t.description ?? ''],
      ['Default', (t) => (t.default_subscribed ? 'subscribed (opt-out)' : 'not subscribed (opt-in)')],
      ['', (t) => action('Delete', list, async () => confirm(`Delete topic ${t.name} and every answer to it?`) && (await del(`/topics/${t.id}`), draw()), 'danger')],
    ], 'No topics.'))
  main.append(
    h('h1', null, 'Topics'),
    list,
    h('h2', null, 'Create a topic'),
    form(
      [
        { name: 'name', label: 'Name', required: true },
        { name: 'description', label: 'Description' },
        { name: 'default_subscribed', label: 'Contacts are subscribed unless they opt out', type: 'checkbox' },
      ],
      'Create topic',
      async (v, el) => (await post('/topics', v), el.reset(), draw()),
    ),
  )
  draw()
}

async function template(main, id) {
  const t = await get(`/templates/${id}`)
  const preview = h('div')
  const box = h('div')
  const render = async (variables = {}) => {
    const r = await post(`/templates/${id}/render`, { variables })
    clear(preview, h('p', null, h('strong', null, 'Subject: '), r.subject ?? '—'), mailFrame(r.html, 'Rendered template'), r.text ? h('details', null, h('summary', null, 'Text version'), h('pre', null, r.text)) : null)
  }
  main.append(
    back('templates', 'Templates'),
    h('h1', null, t.name, ' ', badge(t.status)),
    box,
    fields({ Alias: t.alias, From: t.from, Subject: t.subject, 'Unpublished changes': t.has_unpublished_versions ? 'yes' : 'no', Updated: when(t.updated_at) }),
    h('p', { class: 'row' },
      action('Publish', box, async () => (await post(`/templates/${id}/publish`), toast('Published.'))),
      action('Duplicate', box, async () => go(`templates/${(await post(`/templates/${id}/duplicate`)).id}`)),
      action('Delete', box, async () => confirm(`Delete ${t.name}?`) && (await del(`/templates/${id}`), go('templates')), 'danger'),
    ),
    h('h2', null, 'Preview'),
    t.variables.length
      ? form(t.variables.map((v) => ({ name: v.key, label: `${v.key} (${v.type})`, value: v.fallback_value ?? '' })), 'Render', (v) => render(v), { inline: true })
      : null,
    preview,
    h('h2', null, 'Edit the draft'),
    form(
      [
        { name: 'subject', label: 'Subject', value: t.subject ?? '' },
        { name: 'html', label: 'HTML', type: 'textarea', value: t.html, required: true },
      ],
      'Save draft',
      async (v) => (await patch(`/templates/${id}`, v), render(), toast('Draft saved.')),
    ),
  )
  await attempt(preview, null, () => render())
}

async function templates(main, [id]) {
  if (id) return template(main, id)
  main.append(
    h('h1', null, 'Templates'),
    pagedTable((cursor) => get('/templates', { limit: 100, cursor }), [
      ['Name', (t) => h('a', { href: `#/templates/${t.id}` }, t.name)],
      ['Alias', (t) => t.alias ?? ''],
      ['Status', (t) => badge(t.status)],
      ['Updated', (t) => when(t.updated_at)],
    ], 'No templates.'),
    h('h2', null, 'Create a template'),
    form(
      [
        { name: 'name', label: 'Name', required: true },
        { name: 'subject', label: 'Subject' },
        { name: 'html', label: 'HTML', type: 'textarea', required: true },
      ],
      'Create template',
      async (v) => go(`templates/${(await post('/templates', v)).id}`),
    ),
  )
}

async function broadcasts(main, [id]) {
  if (id) {
    const b = await get(`/broadcasts/${id}`)
    const box = h('div')
    const count = String(b.recipient_count ?? b.estimated_recipient_count ?? 'counted when sending starts')
    return main.append(
      back('broadcasts', 'Broadcasts'),
      h('h1', null, b.name ?? b.subject, ' ', badge(b.status)),
      box,
      fields({ Subject: b.subject, From: b.from, Segment: h('a', { href: `#/segments/${b.segment_id}` }, b.segment_id), 'Effective recipients': h('span', { 'data-testid': 'recipient-count' }, count), Scheduled: when(b.scheduled_at), Sent: when(b.sent_at) }),
      h('p', { class: 'row' },
        b.status === 'draft' ? action('Send now', box, async () => confirm(`Send “${b.subject}” to ${count} recipients?`) && (await post(`/broadcasts/${id}/send`, {}), location.reload())) : null,
        b.status === 'scheduled' || b.status === 'queued' || b.status === 'sending' ? action('Cancel', box, async () => (await post(`/broadcasts/${id}/cancel`), location.reload()), 'danger') : null,
        action('Duplicate', box, async () => go(`broadcasts/${(await post(`/broadcasts/${id}/duplicate`)).id}`)),
      ),
      h('h2', null, 'Counts'),
      h('div', { class: 'cards' }, Object.entries(b.counts).map(([k, v]) => h('div', { class: 'card' }, k, h('b', null, String(v))))),
      h('h2', null, 'Content'),
      b.html ? mailFrame(b.html) : h('pre', null, b.text ?? ''),
    )
  }
  main.append(
    h('h1', null, 'Broadcasts'),
    pagedTable((cursor) => get('/broadcasts', { limit: 100, cursor }), [
      ['Name', (b) => h('a', { href: `#/broadcasts/${b.id}` }, b.name ?? b.id)],
      ['Status', (b) => badge(b.status)],
      ['Segment', (b) => b.segment_id],
      ['Created', (b) => when(b.created_at)],
    ], 'No broadcasts.'),
    h('h2', null, 'New broadcast draft'),
    form(
      [
        { name: 'name', label: 'Name' },
        { name: 'segment_id', label: 'Segment id', required: true },
        { name: 'from', label: 'From', required: true },
        { name: 'subject', label: 'Subject', required: true },
        { name: 'html', label: 'HTML', type: 'textarea' },
      ],
      'Create draft',
      async (v) => go(`broadcasts/${(await post('/broadcasts', v)).id}`),
    ),
  )
}

async function automations(main, [id, , runId]) {
  if (id && runId) {
    const r = await get(`/automations/${id}/runs/${runId}`)
    return main.append(
      back(`automations/${id}`, 'Automation'),
      h('h1', null, `Run ${r.id}`, ' ', badge(r.status)),
      fields({ Contact: h('a', { href: `#/contacts/${r.contact_id}` }, r.contact_id), Trigger: r.trigger.event, 'Current step': r.current_step, Started: when(r.started_at), Completed: when(r.completed_at) }),
      table([['Step', (s) => s.key], ['Type', (s) => s.type], ['Status', (s) => badge(s.status)], ['Attempts', (s) => String(s.attempts)], ['Error', (s) => s.error?.message ?? '']], r.steps),
    )
  }
  if (id) {
    const a = await get(`/automations/${id}`)
    const box = h('div')
    return main.append(
      back('automations', 'Automations'),
      h('h1', null, a.name, ' ', badge(a.status)),
      box,
      h('p', { class: 'row' }, action(a.status === 'enabled' ? 'Disable' : 'Enable', box, async () => (await post(`/automations/${id}/${a.status === 'enabled' ? 'disable' : 'enable'}`), location.reload()))),
      fields({ Version: a.version, Steps: a.steps.length, Updated: when(a.updated_at) }),
      h('h2', null, 'Runs'),
      pagedTable((cursor) => get(`/automations/${id}/runs`, { limit: 50, cursor }), [
        ['Run', (r) => h('a', { href: `#/automations/${id}/runs/${r.id}` }, when(r.created_at))],
        ['Status', (r) => badge(r.status)],
        ['Contact', (r) => r.contact_id],
        ['At step', (r) => r.current_step ?? '—'],
      ], 'No runs yet.'),
      h('h2', null, 'Steps'),
      json(a.steps),
    )
  }
  main.append(
    h('h1', null, 'Automations'),
    pagedTable((cursor) => get('/automations', { limit: 100, cursor }), [
      ['Name', (a) => h('a', { href: `#/automations/${a.id}` }, a.name)],
      ['Trigger', (a) => a.trigger],
      ['Status', (a) => badge(a.status)],
      ['Version', (a) => String(a.version)],
    ], 'No automations: create them through the API (POST /automations).'),
  )
}

export const audiencePages = { webhooks, contacts, segments, topics, templates, broadcasts, automations }
