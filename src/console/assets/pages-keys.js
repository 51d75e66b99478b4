// Agent actions waiting for a person, and API keys with their limits.
import { del, get, patch, post } from './api.js'
import { attempt, badge, clear, code, copyButton, fields, form, h, json, pagedTable, secretBox, table, toast, when } from './ui.js'

/** What an approval will do, in words, before the exact request (shapes of src/emails/send.ts and friends). */
function consequence(a) {
  const r = a.request
  const mail = (m) => `from ${m.from ?? '(default sender)'} to ${[m.to].flat().filter(Boolean).join(', ')}, subject “${m.subject ?? ''}”`
  switch (a.kind) {
    case 'send_email':
      return `Sends one email ${mail(r.input ?? {})}.`
    case 'send_batch':
      return `Sends a batch of ${r.items?.length ?? 'several'} emails${r.items?.[0] ? `, the first ${mail(r.items[0])}` : ''}.`
    case 'reply':
      return `Sends a reply to inbound email ${r.inbound_id}.`
    case 'send_broadcast':
      return `Starts sending broadcast ${r.broadcast_id} to its whole segment.`
    case 'raise_key_limits':
      return `Raises the limits of API key ${r.key_id}: ${JSON.stringify(r.input)}.`
    default:
      return a.kind
  }
}

function actionCard(a, reload, notice) {
  const box = h('article', { class: 'card', 'data-action': a.id, 'aria-label': `Agent action ${a.kind}` })
  const decide = (verb) => {
    const b = h('button', { type: 'button', class: verb === 'reject' ? 'danger' : undefined }, verb === 'approve' ? 'Approve and run' : 'Reject')
    b.addEventListener('click', () =>
      attempt(box, b, async () => {
        const done = await post(`/agent-actions/${a.id}/${verb}`)
        toast(verb === 'approve' ? 'Approved: the action ran.' : 'Rejected: it will not run.')
        clear(notice, h('div', { class: 'secret', 'data-decided': done.id }, h('p', null, badge(done.status), ' ', consequence(done)), done.result ? json(done.result) : null))
        await reload()
      }),
    )
    return b
  }
  box.append(
    h('h3', null, consequence(a)),
    fields({ Why: `${a.reason}: ${a.detail}`, 'Asked by key': code(a.api_key_id), Asked: when(a.created_at), Expires: when(a.expires_at) }),
    h('details', null, h('summary', null, 'The exact request'), json(a.request)),
    a.status === 'pending' ? h('div', { class: 'row' }, decide('approve'), decide('reject')) : h('p', null, badge(a.status), ` by ${a.decided_by ?? '—'} at ${when(a.decided_at)}`),
  )
  return box
}

async function actions(main) {
  main.append(h('h1', null, 'Agent actions'), h('p', { class: 'muted' }, 'An agent’s key asked for something that needs a person. Approving runs it once, exactly as asked; rejecting means it never runs.'))
  const notice = h('section', { 'aria-live': 'polite' })
  const pending = h('section', { 'aria-label': 'Pending' })
  const past = h('section', { 'aria-label': 'Decided' })
  main.append(notice, h('h2', null, 'Waiting for you'), pending, h('h2', null, 'Past decisions'), past)
  async function reload() {
    const list = await get('/agent-actions', { status: 'pending', limit: 100 })
    clear(pending, list.data.length ? list.data.map((a) => actionCard(a, reload, notice)) : h('p', { class: 'muted' }, 'Nothing is waiting.'))
    clear(
      past,
      pagedTable((cursor) => get('/agent-actions', { limit: 50, cursor }), [
        ['Action', (a) => consequence(a)],
        ['Status', (a) => badge(a.status)],
        ['Decided by', (a) => a.decided_by ?? '—'],
        ['When', (a) => when(a.decided_at ?? a.created_at)],
      ]),
    )
  }
  await reload()
}

const PERIODS = ['hourly', 'daily', 'weekly', 'monthly']
const GUARDS = ['off', 'warn', 'hold', 'block']
const numberOrNull = (v) => (v === undefined ? null : v)

