import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { simpleParser } from 'mailparser'
import { memberships, supportAttachments, supportMessages, supportRequests } from '../src/db/tables'
import { DAY, HOUR, iso } from '../src/lib/clock'
import { verifiedDomain } from './support/emails'
import { expectError, harness, type Harness } from './support/harness'
import { person } from './support/people'
import { scenarios } from './support/scenarios'
import { startSmtpSink, type SmtpSink } from './support/smtp-sink'

const missing = '01890000-0000-7000-8000-000000000000'
const MB = 1024 * 1024
/** A desk is configured (drafts need one); these tests send nothing to it. */
const DESK = { MAILROOM_SUPPORT_EMAIL: 'desk@operator.test', MAILROOM_SUPPORT_FROM: 'support@ops.dev' }

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64')
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('IHDR fake image data')])
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('JFIF data')])
const GIF = Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1')
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 data')])
const PDF = Buffer.from('%PDF-1.7\n1 0 obj << >> endobj\n%%EOF\n')
const CSV = 'email,status\nada@example.com,bounced\n'
const LOG = '2026-03-02T10:00:00Z ERROR 451 4.7.1 try later\n'
const EXE = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(64, 0), Buffer.from('This program cannot be run in DOS mode')])

const file = (filename: string, content: Buffer | string, content_type?: string) => ({ filename, content: b64(content), ...(content_type ? { content_type } : {}) })

