// The console's files, imported as text so `bun build --compile` embeds them in the
// binary: the console works offline and loads nothing from anywhere else.
import shell from './assets/index.html' with { type: 'text' }
import api from './assets/api.js' with { type: 'text' }
import app from './assets/app.js' with { type: 'text' }
import ui from './assets/ui.js' with { type: 'text' }
import authPages from './assets/pages-auth.js' with { type: 'text' }
import mailPages from './assets/pages-mail.js' with { type: 'text' }
import keyPages from './assets/pages-keys.js' with { type: 'text' }
import domainPages from './assets/pages-domains.js' with { type: 'text' }
import audiencePages from './assets/pages-audience.js' with { type: 'text' }
import accountPages from './assets/pages-account.js' with { type: 'text' }
import style from './assets/style.css' with { type: 'text' }

// Bun's types read an .html import as a bundle; with type 'text' it is the file's text.
export const SHELL = shell as unknown as string

const JS = 'text/javascript; charset=utf-8'

export const ASSETS: Record<string, { type: string; body: string }> = {
  'api.js': { type: JS, body: api },
  'app.js': { type: JS, body: app },
  'ui.js': { type: JS, body: ui },
  'pages-auth.js': { type: JS, body: authPages },
  'pages-mail.js': { type: JS, body: mailPages },
  'pages-keys.js': { type: JS, body: keyPages },
  'pages-domains.js': { type: JS, body: domainPages },
  'pages-audience.js': { type: JS, body: audiencePages },
  'pages-account.js': { type: JS, body: accountPages },
  'style.css': { type: 'text/css; charset=utf-8', body: style },
}
