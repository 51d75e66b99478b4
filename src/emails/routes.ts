import { Elysia, t } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import * as records from './records'
import * as s from './schema'
import { SEND_ERRORS, TEMPLATE_SEND_ERRORS } from './send-errors'
import * as send from './send'

const tag = 'emails'

/** The rate headers after a send spent one email per recipient from the key's window. */
const rateInto = (set: { headers: Record<string, string | number> }) => (st: { remaining: number; resetSeconds: number }) => {
  set.headers['ratelimit-remaining'] = String(st.remaining)
  set.headers['ratelimit-reset'] = String(st.resetSeconds)
}

const SEND_DESCRIPTION =
  'Resend’s request. Every recipient (to, cc and bcc, counted once each) is one email against the key’s budget, the account’s quotas and the key’s rate window; ' +
  'a refused send writes and spends nothing. The from domain must be a verified sending domain of the account unless every recipient is a simulator address ' +
  '(`delivered@simulator.test`, `bounced@resend.dev`, …). `scheduled_at` takes ISO 8601 or words (`in 1 hour`, `tomorrow at 9am`, `Friday at 3pm ET`), up to 30 days ahead. ' +
  '`template: {id, variables}` (id or alias) renders the template’s published version: its `from`, `subject` and `reply_to` fill what the request leaves out, its bodies replace `html` and `text` (which may not be given beside it).'

export const emailSendingRoutes = (platform: Platform) =>
  new Elysia({ name: 'emails-sending', prefix: '/emails' })
    .use(platform)
    .post('', ({ deps, actor, body, set }) => send.sendEmail(deps, actor, body, rateInto(set)), {
      ...op({ id: 'sendEmail', summary: 'Send one email, now or scheduled', description: SEND_DESCRIPTION, tag, auth: 'send', method: 'POST', body: true, errors: [...SEND_ERRORS, ...TEMPLATE_SEND_ERRORS] }),
      body: s.SendEmail,
      response: { 200: s.Sent },
    })
    .post('/batch', ({ deps, actor, body, set, request }) => send.sendBatch(deps, actor, body, send.batchMode(request.headers.get('x-batch-validation')), rateInto(set)), {
      ...op({
        id: 'sendEmailBatch',
        summary: 'Send up to 100 emails in one call',
        description:
          'Header `x-batch-validation`: `strict` (default) refuses the whole batch on the first bad email with that email’s error and `index`; `permissive` sends the good ones and lists the others in `errors: [{index, message, code}]`. ' +
          'Budget, quotas and the rate window apply to the batch as a whole. Attachments are accepted (Resend’s batch has none).',
        tag,
        auth: 'send',
        method: 'POST',
        body: true,
        errors: [...SEND_ERRORS, ...TEMPLATE_SEND_ERRORS],
      }),
      body: s.SendBatch,
      response: { 200: s.BatchSent },
    })
    .post('/lint', ({ deps, actor, body }) => send.lintEmail(deps, actor, body), {
      ...op({
        id: 'lintEmail',
        summary: 'Check a message without sending: form, headers, content rules, size, links',
        description: 'Answers every finding with its code, severity and fix. Needs no domain and reads nothing of the account but the template it names (rendered as a send would); `path` attachments are not fetched (preflight does).',
        tag,
        auth: 'send',
        method: 'POST',
        body: true,
      }),
      body: s.SendEmail,
      response: { 200: s.LintReport },
    })
    .post('/preflight', ({ deps, actor, body }) => send.preflightEmail(deps, actor, body), {
      ...op({
        id: 'preflightEmail',
        summary: 'Everything a send would check, without sending or spending',
        description: 'Runs every check of POST /emails for this key and body now (domain scope, sending domain, suppression, blocklists, budget, quotas, rate window; `path` attachments are fetched) and answers the findings, writing and spending nothing.',
        tag,
        auth: 'send',
        method: 'POST',
        body: true,
      }),
      body: s.SendEmail,
      response: { 200: s.PreflightReport },
    })

const full = (id: string, summary: string, method: 'GET' | 'POST' | 'PATCH', errors: Parameters<typeof op>[0]['errors'] = [], description?: string, body = false) =>
  op({ id, summary, tag, auth: 'full', method, errors, body, ...(description ? { description } : {}) })