function keyRow(k, reload, notice) {
  const actionsCell = h('div', { class: 'row' })
  if (k.paused_at) {
    const b = h('button', { type: 'button' }, 'Resume')
    b.addEventListener('click', () =>
      attempt(notice, b, async () => {
        await post(`/api-keys/${k.id}/resume`)
        toast(`Key “${k.name}” resumed.`)
        reload()
      }),
    )
    actionsCell.append(b)
  }
  const limits = h('button', { type: 'button', class: 'secondary' }, 'Limits')
  limits.addEventListener('click', async () => {
    const l = await attempt(notice, limits, () => get(`/limits/keys/${k.id}`))
    if (!l) return
    clear(
      notice,
      h('h2', null, `Limits of “${k.name}”`),
      fields({ Used: `${l.used} of ${l.budget_per_period ?? 'unlimited'} this ${l.period} period`, Resets: when(l.resets_at), 'Rate ceiling': l.rate_ceiling_per_minute ?? 'account default', 'Loop guard': l.loop_guard }),
      form(
        [
          { name: 'budget_per_period', label: 'Budget per period (emails; empty is unlimited)', type: 'number', min: 0, value: l.budget_per_period ?? '' },
          { name: 'period', label: 'Period', type: 'select', options: PERIODS, value: l.period },
          { name: 'rate_ceiling_per_minute', label: 'Rate ceiling per minute (empty: account default)', type: 'number', min: 1, value: l.rate_ceiling_per_minute ?? '' },
          { name: 'loop_guard', label: 'Loop guard', type: 'select', options: GUARDS, value: l.loop_guard },
        ],
        'Save limits',
        async (v) => {
          await patch(`/limits/keys/${k.id}`, { ...v, budget_per_period: numberOrNull(v.budget_per_period), rate_ceiling_per_minute: numberOrNull(v.rate_ceiling_per_minute) })
          toast('Limits saved.')
          reload()
        },
      ),
    )
    notice.scrollIntoView()
  })
  const rotate = h('button', { type: 'button', class: 'secondary' }, 'Rotate')
  rotate.addEventListener('click', () =>
    clear(
      notice,
      h('h2', null, `Rotate “${k.name}”`),
      form([{ name: 'grace_hours', label: 'The old token keeps working for', type: 'select', options: ['24', '1', '0'] }], 'Rotate now', async (v) => {
        const r = await post(`/api-keys/${k.id}/rotate`, { grace_hours: Number(v.grace_hours) })
        clear(notice, secretBox('New token', r.token, `Shown only now. The old token stops working ${when(r.previous_key_expires_at)}.`))
        reload()
      }),
    ),
  )
  const revoke = h('button', { type: 'button', class: 'danger' }, 'Revoke')
  revoke.addEventListener('click', () => {
    if (!confirm(`Revoke “${k.name}”? Calls with it fail at once, and it cannot be restored.`)) return
    attempt(notice, revoke, async () => {
      await del(`/api-keys/${k.id}`)
      toast(`Key “${k.name}” revoked.`)
      reload()
    })
  })
  actionsCell.append(limits, rotate, revoke)
  return actionsCell
}

async function keys(main) {
  main.append(h('h1', null, 'API keys'))
  const notice = h('section', { 'aria-live': 'polite' })
  const list = h('section')
  async function reload() {
    const page = await get('/api-keys', { limit: 500 })
    clear(
      list,
      table(
        [
          ['Name', (k) => k.name],
          ['Token', (k) => code(`${k.token_prefix}…`)],
          ['Permission', (k) => k.permission],
          ['Domain', (k) => k.domain_scope ?? 'any'],
          ['Budget', (k) => (k.budget_per_period === null ? 'unlimited' : `${k.budget_per_period} / ${k.period}`)],
          ['Rate ceiling', (k) => (k.rate_ceiling_per_minute === null ? '—' : `${k.rate_ceiling_per_minute}/min`)],
          ['Last used', (k) => when(k.last_used_at)],
          ['State', (k) => (k.paused_at ? h('span', null, badge('paused'), ' ', k.paused_reason ?? '') : badge('active'))],
          ['', (k) => keyRow(k, reload, notice)],
        ],
        page.data,
        'No keys.',
      ),
    )
  }
  main.append(
    notice,
    list,
    h('h2', null, 'Create a key'),
    form(
      [
        { name: 'name', label: 'Name', required: true },
        { name: 'permission', label: 'Permission', type: 'select', options: ['sending_access', 'full_access'] },
        { name: 'domain_scope', label: 'Only send from domain (optional)' },
        { name: 'budget_per_period', label: 'Budget per period (emails, optional)', type: 'number', min: 0 },
        { name: 'period', label: 'Period', type: 'select', options: PERIODS, value: 'daily' },
        { name: 'rate_ceiling_per_minute', label: 'Rate ceiling per minute (optional)', type: 'number', min: 1 },
      ],
      'Create key',
      async (v, el) => {
        const k = await post('/api-keys', v)
        clear(notice, secretBox('New token', k.token, `The token of “${k.name}”, shown only now: copy it into your agent’s settings.`))
        el.reset()
        reload()
      },
    ),
  )
  await reload()
}

export const keyPages = { actions, keys }
