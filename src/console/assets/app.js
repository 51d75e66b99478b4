// The console's shell: who is signed in, the navigation, and a hash router that
// builds each page from the REST API.
import { get, post } from './api.js'
import { clear, errorBox, h } from './ui.js'
import { authPages } from './pages-auth.js'
import { mailPages } from './pages-mail.js'
import { keyPages } from './pages-keys.js'
import { domainPages } from './pages-domains.js'
import { audiencePages } from './pages-audience.js'
import { accountPages } from './pages-account.js'

const main = document.getElementById('main')
const nav = document.getElementById('nav')
const who = document.getElementById('who')

/** What the console knows about the session: the account, and the sign-in's answer (kept for this tab only). */
export const session = {
  account: null,
  get info() {
    return JSON.parse(sessionStorage.getItem('mailroom.session') || 'null')
  },
  set info(v) {
    if (v) sessionStorage.setItem('mailroom.session', JSON.stringify(v))
    else sessionStorage.removeItem('mailroom.session')
  },
}

/** Pages reached without a full session. */
const OPEN = new Set(['sign-in', 'sign-up', 'mfa', 'enrol'])

const SECTIONS = [
  ['', 'Overview'],
  ['emails', 'Emails'],
  ['inbound', 'Inbound'],
  ['actions', 'Agent actions'],
  ['keys', 'API keys'],
  ['domains', 'Domains'],
  ['webhooks', 'Webhooks'],
  ['contacts', 'Contacts'],
  ['segments', 'Segments'],
  ['topics', 'Topics'],
  ['templates', 'Templates'],
  ['broadcasts', 'Broadcasts'],
  ['automations', 'Automations'],
  ['team', 'Team'],
  ['billing', 'Billing'],
  ['support', 'Support'],
  ['audit', 'Audit log'],
]

const PAGES = { ...authPages, ...mailPages, ...keyPages, ...domainPages, ...audiencePages, ...accountPages }

/** Timers a page started (polling); stopped when the page is left. */
const timers = new Set()
export function every(ms, fn) {
  const id = setInterval(fn, ms)
  timers.add(id)
  return id
}

export const go = (path) => (location.hash = `#/${path}`)

function drawNav(section) {
  if (!session.account) return clear(nav)
  clear(
    nav,
    h('ul', null, SECTIONS.map(([path, label]) => h('li', null, h('a', { href: `#/${path}`, 'aria-current': path === section ? 'page' : undefined }, label)))),
  )
}

function drawWho() {
  if (!session.account) return clear(who)
  const out = h('button', { type: 'button', class: 'secondary' }, 'Sign out')
  out.addEventListener('click', async () => {
    await post('/auth/sign-out').catch(() => undefined)
    signedOut()
  })
  clear(who, h('span', { class: 'muted' }, session.info?.person?.email ?? session.account.name, ' · '), out)
}

export function signedOut() {
  session.account = null
  session.info = null
  drawWho()
  go('sign-in')
}

/**
 * Where sign-in was asked to return (an OAuth consent page a tool client opened):
 * a path on this server only, never another site.
 */
function returnPath() {
  const next = new URLSearchParams(location.search).get('next')
  return next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : null
}

/** After sign-in or a finished second factor: loads the account and enters the console (or goes back where sign-in was asked from). */
export async function enter(target = '') {
  session.account = await get('/account')
  const back = returnPath()
  if (back) return location.assign(back)
  drawWho()
  if (location.hash === `#/${target}`) route()
  else go(target)
}

async function route() {
  for (const id of timers) clearInterval(id)
  timers.clear()
  const [section = '', ...rest] = location.hash.replace(/^#\/?/, '').split('/')
  if (!OPEN.has(section) && !session.account) {
    try {
      session.account = await get('/account')
      drawWho()
    } catch (err) {
      if (err.code === 'mfa_required') return go(session.info?.two_factor === 'enrolment_required' ? 'enrol' : 'mfa')
      if (err.code === 'missing_api_key' || err.code === 'session_required') return go('sign-in')
      return clear(main, h('h1', null, 'Mailroom'), errorBox(err))
    }
  }
  drawNav(section)
  const page = PAGES[section]
  const title = SECTIONS.find(([p]) => p === section)?.[1]
  document.title = title ? `${title} · Mailroom` : 'Mailroom console'
  clear(main)
  if (!page) return clear(main, h('h1', null, 'Not found'), h('p', null, 'There is no such page. ', h('a', { href: '#/' }, 'Go to the overview')))
  try {
    await page(main, rest.map(decodeURIComponent))
  } catch (err) {
    main.append(errorBox(err))
  }
  if (!OPEN.has(section)) main.focus({ preventScroll: true })
}

document.getElementById('skip').addEventListener('click', (e) => {
  e.preventDefault()
  main.focus()
})
window.addEventListener('hashchange', route)
if (!location.hash.startsWith('#/')) history.replaceState(null, '', '#/')
route()