export const emailRecordRoutes = (platform: Platform) =>
  new Elysia({ name: 'emails-records', prefix: '/emails' })
    .use(platform)
    .get('', ({ deps, actor, query }) => records.listEmails(deps, actor, query), {
      ...full('listEmails', 'List sent emails, newest first, with filters', 'GET', ['invalid_cursor', 'invalid_parameter'],
        'Filters: `status` (the last event), `from` (an address or a domain), `to` (any recipient), `tag` (`name:value` or `name`), and the created range `since`/`until` (or `start_date`/`end_date`; a bare end date covers its whole day).'),
      query: s.ListEmailsQuery,
      response: { 200: s.EmailList },
    })
    .get('/export.csv', ({ deps, actor, query }) => records.exportEmails(deps, actor, query), {
      ...full('exportEmails', 'Export email records as CSV, streamed', 'GET', ['invalid_parameter'], 'The list’s filters; every matching email, newest first, as `text/csv`.'),
      query: s.ExportQuery,
      response: { 200: t.String({ description: 'text/csv' }) },
    })
    .post('/bulk-cancel', ({ deps, actor, body }) => records.bulkCancel(deps, actor, body), {
      ...full('bulkCancelEmails', 'Cancel many scheduled emails by ids or a filter', 'POST', ['missing_required_field', 'invalid_parameter'],
        '`ids`, or a filter over scheduled emails (`scheduled_before`, `scheduled_after`, `tag`), or both. At most 1000 emails a call; `has_more` says to call again.', true),
      body: s.BulkCancel,
      response: { 200: s.BulkCanceled },
    })
    .get('/:id', ({ deps, actor, params }) => records.getEmail(deps, actor, params.id), {
      ...full('getEmail', 'Get one email', 'GET', ['not_found']),
      params: s.EmailIdParams,
      response: { 200: s.Email },
    })
    .patch('/:id', async ({ deps, actor, params, body }) => {
      const r = await records.rescheduleEmail(deps, actor, params.id, body.scheduled_at)
      return { object: r.object, id: r.id }
    }, {
      ...full('updateEmail', 'Change a scheduled email’s time (Resend’s update)', 'PATCH', ['not_found', 'invalid_parameter', 'email_still_scheduled'], 'Only while the email is scheduled; a canceled email cannot be rescheduled.', true),
      params: s.EmailIdParams,
      body: s.Schedule,
      response: { 200: s.EmailRef },
    })
    .post('/:id/cancel', ({ deps, actor, params }) => records.cancelEmail(deps, actor, params.id), {
      ...full('cancelEmail', 'Cancel a scheduled email', 'POST', ['not_found', 'email_still_scheduled']),
      params: s.EmailIdParams,
      response: { 200: s.EmailRef },
    })
    .post('/:id/reschedule', ({ deps, actor, params, body }) => records.rescheduleEmail(deps, actor, params.id, body.scheduled_at), {
      ...full('rescheduleEmail', 'Move a scheduled email to a new time', 'POST', ['not_found', 'invalid_parameter', 'email_still_scheduled'], undefined, true),
      params: s.EmailIdParams,
      body: s.Schedule,
      response: { 200: s.Rescheduled },
    })
    .get('/:id/events', ({ deps, actor, params, query }) => records.listEvents(deps, actor, params.id, query), {
      ...full('listEmailEvents', 'The email’s event timeline, oldest first', 'GET', ['not_found', 'invalid_cursor']),
      params: s.EmailIdParams,
      query: s.EventsQuery,
      response: { 200: s.EmailEventList },
    })
    .get('/:id/explain', ({ deps, actor, params }) => records.explainEmail(deps, actor, params.id), {
      ...full('explainEmail', 'Why the email is in its state', 'GET', ['not_found'],
        'The checks it passed when accepted (with the budget and quotas then), each delivery with its attempts and SMTP replies, and any suppression of its recipients.'),
      params: s.EmailIdParams,
      response: { 200: s.Explanation },
    })
    .get('/:id/eml', ({ deps, actor, params }) => records.emailEml(deps, actor, params.id), {
      ...full('getEmailEml', 'The message as sent, as a message/rfc822 download', 'GET', ['not_found'],
        'Composed from the record by the same code the MTA sends with: headers, bodies, attachments and the DKIM signature of the sending domain (none for simulator sends without one).'),
      params: s.EmailIdParams,
      response: { 200: t.Any({ description: 'message/rfc822' }) },
    })
    .get('/:id/mime', ({ deps, actor, params }) => records.emailMime(deps, actor, params.id), {
      ...full('getEmailMime', 'The message’s MIME tree as JSON: parts, headers, sizes', 'GET', ['not_found']),
      params: s.EmailIdParams,
      response: { 200: s.MimeTree },
    })
    .get('/:id/attachments', ({ deps, actor, params }) => records.listAttachments(deps, actor, params.id), {
      ...full('listEmailAttachments', 'List an email’s attachments', 'GET', ['not_found']),
      params: s.EmailIdParams,
      response: { 200: s.AttachmentList },
    })
    .get('/:id/attachments/:aid', ({ deps, actor, params, query }) => records.getAttachment(deps, actor, params.id, params.aid, query.download === '1' || query.download === 'true'), {
      ...full('getEmailAttachment', 'One attachment; with `?download=1` the file itself', 'GET', ['not_found']),
      params: s.AttachmentParams,
      query: s.AttachmentQuery,
      response: { 200: t.Union([s.Attachment, t.Any({ description: 'the file, with its content type' })]) },
    })

/** Sending and the email records, mounted as one module. */
export const emailRoutes = (platform: Platform) => new Elysia({ name: 'emails' }).use(emailSendingRoutes(platform)).use(emailRecordRoutes(platform))
