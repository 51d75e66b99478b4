// Small DOM helpers. Data only ever becomes text nodes and attributes, never markup.

export function h(tag, props, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else if (k === 'class') el.className = v
    else if (k === 'value') el.value = v
    else if (k === 'checked') el.checked = Boolean(v)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  append(el, children)
  return el
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue
    el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
}

export const clear = (el, ...children) => (el.replaceChildren(), append(el, children), el)

export const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—')

export const code = (text) => h('code', null, text)

const GOOD = new Set(['delivered', 'verified', 'approved', 'active', 'sent', 'completed', 'enabled', 'succeeded', 'opened', 'clicked', 'accepted'])
const BAD = new Set(['bounced', 'failed', 'complained', 'rejected', 'suppressed', 'canceled', 'cancelled', 'revoked', 'paused', 'expired', 'disabled'])

/** A state as a labelled badge: its word is the meaning, the colour only repeats it. */
export const badge = (state) => h('span', { class: `status ${GOOD.has(state) ? 'good' : BAD.has(state) ? 'bad' : 'wait'}` }, state ?? '—')

let toastTimer
export function toast(message) {
  const el = document.getElementById('toast')
  el.textContent = message
  clearTimeout(toastTimer)
  toastTimer = setTimeout(() => (el.textContent = ''), 4000)
}

/** The catalogue's envelope as the person reads it: what went wrong, how to fix it, where the docs are. */
export function errorBox(err) {
  return h(
    'div',
    { class: 'error', role: 'alert', 'data-code': err.code },
    h('strong', null, err.message),
    err.fix ? h('p', null, 'Fix: ', err.fix) : null,
    h('p', { class: 'muted' }, 'Code ', code(err.code), err.docsUrl ? [' · ', h('a', { href: err.docsUrl, target: '_blank', rel: 'noopener' }, 'docs')] : null),
  )
}

/** Runs an action from a button or form, showing its refusal in `where` (or a toast) and keeping the control disabled meanwhile. */
export async function attempt(where, control, fn) {
  if (control) control.disabled = true
  where?.querySelectorAll(':scope > .error').forEach((e) => e.remove())
  try {
    return await fn()
  } catch (err) {
    if (where) where.prepend(errorBox(err))
    else toast(err.message)
    return undefined
  } finally {
    if (control) control.disabled = false
  }
}

async function writeClipboard(text) {
  try {
    await navigator.clipboard.writeText(text)
    return true
  } catch {
    // Older browsers, or a page without clipboard permission: a hidden textarea and the copy command.
    const ta = h('textarea', { readonly: true, 'aria-hidden': 'true', style: 'position:fixed;left:-999px' })
    ta.value = text
    document.body.append(ta)
    ta.select()
    const ok = document.execCommand('copy')
    ta.remove()
    return ok
  }
}

export function copyButton(text, label = 'Copy', what = 'value') {
  const b = h('button', { type: 'button', class: 'secondary', 'aria-label': `${label} ${what}` }, label)
  b.addEventListener('click', async () => {
    const ok = await writeClipboard(text)
    b.dataset.copied = ok ? 'true' : 'false'
    toast(ok ? `Copied the ${what}.` : `Could not copy the ${what}; select it and copy by hand.`)
  })
  return b
}

/** A secret shown exactly once, with its copy button. */
export const secretBox = (title, value, note) =>
  h('div', { class: 'secret', role: 'region', 'aria-label': title }, h('strong', null, title), h('p', null, h('code', { class: 'mono', 'data-secret': '' }, value), ' ', copyButton(value, 'Copy', title.toLowerCase())), note ? h('p', { class: 'muted' }, note) : null)

/**
 * A table of rows: columns are [label, row => cell]. An empty list says so in
 * words rather than showing an empty grid.
 */
export function table(columns, rows, empty = 'Nothing here yet.') {
  if (!rows.length) return h('p', { class: 'muted' }, empty)
  return h(
    'div',
    { class: 'table-wrap' },
    h('table', null, h('thead', null, h('tr', null, columns.map(([label]) => h('th', { scope: 'col' }, label)))), h('tbody', null, rows.map((r) => h('tr', null, columns.map(([, cell]) => h('td', null, cell(r))))))),
  )
}

/**
 * A list endpoint page by page: renders the rows it has and a "Load more"
 * button while the API says `has_more`.
 */
export function pagedTable(load, columns, empty) {
  const box = h('div', { 'aria-live': 'polite' })
  const rows = []
  let cursor
  const more = h('button', { type: 'button', class: 'secondary' }, 'Load more')
  async function next() {
    const page = await attempt(box, more, () => load(cursor))
    if (!page) return
    rows.push(...page.data)
    cursor = page.next_cursor ?? page.data.at(-1)?.id
    clear(box, table(columns, rows, empty), page.has_more ? more : null)
  }
  more.addEventListener('click', next)
  next()
  return box
}

export function fields(obj) {
  return h('dl', { class: 'fields' }, Object.entries(obj).map(([k, v]) => [h('dt', null, k), h('dd', null, v instanceof Node ? v : v === null || v === undefined || v === '' ? '—' : String(v))]))
}

export const json = (value) => h('pre', { class: 'mono' }, JSON.stringify(value, null, 2))

/**
 * A form from field specs: { name, label, type ('text', 'email', 'password',
 * 'number', 'textarea', 'select', 'checkbox'), options, value, required, hint }.
 * `submit` gets the values (numbers as numbers, empty fields left out) and its
 * refusal is shown above the form.
 */
