import { Elysia, t } from 'elysia'
import type { ErrorCode } from '../errors/catalogue'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { SEND_ERRORS } from '../emails/send-errors'
import * as s from './schema'
import * as svc from './service'

const tag = 'receiving'

/** A reply is a send (without open tracking) of an inbound email that must exist. */
const REPLY_ERRORS: ErrorCode[] = ['not_found', ...SEND_ERRORS.filter((c) => c !== 'open_tracking_on_transactional')]

const full = (id: string, summary: string, errors: Parameters<typeof op>[0]['errors'] = [], description?: string) =>
  op({ id, summary, tag, auth: 'full', method: 'GET', errors, ...(description ? { description } : {}) })

const rateInto = (set: { headers: Record<string, string | number> }) => (st: { remaining: number; resetSeconds: number }) => {
  set.headers['ratelimit-remaining'] = String(st.remaining)
  set.headers['ratelimit-reset'] = String(st.resetSeconds)
}

/**
 * Mounted before the email records so `/emails/receiving…` never reaches `/emails/:id`
 * (Elysia also prefers a static segment to a parameter; the tests check both).
 */
export const receivingRoutes = (platform: Platform) =>
  new Elysia({ name: 'receiving', prefix: '/emails/receiving' })
    .use(platform)
    .get('', ({ deps, actor, query }) => svc.listInbound(deps, actor, query), {
      ...full('listReceivedEmails', 'List received emails, newest first', ['invalid_cursor', 'invalid_parameter'],
        'Filters: `to` (an envelope recipient or an address in To or Cc), `from` (an address or a domain), and the received range `since`/`until` (a bare end date covers its whole day). Items leave out html, text, headers and raw, as in Resend.'),
      query: s.ListInboundQuery,
      response: { 200: s.InboundList },
    })
    .get('/threads', ({ deps, actor, query }) => svc.listThreads(deps, actor, query), {
      ...full('listThreads', 'Conversations: inbound and outbound mail grouped by Message-ID, In-Reply-To and References', ['invalid_cursor']),
      query: s.ListThreadsQuery,
      response: { 200: s.ThreadList },
    })
    .get('/threads/:id', ({ deps, actor, params }) => svc.getThread(deps, actor, params.id), {
      ...full('getThread', 'One thread with its messages, oldest first', ['not_found']),
      params: s.InboundParams,
      response: { 200: s.Thread },
    })
    .get('/:id', ({ deps, actor, params, query }) => svc.getInbound(deps, actor, params.id, query.html_format), {
      ...full('getReceivedEmail', 'One received email: bodies, headers, attachments and SPF/DKIM/DMARC results', ['not_found']),
      params: s.InboundParams,
      query: s.GetInboundQuery,
      response: { 200: s.InboundEmail },
    })
    .get('/:id/attachments', ({ deps, actor, params }) => svc.listInboundAttachments(deps, actor, params.id), {
      ...full('listReceivedEmailAttachments', 'A received email’s attachments and inline parts', ['not_found']),
      params: s.InboundParams,
      response: { 200: s.InboundAttachmentList },
    })
    .get('/:id/attachments/:aid', ({ deps, actor, params, query }) => svc.getInboundAttachment(deps, actor, params.id, params.aid, query.download === '1' || query.download === 'true'), {
      ...full('getReceivedEmailAttachment', 'One attachment; with `?download=1` the file itself', ['not_found']),
      params: s.InboundAttachmentParams,
      query: s.DownloadQuery,
      response: { 200: t.Union([s.InboundAttachment, t.Any({ description: 'the file, with its content type' })]) },
    })
    .get('/:id/raw', ({ deps, actor, params }) => svc.getInboundRaw(deps, actor, params.id), {
      ...full('getReceivedEmailRaw', 'The message as received, as a message/rfc822 download', ['not_found'], 'The bytes the sending server handed over, with our Received field on top.'),
      params: s.InboundParams,
      response: { 200: t.Any({ description: 'message/rfc822' }) },
    })
    .post('/:id/reply', ({ deps, actor, params, body, set }) => svc.replyTo(deps, actor, params.id, body, rateInto(set)), {
      ...op({
        id: 'replyToReceivedEmail',
        summary: 'Reply in the thread: In-Reply-To, References, `Re:` subject, from the address it was sent to',
        description:
          'A send through POST /emails with every check (sending domain, suppression, budget, quotas, rate window). Defaults: `from` the address the message was sent to, `to` its Reply-To or From, `subject` `Re: ` and the original. The reply joins the message’s thread.',
        tag,
        auth: 'send',
        method: 'POST',
        body: true,
        errors: [...REPLY_ERRORS],
      }),
      params: s.InboundParams,
      body: s.Reply,
      response: { 200: s.Replied },
    })
