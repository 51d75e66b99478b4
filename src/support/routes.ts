import { Elysia, t } from 'elysia'
import { op, type OpSpec } from '../http/docs'
import type { Platform } from '../http/platform'
import * as s from './schema'
import * as svc from './service'

const tag = 'support'

const full = (id: string, summary: string, method: OpSpec['method'], errors: OpSpec['errors'] = [], description?: string) =>
  op({ id, summary, tag, auth: 'full', method, errors, body: method !== 'GET', ...(description ? { description } : {}) })

/** Errors of every route that names a request. */
const REQUEST = ['support_ticket_not_found'] as const

export const supportRoutes = (platform: Platform) =>
  new Elysia({ name: 'support', prefix: '/support' })
    .use(platform)
    .get('/answers', ({ deps, query }) => svc.searchPublished(deps, query), {
      ...full('searchSupportAnswers', 'Search the published answers', 'GET', [], 'Without `q`, every answer in shipped order; with it, the answers sharing a word with it, ranked by BM25 over title (weighed three times) and body.'),
      query: s.SearchAnswersQuery,
      response: { 200: s.AnswerList },
    })
    .get('/answers/:slug', ({ deps, params }) => svc.getAnswer(deps, params.slug), {
      ...full('getSupportAnswer', 'One published answer, in markdown', 'GET', ['not_found']),
      params: s.SlugParams,
      response: { 200: s.Answer },
    })
    .post('/answers/:slug/helpful', ({ deps, actor, params, body }) => svc.voteHelpful(deps, actor, params.slug, body.helpful), {
      ...full('voteSupportAnswerHelpful', 'Say whether a published answer helped', 'POST', ['not_found'],
        'One vote per person per answer per UTC day: a console session votes as its person, an API key as itself. A second vote the same day answers `counted: false` and leaves the first.'),
      params: s.SlugParams,
      body: s.HelpfulBody,
      response: { 200: s.HelpfulReply },
    })
    .post('/requests', async ({ deps, actor, body, set }) => {
      const r = await svc.openRequest(deps, actor, body)
      set.status = r.status
      return r.body
    }, {
      ...full('openSupportRequest', 'Open a support request (5 an hour), or draft one from the published answers', 'POST', ['support_rate_limited', 'support_draft_unavailable'],
        'With `MAILROOM_SUPPORT_EMAIL` set, the request is mailed to the operator’s desk with Reply-To the customer; otherwise it waits for the operator in the console. `draft: true` opens nothing and answers 200 with a `support_draft` made from the matching published answers.'),
      body: s.OpenRequest,
      response: { 201: s.RequestWithMessages, 200: s.Draft },
    })
    .get('/requests', ({ deps, actor, query }) => svc.listRequests(deps, actor, query), {
      ...full('listSupportRequests', 'List support requests, newest first', 'GET', ['invalid_cursor']),
      query: s.ListRequestsQuery,
      response: { 200: s.RequestList },
    })
    .get('/requests/:id', ({ deps, actor, params }) => svc.getRequest(deps, actor, params.id), {
      ...full('getSupportRequest', 'One support request with its messages and files', 'GET', [...REQUEST]),
      params: s.RequestParams,
      response: { 200: s.RequestWithMessages },
    })
    .post('/requests/:id/replies', async ({ deps, actor, params, body, set }) => ((set.status = 201), svc.reply(deps, actor, params.id, body.message)), {
      ...full('replySupportRequest', 'Reply on a support request (30 an hour)', 'POST', [...REQUEST, 'support_closed', 'support_reply_too_soon']),
      params: s.RequestParams,
      body: s.ReplyBody,
      response: { 201: s.Message },
    })
    .post('/requests/:id/attachments', async ({ deps, actor, params, body, set }) => ((set.status = 201), svc.attach(deps, actor, params.id, body)), {
      ...full('attachSupportFiles', 'Attach files to a support request', 'POST',
        [...REQUEST, 'support_closed', 'support_upload_rejected', 'support_upload_too_large', 'support_reply_too_soon'],
        'JSON `{files: [{filename, content_type?, content (base64)}], message?}`, one message per call. Screenshots (PNG, JPEG, GIF, WebP), PDF, CSV or plain-text logs, told by their bytes; 10 MB each, at most 5 files and 25 MB a message. Files are kept 30 days.'),
      params: s.RequestParams,
      body: s.AttachBody,
      response: { 201: s.Message },
    })
    .get('/requests/:id/attachments/:aid', ({ deps, actor, params }) => svc.downloadAttachment(deps, actor, params.id, params.aid), {
      ...full('downloadSupportAttachment', 'Download an attached file (gone after 30 days)', 'GET', [...REQUEST, 'not_found', 'support_attachment_expired']),
      params: s.AttachmentParams,
      response: { 200: t.Any({ description: 'the file, with its content type and Content-Disposition' }) },
    })
    .post('/requests/:id/close', ({ deps, actor, params }) => svc.closeRequest(deps, actor, params.id), {
      ...full('closeSupportRequest', 'Close a support request', 'POST', [...REQUEST, 'support_closed']),
      params: s.RequestParams,
      response: { 200: s.RequestWithMessages },
    })
    .post('/requests/:id/reopen', ({ deps, actor, params }) => svc.reopenRequest(deps, actor, params.id), {
      ...full('reopenSupportRequest', 'Reopen a closed support request (within 14 days)', 'POST', [...REQUEST, 'support_closed', 'support_reopen_expired']),
      params: s.RequestParams,
      response: { 200: s.RequestWithMessages },
    })
    .post('/requests/:id/merge', ({ deps, actor, params, body }) => svc.mergeRequest(deps, actor, params.id, body.source_id), {
      ...full('mergeSupportRequests', 'Merge another support request into this one', 'POST', [...REQUEST, 'support_closed', 'support_merge_conflict', 'invalid_parameter'],
        'The source’s messages and files move here and it ends `merged`. An id you cannot see is `support_ticket_not_found`; one of another account you belong to (a console session) is `support_merge_conflict`.'),
      params: s.RequestParams,
      body: s.MergeBody,
      response: { 200: s.RequestWithMessages },
    })