export function form(specs, label, submit, { inline = false } = {}) {
  const wrap = h('div')
  const button = h('button', { type: 'submit' }, label)
  const controls = specs.map((s) => {
    const id = `f-${s.name}-${Math.random().toString(36).slice(2, 8)}`
    let input
    if (s.type === 'select') input = h('select', { id, name: s.name }, s.options.map((o) => h('option', { value: o, selected: o === s.value }, o)))
    else if (s.type === 'textarea') input = h('textarea', { id, name: s.name, required: s.required, placeholder: s.placeholder }, s.value ?? '')
    else if (s.type === 'checkbox') return h('label', { class: 'check', for: id }, h('input', { id, name: s.name, type: 'checkbox', checked: s.value }), s.label)
    else input = h('input', { id, name: s.name, type: s.type || 'text', required: s.required, value: s.value, placeholder: s.placeholder, autocomplete: s.autocomplete, inputmode: s.inputmode, min: s.min })
    return h('label', { for: id }, s.label, input, s.hint ? h('span', { class: 'muted' }, s.hint) : null)
  })
  const el = h('form', { class: inline ? 'inline' : 'stack' }, controls, h('div', null, button))
  el.addEventListener('submit', (e) => {
    e.preventDefault()
    const values = {}
    for (const s of specs) {
      const input = el.elements.namedItem(s.name)
      if (s.type === 'checkbox') values[s.name] = input.checked
      else if (input.value === '') continue
      else values[s.name] = s.type === 'number' ? Number(input.value) : input.value
    }
    attempt(wrap, button, () => submit(values, el))
  })
  wrap.append(el)
  return wrap
}

const COLOURS = ['#0b57d0', '#0d652d', '#a50e0e', '#7a4b00', '#6a1b9a', '#00695c']

/**
 * A line chart of daily series as SVG: one line per key, a labelled y axis and
 * the first and last day. The figures are in a table beside it for screen readers.
 */
export function chart(series, keys, title) {
  const W = 640, H = 220, L = 40, B = 24, T = 10
  const max = Math.max(1, ...series.flatMap((d) => keys.map((k) => d[k] ?? 0)))
  const x = (i) => L + (series.length < 2 ? 0 : (i * (W - L - 10)) / (series.length - 1))
  const y = (v) => T + (H - T - B) * (1 - v / max)
  const ns = 'http://www.w3.org/2000/svg'
  const svg = document.createElementNS(ns, 'svg')
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`)
  svg.setAttribute('class', 'chart')
  svg.setAttribute('role', 'img')
  svg.setAttribute('aria-label', title)
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag)
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v))
    if (text !== undefined) e.textContent = text
    svg.append(e)
  }
  el('line', { x1: L, y1: y(0), x2: W - 5, y2: y(0), stroke: '#767676' })
  el('text', { x: 2, y: y(max) + 10, 'font-size': 11, fill: '#1a1a1a' }, String(max))
  el('text', { x: 2, y: y(0), 'font-size': 11, fill: '#1a1a1a' }, '0')
  if (series.length) {
    el('text', { x: L, y: H - 6, 'font-size': 11, fill: '#1a1a1a' }, series[0].date)
    el('text', { x: W - 80, y: H - 6, 'font-size': 11, fill: '#1a1a1a' }, series.at(-1).date)
  }
  keys.forEach((k, i) => {
    const points = series.map((d, j) => `${x(j)},${y(d[k] ?? 0)}`).join(' ')
    el('polyline', { points, fill: 'none', stroke: COLOURS[i % COLOURS.length], 'stroke-width': 2, 'data-key': k })
  })
  const legend = h('div', { class: 'legend' }, keys.map((k, i) => h('span', { style: `--c:${COLOURS[i % COLOURS.length]}` }, k)))
  const figures = h('details', null, h('summary', null, 'Figures by day'), table([['Day', (d) => d.date], ...keys.map((k) => [k, (d) => String(d[k] ?? 0)])], series))
  return h('figure', { style: 'margin:0' }, svg, legend, figures)
}

/** Tabs over panels built on first view: [label, () => Node]. Arrow keys move between tabs. */
export function tabs(items) {
  const panel = h('div', { role: 'tabpanel', tabindex: '0' })
  const buttons = items.map(([label, build], i) => {
    const b = h('button', { type: 'button', role: 'tab', 'aria-selected': 'false', tabindex: '-1' }, label)
    b.addEventListener('click', () => select(i))
    b.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
        const j = (i + (e.key === 'ArrowRight' ? 1 : items.length - 1)) % items.length
        select(j)
        buttons[j].focus()
      }
    })
    b._build = build
    return b
  })
  function select(i) {
    buttons.forEach((b, j) => {
      b.setAttribute('aria-selected', String(i === j))
      b.tabIndex = i === j ? 0 : -1
    })
    clear(panel, buttons[i]._build())
  }
  const list = h('div', { class: 'tabs', role: 'tablist' }, buttons)
  if (items.length) select(0)
  return h('div', null, list, panel)
}

/**
 * An email's HTML in a frame that may run nothing and reach nothing: sandboxed
 * without scripts or same-origin, and its own policy on top of the page's.
 */
export function mailFrame(html, title = 'Email HTML') {
  const policy = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`
  return h('iframe', { class: 'mail', sandbox: '', referrerpolicy: 'no-referrer', title, srcdoc: policy + (html ?? '') })
}
