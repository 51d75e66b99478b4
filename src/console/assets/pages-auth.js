// Sign-up, sign-in, the second factor and its enrolment.
import { api, post } from './api.js'
import { enter, go, session } from './app.js'
import { attempt, clear, copyButton, form, h, secretBox } from './ui.js'

/** Where a sign-in's answer leads: the second factor when it is due, else the console. */
function after(s) {
  session.info = s
  if (s.two_factor === 'pending') return go('mfa')
  if (s.two_factor === 'enrolment_required') return go('enrol')
  return enter()
}

const signInFields = [
  { name: 'email', label: 'Email', type: 'email', required: true, autocomplete: 'username' },
  { name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password' },
]

export const authPages = {
  'sign-in': (main) => {
    main.append(
      h('h1', null, 'Sign in'),
      form(signInFields, 'Sign in', async (v) => after(await post('/auth/sign-in', v))),
      h('p', null, 'First time on this server? ', h('a', { href: '#/sign-up' }, 'Create the first login')),
    )
  },

  'sign-up': (main) => {
    main.append(
      h('h1', null, 'Sign up'),
      h('p', { class: 'muted' }, 'The first person on a new install becomes the owner of its account. Later people join by invitation.'),
      form(
        [
          { name: 'name', label: 'Your name', autocomplete: 'name' },
          { name: 'email', label: 'Email', type: 'email', required: true, autocomplete: 'username' },
          { name: 'password', label: 'Password (10 characters or more)', type: 'password', required: true, autocomplete: 'new-password' },
          { name: 'account_name', label: 'Account name' },
          { name: 'invite_token', label: 'Invitation token (when you were invited)' },
        ],
        'Create login',
        async (v) => {
          await post('/accounts', v)
          const s = await post('/auth/sign-in', { email: v.email, password: v.password })
          session.info = s
          // Two-factor is what person-level decisions (approvals, resuming a key) need: offer it straight away.
          go(s.two_factor === 'pending' ? 'mfa' : 'enrol')
        },
      ),
      h('p', null, 'Already have a login? ', h('a', { href: '#/sign-in' }, 'Sign in')),
    )
  },

  mfa: (main) => {
    main.append(
      h('h1', null, 'Two-factor code'),
      h('p', null, 'Enter the six digits your authenticator app shows for Mailroom, or one of your recovery codes.'),
      form([{ name: 'code', label: 'Code', required: true, autocomplete: 'one-time-code', inputmode: 'numeric' }], 'Verify', async (v) => {
        session.info = await post('/auth/mfa/verify', v)
        await enter()
      }),
      h('p', null, h('a', { href: '#/sign-in' }, 'Sign in as someone else')),
    )
  },

  enrol: async (main) => {
    main.append(h('h1', null, 'Set up two-factor authentication'))
    const box = h('div')
    main.append(box)
    const enrolment = await attempt(box, null, () => post('/auth/mfa/enroll'))
    if (!enrolment) return box.append(h('p', null, h('a', { href: '#/' }, 'Back to the console')))
    const qr = h('div', { class: 'qr', 'aria-hidden': 'true' })
    // The QR code is drawn by the server from the URI sent in the body; the markup is our own SVG.
    const svg = await api('POST', '/console/qr', { text: enrolment.otpauth_uri }).catch(() => '')
    if (svg) qr.append(new DOMParser().parseFromString(svg, 'image/svg+xml').documentElement)
    box.append(
      h('p', null, 'Scan the code with an authenticator app, or type the secret into it. Then enter the code it shows.'),
      qr,
      h('p', null, 'Secret: ', h('code', { class: 'mono', id: 'totp-secret' }, enrolment.secret), ' ', copyButton(enrolment.secret, 'Copy', 'secret')),
      form([{ name: 'code', label: 'Code from the app', required: true, autocomplete: 'one-time-code', inputmode: 'numeric' }], 'Turn on two-factor', async (v) => {
        const s = await post('/auth/mfa/verify', v)
        session.info = s
        clear(
          box,
          h('p', null, 'Two-factor authentication is on.'),
          s.recovery_codes ? secretBox('Recovery codes', s.recovery_codes.join(' '), 'Each works once, if you lose the authenticator. Keep them somewhere safe: they are shown only now.') : null,
          h('button', { type: 'button', onclick: () => enter() }, 'Continue to the console'),
        )
      }),
    )
    if (session.info?.two_factor !== 'enrolment_required') box.append(h('p', null, h('a', { href: '#/' }, 'Not now')))
  },
}
