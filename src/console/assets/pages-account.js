// The team, billing, support requests and the audit log.
import { del, get, patch, post } from './api.js'
import { attempt, badge, clear, code, errorBox, fields, form, h, json, pagedTable, secretBox, table, toast, when } from './ui.js'

const ROLES = ['viewer', 'developer', 'admin', 'owner']

async function team(main) {
  const notice = h('div', { 'aria-live': 'polite' })
  const box = h('div')
  main.append(h('h1', null, 'Team'), notice, box)
  async function draw() {
    const t = await get('/team')
    clear(
      box,
      h('p', null, `${t.seats.members} members, ${t.seats.pending} pending invitations, ${t.seats.limit === null ? 'no seat limit' : `${t.seats.available} of ${t.seats.limit} seats free`}.`),
      table(
        [
          ['Member', (m) => `${m.name ?? ''} ${m.email}`.trim()],
          ['Two-factor', (m) => (m.two_factor_enabled ? 'on' : 'off')],
          ['Role', (m) => {
            const select = h('select', { 'aria-label': `Role of ${m.email}` }, ROLES.map((r) => h('option', { value: r, selected: r === m.role }, r)))
            select.addEventListener('change', () => attempt(notice, select, async () => (await patch(`/team/members/${m.id}`, { role: select.value }), toast('Role changed.'))).then(draw))
            return select
          }],
          ['', (m) => {
            const b = h('button', { type: 'button', class: 'danger' }, 'Remove')
            b.addEventListener('click', () => confirm(`Remove ${m.email} from the account?`) && attempt(notice, b, async () => (await del(`/team/members/${m.id}`), draw())))
            return b
          }],
        ],
        t.members,
      ),
      h('h2', null, 'Pending invitations'),
      table(
        [
          ['Address', (i) => i.email],
          ['Role', (i) => i.role],
          ['Expires', (i) => when(i.expires_at)],
          ['', (i) => {
            const b = h('button', { type: 'button', class: 'secondary' }, 'Cancel')
            b.addEventListener('click', () => attempt(notice, b, async () => (await del(`/team/invites/${i.id}`), draw())))
            return b
          }],
        ],
        t.invites,
        'No pending invitations.',
      ),
    )
  }
  main.append(
    h('h2', null, 'Invite someone'),
    form(
      [
        { name: 'email', label: 'Email', type: 'email', required: true },
        { name: 'role', label: 'Role', type: 'select', options: ROLES, value: 'developer' },
      ],
      'Send invitation',
      async (v, el) => {
        const i = await post('/team/invites', v)
        clear(notice, i.delivery === 'link' ? secretBox('Invitation link', i.url, 'No verified domain could email it: pass this link on yourself.') : h('p', null, `Invitation emailed to ${i.email}.`))
        el.reset()
        draw()
      },
    ),
  )
  await draw()
}

async function billing(main) {
  main.append(h('h1', null, 'Billing'))
  let plan
  try {
    plan = await get('/billing/plan')
  } catch (err) {
    if (err.code === 'billing_not_configured') return main.append(h('p', { 'data-testid': 'billing-off' }, 'Billing is not configured on this server: nothing to pay, and no plan limits from a payment provider.'))
    return main.append(errorBox(err))
  }
  const box = h('div')
  main.append(
    box,
    fields(Object.fromEntries(Object.entries(plan).filter(([, v]) => typeof v !== 'object' || v === null))),
    h('p', { class: 'row' },
      button('Start the 14-day trial', box, () => post('/billing/trial', {}).then(() => location.reload())),
      button('Manage subscription', box, async () => (location.href = (await post('/billing/portal', {})).url)),
    ),
    h('h2', null, 'Buy a plan'),
    form(
      [
        { name: 'plan', label: 'Plan', type: 'select', options: ['starter', 'pro', 'scale'] },
        { name: 'term', label: 'Term', type: 'select', options: ['monthly', 'yearly'] },
      ],
      'Go to checkout',
      async (v) => (location.href = (await post('/billing/checkout', v)).url),
    ),
    h('h2', null, 'Invoices'),
    pagedTable((cursor) => get('/billing/invoices', { limit: 50, cursor }), [
      ['Date', (i) => when(i.created_at)],
      ['Amount', (i) => String(i.amount ?? i.total ?? '')],
      ['Status', (i) => badge(i.status)],
    ], 'No invoices.'),
  )
}

