import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'templates'
const REF = ' `{id}` is the template’s id or its alias.'
const DRAFT_ERRORS = ['invalid_parameter', 'invalid_from_address', 'template_name_taken', 'template_alias_taken'] as const

export const templateRoutes = (platform: Platform) =>
  new Elysia({ name: 'templates', prefix: '/templates' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createTemplate(deps, actor, body)), {
      ...op({
        id: 'createTemplate',
        summary: 'Create a template as a draft',
        description:
          'Resend’s request (`name` and `html` required). Variables are declared with a type (`string`, `number`, `boolean`) and an optional `fallback_value`; ' +
          'every `{{{KEY}}}` (or `{{KEY}}`) in the subject, html or text must be declared. Sends use it once published.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: [...DRAFT_ERRORS],
      }),
      body: s.CreateTemplate,
      response: { 201: s.Template },
    })
    .get('', ({ deps, actor, query }) => svc.listTemplates(deps, actor, query), {
      ...op({ id: 'listTemplates', summary: 'List templates, newest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListTemplatesQuery,
      response: { 200: s.TemplateList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getTemplate(deps, actor, params.id), {
      ...op({ id: 'getTemplate', summary: 'Get one template with its draft', description: REF, tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.TemplateParams,
      response: { 200: s.Template },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateTemplate(deps, actor, params.id, body), {
      ...op({
        id: 'updateTemplate',
        summary: 'Edit the draft, the name or the alias',
        description: `The published version keeps sending until the next publish; \`alias: null\` removes the alias.${REF}`,
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', ...DRAFT_ERRORS],
      }),
      params: s.TemplateParams,
      body: s.UpdateTemplate,
      response: { 200: s.Template },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteTemplate(deps, actor, params.id), {
      ...op({ id: 'deleteTemplate', summary: 'Delete a template and its published versions', description: `Emails already sent with it keep their content.${REF}`, tag, auth: 'full', method: 'DELETE', errors: ['not_found', 'template_in_use'] }),
      params: s.TemplateParams,
      response: { 200: Deleted('template') },
    })
    .post('/:id/publish', ({ deps, actor, params }) => svc.publishTemplate(deps, actor, params.id), {
      ...op({
        id: 'publishTemplate',
        summary: 'Publish the draft as a new version',
        description: `Sends use the published version from now on. Publishing a draft with no change since the last publish makes no new version.${REF}`,
        tag,
        auth: 'full',
        method: 'POST',
        errors: ['not_found'],
      }),
      params: s.TemplateParams,
      response: { 200: s.Template },
    })
    .post('/:id/duplicate', async ({ deps, actor, params, set }) => ((set.status = 201), svc.duplicateTemplate(deps, actor, params.id)), {
      ...op({
        id: 'duplicateTemplate',
        summary: 'Copy a template’s draft into a new unpublished template',
        description: `The copy is named "<name> (copy)" (then "(copy 2)", …) and has no alias.${REF}`,
        tag,
        auth: 'full',
        method: 'POST',
        errors: ['not_found'],
      }),
      params: s.TemplateParams,
      response: { 201: s.Template },
    })
    .post('/:id/render', ({ deps, actor, params, body }) => svc.renderTemplate(deps, actor, params.id, body), {
      ...op({
        id: 'renderTemplate',
        summary: 'Render a template with variables, for a preview',
        description:
          'Renders the draft (or, with `version: "published"`, what sends use now) exactly as a send would: values HTML-escaped in the html, fallbacks for what is left out, the text derived from the html when the template has none. Nothing is stored or sent.' +
          REF,
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['not_found', 'invalid_parameter', 'template_not_published', 'template_variable_missing'],
      }),
      params: s.TemplateParams,
      body: s.RenderTemplate,
      response: { 200: s.Rendered },
    })