async function open(h: Harness, over: Record<string, unknown> = {}, key?: string) {
  const r = await h.call('POST', '/support/requests', { key, body: { subject: 'Mail to Gmail defers', message: 'Every message to gmail.com gets 451.', ...over } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; messages: { id: string }[] }
}

async function attached(h: Harness, files = [file('shot.png', PNG)]) {
  const req = await open(h)
  const r = await h.call('POST', `/support/requests/${req.id}/attachments`, { body: { files } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return { req, message: r.body, aid: r.body.attachments[0].id as string }
}

async function closed(h: Harness) {
  const req = await open(h)
  expect((await h.call('POST', `/support/requests/${req.id}/close`)).status).toBe(200)
  return req
}

async function theirs(h: Harness) {
  const o = await h.otherAccount()
  return { o, req: await open(h, {}, o.token) }
}

const requestRows = (h: Harness) => h.root.db.q.select().from(supportRequests)
const messageRows = (h: Harness) => h.root.db.q.select().from(supportMessages)

describe('Support requests: scenarios', () => {
  scenarios([
    // POST /support/requests
    { name: 'opens a request with its first message', method: 'POST', path: '/support/requests', body: { subject: 'DKIM fails', message: 'My DKIM record does not verify.' }, status: 201,
      expect: { object: 'support_request', subject: 'DKIM fails', status: 'open', merged_into: null, closed_at: null, reopen_until: null, contact_email: null, created_at: '2026-03-02T10:00:00.000Z',
        messages: [{ object: 'support_message', kind: 'opened', body: 'My DKIM record does not verify.', attachments: [], desk: { forwarded: false, email_id: null, error: null } }] },
      check: async (r, _c, h) => {
        expect(r.body.messages[0].author).toEqual({ type: 'key', id: expect.any(String) })
        expect(await requestRows(h)).toMatchObject([{ id: r.body.id, accountId: h.accountId }])
      } },
    { name: 'names the person who opened it as the contact', method: 'POST', path: '/support/requests', as: { role: 'developer', email: 'dev@customer.test' }, body: { subject: 'Help', message: 'Question' }, status: 201,
      check: (r) => {
        expect(r.body.contact_email).toBe('dev@customer.test')
        expect(r.body.messages[0].author.type).toBe('person')
      } },
    { name: 'names the account’s owner as the contact when a key opens it', method: 'POST', path: '/support/requests', setup: (h) => person(h, { role: 'owner', email: 'owner@customer.test' }), body: { subject: 'Help', message: 'Question' }, status: 201, expect: { contact_email: 'owner@customer.test' } },
    { name: 'refuses a sixth request within the hour, writing nothing', method: 'POST', path: '/support/requests', setup: async (h) => {
      for (let i = 0; i < 5; i++) {
        await open(h)
        h.clock.advance(60_000)
      }
    }, body: { subject: 'Sixth', message: 'x' }, status: 429, code: 'support_rate_limited',
      check: async (r, _c, h) => {
        expect(r.body.retry_after_seconds).toBe(3600)
        expect(r.headers.get('retry-after')).toBe('3600')
        expect(await requestRows(h)).toHaveLength(5)
      } },
    { name: 'opens again once the oldest of five left the hour', method: 'POST', path: '/support/requests', setup: async (h) => {
      for (let i = 0; i < 5; i++) await open(h)
      h.clock.advance(HOUR)
    }, body: { subject: 'Later', message: 'x' }, status: 201 },
    { name: 'counts only this account’s requests', method: 'POST', path: '/support/requests', setup: async (h) => {
      const o = await h.otherAccount()
      for (let i = 0; i < 5; i++) await open(h, {}, o.token)
    }, body: { subject: 'Mine', message: 'x' }, status: 201 },
    { name: 'without a support desk the draft helper is unavailable, and nothing is opened', method: 'POST', path: '/support/requests', body: { subject: 'Emails bounce', message: 'Addresses got suppressed after a bounce', draft: true }, status: 503, code: 'support_draft_unavailable',
      check: async (_r, _c, h) => expect(await requestRows(h)).toEqual([]) },
    { name: 'drafts from the matching published answers and opens nothing', method: 'POST', path: '/support/requests', env: DESK, body: { subject: 'Emails bounce', message: 'Addresses got suppressed after a bounce', draft: true }, status: 200,
      check: async (r, _c, h) => {
        expect(r.body.object).toBe('support_draft')
        expect(r.body.answers[0].slug).toBe('bounces')
        expect(r.body.reply).toContain('http://mailroom.test/support/answers/bounces')
        expect(await requestRows(h)).toEqual([])
      } },
    { name: 'drafts even after five requests this hour (a draft opens nothing)', method: 'POST', path: '/support/requests', env: DESK, setup: async (h) => {
      for (let i = 0; i < 5; i++) await open(h)
    }, body: { subject: 'DNS', message: 'which DNS records', draft: true }, status: 200, expect: { object: 'support_draft' } },
    { name: 'answers support_draft_unavailable when no published answer matches', method: 'POST', path: '/support/requests', env: DESK, body: { subject: 'Zebra', message: 'xylophone quasar', draft: true }, status: 503, code: 'support_draft_unavailable',
      check: async (_r, _c, h) => expect(await requestRows(h)).toEqual([]) },
    { name: 'refuses a missing subject', method: 'POST', path: '/support/requests', body: { message: 'x' }, status: 400, code: 'validation_error' },
    { name: 'refuses an empty message', method: 'POST', path: '/support/requests', body: { subject: 'x', message: '' }, status: 400, code: 'validation_error' },
    { name: 'refuses a subject over 200 characters', method: 'POST', path: '/support/requests', body: { subject: 's'.repeat(201), message: 'x' }, status: 400, code: 'validation_error' },
    { name: 'refuses an unknown field', method: 'POST', path: '/support/requests', body: { subject: 'x', message: 'x', priority: 'urgent' }, status: 400, code: 'validation_error' },
    { name: 'refuses a body that is not JSON', method: 'POST', path: '/support/requests', headers: { 'content-type': 'multipart/form-data; boundary=x' }, raw: '--x--', status: 415, code: 'unsupported_media_type' },
    { name: 'refuses a sending-only key', method: 'POST', path: '/support/requests', as: 'sending', body: { subject: 'x', message: 'x' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: '/support/requests', as: 'none', body: { subject: 'x', message: 'x' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: '/support/requests', as: 'revoked', body: { subject: 'x', message: 'x' }, status: 403, code: 'invalid_api_key' },

    // GET /support/requests
    { name: 'lists the account’s requests newest first, without another account’s', method: 'GET', path: '/support/requests', setup: async (h) => {
      const a = await open(h, { subject: 'First' })
      h.clock.advance(1000)
      const b = await open(h, { subject: 'Second' })
      await theirs(h)
      return { a, b }
    }, status: 200,
      check: (r, c) => {
        expect(r.body).toMatchObject({ object: 'list', has_more: false, next_cursor: null })
        expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([c.b.id, c.a.id])
        expect(r.body.data[0]).not.toHaveProperty('messages')
      } },
    { name: 'filters by status', method: 'GET', path: '/support/requests', query: { status: 'closed' }, setup: async (h) => {
      await open(h)
      return closed(h)
    }, status: 200, check: (r, c) => expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([c.id]) },
    { name: 'pages with limit and cursor', method: 'GET', path: '/support/requests', query: { limit: 1 }, setup: async (h) => {
      await open(h)
      await open(h)
    }, status: 200,
      check: async (r, _c, h) => {
        expect(r.body.has_more).toBe(true)
        const next = await h.call('GET', '/support/requests', { query: { limit: 1, cursor: r.body.next_cursor } })
        expect(next.body.data).toHaveLength(1)
        expect(next.body.data[0].id).not.toBe(r.body.data[0].id)
      } },
    { name: 'refuses a tampered cursor', method: 'GET', path: '/support/requests', query: { cursor: 'eyJpIjoieCIsImQiOiJhZnRlciJ9.forged' }, status: 400, code: 'invalid_cursor' },
    { name: 'refuses an unknown status', method: 'GET', path: '/support/requests', query: { status: 'pending' }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'GET', path: '/support/requests', as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: '/support/requests', as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: '/support/requests', as: 'revoked', status: 403, code: 'invalid_api_key' },

    // GET /support/requests/{id}
    { name: 'gets one request with its messages and files', method: 'GET', setup: (h) => attached(h), path: (c) => `/support/requests/${c.req.id}`, status: 200,
      check: (r, c) => {
        expect(r.body.messages.map((m: { kind: string }) => m.kind)).toEqual(['opened', 'attachments'])
        expect(r.body.messages[1].attachments[0]).toMatchObject({ object: 'support_attachment', id: c.aid, filename: 'shot.png', content_type: 'image/png', size: PNG.length, expired: false, expires_at: '2026-04-01T10:00:00.000Z',
          download_url: `http://mailroom.test/support/requests/${c.req.id}/attachments/${c.aid}` })
      } },
    { name: 'answers support_ticket_not_found for an unknown id', method: 'GET', path: `/support/requests/${missing}`, status: 404, code: 'support_ticket_not_found' },
    { name: 'answers support_ticket_not_found for an id that is no UUID', method: 'GET', path: '/support/requests/12345', status: 404, code: 'support_ticket_not_found' },
    { name: 'answers support_ticket_not_found for another account’s request', method: 'GET', setup: theirs, path: (c) => `/support/requests/${c.req.id}`, status: 404, code: 'support_ticket_not_found' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/support/requests/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/support/requests/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/support/requests/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /support/requests/{id}/replies
    { name: 'adds a reply', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/replies`, body: { message: 'Still failing.' }, status: 201,
      expect: { object: 'support_message', kind: 'reply', body: 'Still failing.', attachments: [] },
      check: async (_r, c, h) => expect((await h.call('GET', `/support/requests/${c.id}`)).body.messages).toHaveLength(2) },
    { name: 'refuses a reply to a closed request', method: 'POST', setup: closed, path: (c) => `/support/requests/${c.id}/replies`, body: { message: 'x' }, status: 409, code: 'support_closed',
      check: async (_r, _c, h) => expect(await messageRows(h)).toHaveLength(1) },
    { name: 'refuses a reply to a merged request, naming where it went', method: 'POST', setup: async (h) => {
      const a = await open(h)
      const b = await open(h)
      await h.call('POST', `/support/requests/${a.id}/merge`, { body: { source_id: b.id } })
      return { a, b }
    }, path: (c) => `/support/requests/${c.b.id}/replies`, body: { message: 'x' }, status: 409, code: 'support_closed',
      check: (r, c) => expect(r.body.message).toContain(c.a.id) },
    { name: 'refuses the 31st reply within the hour, saying when the next may go', method: 'POST', setup: async (h) => {
      const req = await open(h)
      for (let i = 0; i < 30; i++) {
        expect((await h.call('POST', `/support/requests/${req.id}/replies`, { body: { message: `reply ${i}` } })).status).toBe(201)
        h.clock.advance(1000)
      }
      return req
    }, path: (c) => `/support/requests/${c.id}/replies`, body: { message: 'one more' }, status: 409, code: 'support_reply_too_soon', env: { MAILROOM_RATE_LIMIT: '1000' },
      check: (r) => expect(r.body.retry_after_seconds).toBe(3600 - 30) },
    { name: 'takes a reply again once the hour moved on', method: 'POST', setup: async (h) => {
      const req = await open(h)
      for (let i = 0; i < 30; i++) await h.call('POST', `/support/requests/${req.id}/replies`, { body: { message: `reply ${i}` } })
      h.clock.advance(HOUR)
      return req
    }, path: (c) => `/support/requests/${c.id}/replies`, body: { message: 'later' }, status: 201, env: { MAILROOM_RATE_LIMIT: '1000' } },
    { name: 'answers support_ticket_not_found for another account’s request', method: 'POST', setup: theirs, path: (c) => `/support/requests/${c.req.id}/replies`, body: { message: 'x' }, status: 404, code: 'support_ticket_not_found' },
    { name: 'refuses an empty reply', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/replies`, body: { message: '' }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'POST', path: `/support/requests/${missing}/replies`, as: 'sending', body: { message: 'x' }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/support/requests/${missing}/replies`, as: 'none', body: { message: 'x' }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/support/requests/${missing}/replies`, as: 'revoked', body: { message: 'x' }, status: 403, code: 'invalid_api_key' },

    // POST /support/requests/{id}/attachments
    { name: 'takes a screenshot of each kind, a PDF, a CSV and a log, typed by their bytes', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`,
      body: { message: 'Files', files: [file('a.png', PNG), file('b.jpg', JPEG), file('c', GIF), file('d.webp', WEBP), file('e.pdf', PDF)] }, status: 201,
      check: (r) => {
        expect(r.body).toMatchObject({ kind: 'attachments', body: 'Files' })
        expect(r.body.attachments.map((a: { content_type: string }) => a.content_type)).toEqual(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf'])
      } },
    { name: 'takes text as CSV or log by its name', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`,
      body: { files: [file('bounces.csv', CSV, 'text/csv'), file('mta.log', LOG), file('notes.txt', LOG, 'text/plain')] }, status: 201,
      check: (r) => expect(r.body.attachments.map((a: { content_type: string }) => a.content_type)).toEqual(['text/csv; charset=utf-8', 'text/plain; charset=utf-8', 'text/plain; charset=utf-8']) },
    { name: 'refuses an executable, whatever its name, and writes nothing', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`, body: { files: [file('screenshot.png', EXE)] }, status: 400, code: 'support_upload_rejected',
      check: async (_r, _c, h) => {
        expect(await h.root.db.q.select().from(supportAttachments)).toEqual([])
        expect(await messageRows(h)).toHaveLength(1)
      } },
    { name: 'refuses a PNG named as a PDF', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`, body: { files: [file('invoice.pdf', PNG)] }, status: 400, code: 'support_upload_rejected' },
    { name: 'refuses text that is not a CSV or a log (an HTML page)', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`, body: { files: [file('page.html', '<html><script>alert(1)</script></html>')] }, status: 400, code: 'support_upload_rejected' },
    { name: 'refuses a declared type its bytes do not have', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`, body: { files: [file('shot', PNG, 'application/pdf')] }, status: 400, code: 'support_upload_rejected' },
    { name: 'refuses an empty file', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`, body: { files: [file('empty.log', '')] }, status: 400, code: 'support_upload_rejected' },
    { name: 'refuses content that is not base64', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`, body: { files: [{ filename: 'a.log', content: 'not base64!' }] }, status: 400, code: 'validation_error',
      check: (r) => expect(r.body.details).toEqual([{ field: 'files[0].content', message: 'must be base64' }]) },
    { name: 'refuses six files in one message', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`, body: { files: Array.from({ length: 6 }, (_, i) => file(`${i}.log`, LOG)) }, status: 413, code: 'support_upload_too_large' },
    { name: 'refuses a file over 10 MB', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`, body: { files: [file('big.log', Buffer.alloc(10 * MB + 1, 'a'))] }, status: 413, code: 'support_upload_too_large',
      check: (r) => expect(r.body.message).toContain('big.log') },
    { name: 'refuses files over 25 MB together, though each is under 10 MB', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`,
      body: { files: [file('1.log', Buffer.alloc(9 * MB, 'a')), file('2.log', Buffer.alloc(9 * MB, 'b')), file('3.log', Buffer.alloc(8 * MB, 'c'))] }, status: 413, code: 'support_upload_too_large',
      check: async (r, _c, h) => {
        expect(r.body.message).toContain('25 MB')
        expect(await h.root.db.q.select().from(supportAttachments)).toEqual([])
      } },
    { name: 'takes files of 25 MB together', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`,
      body: { files: [file('1.log', Buffer.alloc(10 * MB, 'a')), file('2.log', Buffer.alloc(10 * MB, 'b')), file('3.log', Buffer.alloc(5 * MB, 'c'))] }, status: 201,
      check: (r) => expect(r.body.attachments.map((a: { size: number }) => a.size)).toEqual([10 * MB, 10 * MB, 5 * MB]) },
    { name: 'refuses files on a closed request', method: 'POST', setup: closed, path: (c) => `/support/requests/${c.id}/attachments`, body: { files: [file('a.png', PNG)] }, status: 409, code: 'support_closed' },
    { name: 'answers support_ticket_not_found for another account’s request', method: 'POST', setup: theirs, path: (c) => `/support/requests/${c.req.id}/attachments`, body: { files: [file('a.png', PNG)] }, status: 404, code: 'support_ticket_not_found' },
    { name: 'refuses no files', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments`, body: { files: [] }, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'POST', path: `/support/requests/${missing}/attachments`, as: 'sending', body: { files: [file('a.png', PNG)] }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/support/requests/${missing}/attachments`, as: 'none', body: { files: [file('a.png', PNG)] }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/support/requests/${missing}/attachments`, as: 'revoked', body: { files: [file('a.png', PNG)] }, status: 403, code: 'invalid_api_key' },

    // GET /support/requests/{id}/attachments/{aid}
    { name: 'downloads the file with its type and name', method: 'GET', setup: (h) => attached(h, [file('Écran 1.png', PNG)]), path: (c) => `/support/requests/${c.req.id}/attachments/${c.aid}`, status: 200,
      check: (r) => {
        expect(r.headers.get('content-type')).toBe('image/png')
        expect(r.headers.get('content-disposition')).toBe(`attachment; filename="_cran 1.png"; filename*=UTF-8''${encodeURIComponent('Écran 1.png')}`)
        expect(r.headers.get('x-content-type-options')).toBe('nosniff')
        expect(r.headers.get('content-length')).toBe(String(PNG.length))
      } },
    { name: 'answers support_attachment_expired after 30 days, before the purge ran', method: 'GET', setup: async (h) => {
      const c = await attached(h)
      h.clock.advance(30 * DAY)
      return c
    }, path: (c) => `/support/requests/${c.req.id}/attachments/${c.aid}`, status: 410, code: 'support_attachment_expired',
      check: async (_r, c, h) => expect((await h.call('GET', `/support/requests/${c.req.id}`)).body.messages[1].attachments[0].expired).toBe(true) },
    { name: 'answers not_found for an unknown attachment', method: 'GET', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/attachments/${missing}`, status: 404, code: 'not_found' },
    { name: 'answers support_ticket_not_found for another account’s file', method: 'GET', setup: async (h) => {
      const o = await h.otherAccount()
      const req = await open(h, {}, o.token)
      const m = await h.call('POST', `/support/requests/${req.id}/attachments`, { key: o.token, body: { files: [file('a.png', PNG)] } })
      return { req, aid: m.body.attachments[0].id }
    }, path: (c) => `/support/requests/${c.req.id}/attachments/${c.aid}`, status: 404, code: 'support_ticket_not_found' },
    { name: 'refuses a sending-only key', method: 'GET', path: `/support/requests/${missing}/attachments/${missing}`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'GET', path: `/support/requests/${missing}/attachments/${missing}`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'GET', path: `/support/requests/${missing}/attachments/${missing}`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /support/requests/{id}/close
    { name: 'closes a request and starts the reopen window', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/close`, status: 200,
      expect: { status: 'closed', closed_at: '2026-03-02T10:00:00.000Z', reopen_until: '2026-03-16T10:00:00.000Z' } },
    { name: 'closing a closed request changes nothing', method: 'POST', setup: async (h) => {
      const req = await closed(h)
      h.clock.advance(DAY)
      return req
    }, path: (c) => `/support/requests/${c.id}/close`, status: 200, expect: { status: 'closed', closed_at: '2026-03-02T10:00:00.000Z' } },
    { name: 'refuses to close a merged request', method: 'POST', setup: async (h) => {
      const a = await open(h)
      const b = await open(h)
      await h.call('POST', `/support/requests/${a.id}/merge`, { body: { source_id: b.id } })
      return b
    }, path: (c) => `/support/requests/${c.id}/close`, status: 409, code: 'support_closed' },
    { name: 'answers support_ticket_not_found for another account’s request', method: 'POST', setup: theirs, path: (c) => `/support/requests/${c.req.id}/close`, status: 404, code: 'support_ticket_not_found',
      check: async (_r, c, h) => expect((await h.call('GET', `/support/requests/${c.req.id}`, { key: c.o.token })).body.status).toBe('open') },
    { name: 'refuses a sending-only key', method: 'POST', path: `/support/requests/${missing}/close`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/support/requests/${missing}/close`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/support/requests/${missing}/close`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /support/requests/{id}/reopen
    { name: 'reopens within 14 days of the resolution', method: 'POST', setup: async (h) => {
      const req = await closed(h)
      h.clock.advance(14 * DAY)
      return req
    }, path: (c) => `/support/requests/${c.id}/reopen`, status: 200, expect: { status: 'open', closed_at: null, reopen_until: null },
      check: async (_r, c, h) => expect((await h.call('POST', `/support/requests/${c.id}/replies`, { body: { message: 'back' } })).status).toBe(201) },
    { name: 'refuses to reopen after 14 days', method: 'POST', setup: async (h) => {
      const req = await closed(h)
      h.clock.advance(14 * DAY + 1000)
      return req
    }, path: (c) => `/support/requests/${c.id}/reopen`, status: 409, code: 'support_reopen_expired',
      check: async (_r, c, h) => expect((await h.call('GET', `/support/requests/${c.id}`)).body.status).toBe('closed') },
    { name: 'reopening an open request changes nothing', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/reopen`, status: 200, expect: { status: 'open' } },
    { name: 'refuses to reopen a merged request', method: 'POST', setup: async (h) => {
      const a = await open(h)
      const b = await open(h)
      await h.call('POST', `/support/requests/${a.id}/merge`, { body: { source_id: b.id } })
      return b
    }, path: (c) => `/support/requests/${c.id}/reopen`, status: 409, code: 'support_closed' },
    { name: 'answers support_ticket_not_found for an unknown request', method: 'POST', path: `/support/requests/${missing}/reopen`, status: 404, code: 'support_ticket_not_found' },
    { name: 'refuses a sending-only key', method: 'POST', path: `/support/requests/${missing}/reopen`, as: 'sending', status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/support/requests/${missing}/reopen`, as: 'none', status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/support/requests/${missing}/reopen`, as: 'revoked', status: 403, code: 'invalid_api_key' },

    // POST /support/requests/{id}/merge
    { name: 'moves the source’s messages and files here and marks it merged', method: 'POST', setup: async (h) => {
      const target = await open(h, { subject: 'Target' })
      h.clock.advance(1000)
      const src = await attached(h)
      return { target, src }
    }, path: (c) => `/support/requests/${c.target.id}/merge`, body: (c: any) => ({ source_id: c.src.req.id }), status: 200,
      check: async (r, c, h) => {
        expect(r.body).toMatchObject({ id: c.target.id, status: 'open' })
        expect(r.body.messages.map((m: { kind: string }) => m.kind)).toEqual(['opened', 'opened', 'attachments'])
        expect(r.body.messages[2].attachments[0]).toMatchObject({ id: c.src.aid, download_url: `http://mailroom.test/support/requests/${c.target.id}/attachments/${c.src.aid}` })
        const source = (await h.call('GET', `/support/requests/${c.src.req.id}`)).body
        expect(source).toMatchObject({ status: 'merged', merged_into: c.target.id, messages: [] })
        const dl = await h.call('GET', `/support/requests/${c.target.id}/attachments/${c.src.aid}`)
        expect(dl.status).toBe(200)
        expect(await h.root.db.q.select().from(supportAttachments).where(eq(supportAttachments.requestId, c.src.req.id))).toEqual([])
      } },
    { name: 'answers support_ticket_not_found for another account’s source, and moves nothing', method: 'POST', setup: async (h) => ({ mine: await open(h), ...(await theirs(h)) }),
      path: (c) => `/support/requests/${c.mine.id}/merge`, body: (c: any) => ({ source_id: c.req.id }), status: 404, code: 'support_ticket_not_found',
      check: async (r, c, h) => {
        // Worded as for an id that never existed: nothing tells it is another tenant's.
        expect(r.body.message).toBe(`There is no support request ${c.req.id} in this account.`)
        expect((await h.call('GET', `/support/requests/${c.req.id}`, { key: c.o.token })).body).toMatchObject({ status: 'open', messages: [{ kind: 'opened' }] })
      } },
    { name: 'answers support_merge_conflict to a person who belongs to both accounts', method: 'POST', setup: async (h) => {
      const { o, req } = await theirs(h)
      const p = await person(h, { role: 'admin' })
      await h.root.db.write((tx) => tx.insert(memberships).values({ id: h.root.ids.uuid(), accountId: o.accountId, personId: p.id, role: 'admin', createdAt: iso(h.clock.now()), updatedAt: iso(h.clock.now()) }))
      return { p, mine: await open(h), req }
    }, path: (c) => `/support/requests/${c.mine.id}/merge`, as: 'none', headers: (c: any) => ({ cookie: c.p.cookie }), body: (c: any) => ({ source_id: c.req.id }), status: 409, code: 'support_merge_conflict' },
    { name: 'answers support_ticket_not_found for an unknown source', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/merge`, body: { source_id: missing }, status: 404, code: 'support_ticket_not_found' },
    { name: 'answers support_ticket_not_found for an unknown target', method: 'POST', setup: (h) => open(h), path: `/support/requests/${missing}/merge`, body: (c: any) => ({ source_id: c.id }), status: 404, code: 'support_ticket_not_found' },
    { name: 'refuses to merge a request into itself', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/merge`, body: (c: any) => ({ source_id: c.id }), status: 422, code: 'invalid_parameter' },
    { name: 'refuses to merge into a closed request', method: 'POST', setup: async (h) => ({ target: await closed(h), src: await open(h) }), path: (c) => `/support/requests/${c.target.id}/merge`, body: (c: any) => ({ source_id: c.src.id }), status: 409, code: 'support_closed' },
    { name: 'refuses a merge without source_id', method: 'POST', setup: (h) => open(h), path: (c) => `/support/requests/${c.id}/merge`, body: {}, status: 400, code: 'validation_error' },
    { name: 'refuses a sending-only key', method: 'POST', path: `/support/requests/${missing}/merge`, as: 'sending', body: { source_id: missing }, status: 403, code: 'restricted_api_key' },
    { name: 'refuses no key', method: 'POST', path: `/support/requests/${missing}/merge`, as: 'none', body: { source_id: missing }, status: 401, code: 'missing_api_key' },
    { name: 'refuses a revoked key', method: 'POST', path: `/support/requests/${missing}/merge`, as: 'revoked', body: { source_id: missing }, status: 403, code: 'invalid_api_key' },
  ])
})

describe('Support requests: attachment expiry', () => {
  test('the purge job empties the bytes of files past 30 days and keeps younger ones', async () => {
    const h = await harness()
    try {
      const old = await attached(h)
      h.clock.advance(10 * DAY)
      const young = await attached(h, [file('later.log', LOG)])
      h.clock.advance(20 * DAY)
      await h.scheduler.runNow('purge-support-attachments')
      const rows = await h.root.db.q.select().from(supportAttachments)
      const byId = new Map(rows.map((r) => [r.id, r]))
      expect(byId.get(old.aid)).toMatchObject({ content: null, purgedAt: iso(h.clock.now()) })
      expect(byId.get(young.aid)!.content!.toString()).toBe(LOG)
      expectError(await h.call('GET', `/support/requests/${old.req.id}/attachments/${old.aid}`), 'support_attachment_expired', 410)
      expect((await h.call('GET', `/support/requests/${young.req.id}/attachments/${young.aid}`)).body).toBe(LOG)
    } finally {
      await h.close()
    }
  })
})

describe('Support requests: the operator’s desk', () => {
  let sink: SmtpSink
  beforeAll(async () => {
    sink = await startSmtpSink({ auth: { user: 'mailroom', pass: 's3cret' } })
  })
  afterAll(() => sink.close())

  const desk = () => ({
    MAILROOM_DELIVERY: 'relay',
    MAILROOM_RELAY_URL: sink.url(),
    MAILROOM_HOSTNAME: 'mx.mailroom.test',
    MAILROOM_SUPPORT_EMAIL: 'desk@operator.test',
    MAILROOM_SUPPORT_FROM: 'support@ops.dev',
  })

  test('each new request, reply and file goes to the desk by mail, with Reply-To the customer', async () => {
    const h = await harness(desk())
    try {
      await verifiedDomain(h, 'ops.dev')
      const o = await h.otherAccount()
      const customer = await person(h, { role: 'owner', accountId: o.accountId, email: 'ada@customer.test' })
      const req = await open(h, {}, o.token)
      expect(req.messages[0]).toMatchObject({ desk: { forwarded: true, email_id: expect.any(String), error: null } })
      const reply = await h.call('POST', `/support/requests/${req.id}/replies`, { key: null, headers: { cookie: customer.cookie, origin: 'http://mailroom.test' }, body: { message: 'More detail.' } })
      expect(reply.body.desk.forwarded).toBe(true)
      const files = await h.call('POST', `/support/requests/${req.id}/attachments`, { key: o.token, body: { files: [file('mta.log', LOG)] } })
      expect(files.body.desk.forwarded).toBe(true)
      // The forwards are the operator's mail, not the customer's: they never show in the customer's records.
      expect((await h.call('GET', '/emails', { key: o.token })).body.data).toEqual([])

      await h.worker.runOnce()
      await sink.waitFor(3, 10_000)
      const mails = await Promise.all(sink.messages.map((m) => simpleParser(m.raw)))
      for (const [i, m] of sink.messages.entries()) expect({ to: m.to, subject: mails[i].subject }).toEqual({ to: ['desk@operator.test'], subject: `[support ${req.id}] Mail to Gmail defers` })
      for (const m of mails) {
        expect(m.replyTo?.text).toBe('ada@customer.test')
        expect(m.headers.get('x-mailroom-support-request')).toBe(req.id)
        expect(m.from?.text).toContain('support@ops.dev')
      }
      const texts = mails.map((m) => m.text ?? '')
      expect(texts[0]).toContain('Every message to gmail.com gets 451.')
      expect(texts[1]).toContain('More detail.')
      expect(mails[2].attachments.map((a) => [a.filename, a.content.toString()])).toEqual([['mta.log', LOG]])
    } finally {
      await h.close()
    }
  })

  test('a desk whose sending domain is not verified keeps the request and says why it did not go', async () => {
    const h = await harness(desk())
    try {
      const req = await open(h)
      expect(req.messages[0]).toMatchObject({ desk: { forwarded: false, email_id: null, error: 'domain_not_verified' } })
      expect(await requestRows(h)).toHaveLength(1)
    } finally {
      await h.close()
    }
  })
})