function button(label, where, fn, cls) {
  const b = h('button', { type: 'button', class: cls }, label)
  b.addEventListener('click', () => attempt(where, b, fn))
  return b
}

async function support(main, [id]) {
  if (id) {
    const r = await get(`/support/requests/${id}`)
    const box = h('div')
    return main.append(
      h('p', null, h('a', { href: '#/support' }, '← Support')),
      h('h1', null, r.subject, ' ', badge(r.status)),
      box,
      table([['When', (m) => when(m.created_at)], ['From', (m) => (m.author ? `${m.author.type} ${m.author.id}` : '')], ['Message', (m) => h('pre', null, m.body)], ['Files', (m) => m.attachments.map((f) => f.filename).join(', ')]], r.messages, 'No messages.'),
      form([{ name: 'message', label: 'Reply', type: 'textarea', required: true }], 'Send reply', async (v) => (await post(`/support/requests/${id}/replies`, v), location.reload())),
      h('p', { class: 'row' },
        r.status === 'closed' ? button('Reopen', box, async () => (await post(`/support/requests/${id}/reopen`, {}), location.reload())) : button('Close', box, async () => (await post(`/support/requests/${id}/close`, {}), location.reload()), 'secondary'),
      ),
    )
  }
  main.append(
    h('h1', null, 'Support'),
    pagedTable((cursor) => get('/support/requests', { limit: 50, cursor }), [
      ['Request', (r) => h('a', { href: `#/support/${r.id}` }, r.subject)],
      ['Status', (r) => badge(r.status)],
      ['Opened', (r) => when(r.created_at)],
    ], 'No support requests.'),
    h('h2', null, 'Ask for help'),
    form(
      [
        { name: 'subject', label: 'Subject', required: true },
        { name: 'message', label: 'What happened', type: 'textarea', required: true },
      ],
      'Open request',
      async (v) => (location.hash = `#/support/${(await post('/support/requests', v)).id}`),
    ),
  )
}

async function audit(main, [id]) {
  if (id) {
    const e = await get(`/audit/${id}`)
    return main.append(
      h('p', null, h('a', { href: '#/audit' }, '← Audit log')),
      h('h1', null, `${e.resource} ${e.action}`),
      fields({ Resource: code(e.resource_id), By: e.actor.kind === 'key' ? `key ${e.actor.key_id}` : e.actor.kind === 'session' ? `person ${e.actor.person_id}` : 'the service', When: when(e.created_at) }),
      h('h2', null, 'Before'),
      json(e.before),
      h('h2', null, 'After'),
      json(e.after),
    )
  }
  const results = h('div')
  const search = (v) =>
    clear(results, pagedTable((cursor) => get('/audit', { ...v, limit: 100, cursor }), [
      ['When', (e) => h('a', { href: `#/audit/${e.id}` }, when(e.created_at))],
      ['Change', (e) => `${e.resource} ${e.action}`],
      ['Resource', (e) => code(e.resource_id)],
      ['By', (e) => (e.actor.kind === 'key' ? `key ${e.actor.key_id}` : e.actor.kind === 'session' ? 'console session' : 'the service')],
    ], 'Nothing recorded.'))
  main.append(h('h1', null, 'Audit log'), form([{ name: 'resource', label: 'Resource', type: 'search' }], 'Filter', async (v) => search(v), { inline: true }), results)
  search({})
}

export const accountPages = { team, billing, support, audit }
