import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import { Deleted, Paging } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'automations'
const GRAPH = 'Steps and connections take Resend’s shape (`{key, type, config}` and `{from, to, type}`); without connections the steps run in the order given. Referenced events must be defined, templates published, segments and topics present.'

export const automationRoutes = (platform: Platform) =>
  new Elysia({ name: 'automations', prefix: '/automations' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createAutomation(deps, actor, body)), {
      ...op({
        id: 'createAutomation',
        summary: 'Create an automation: a trigger and the steps that follow it',
        description: `${GRAPH} It starts disabled unless \`status\` is \`enabled\`; the graph is saved as version 1.`,
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['invalid_parameter', 'not_found', 'template_not_published'],
      }),
      body: s.CreateAutomation,
      response: { 201: s.Automation },
    })
    .get('', ({ deps, actor, query }) => svc.listAutomations(deps, actor, query), {
      ...op({ id: 'listAutomations', summary: 'List automations, newest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListAutomationsQuery,
      response: { 200: s.AutomationList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getAutomation(deps, actor, params.id), {
      ...op({ id: 'getAutomation', summary: 'Get one automation with its current version’s steps', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.AutomationIdParams,
      response: { 200: s.Automation },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateAutomation(deps, actor, params.id, body), {
      ...op({
        id: 'updateAutomation',
        summary: 'Rename an automation, replace its steps, or turn it on or off',
        description: `A new name or graph makes a new version; runs in progress keep the version they started on. ${GRAPH} \`status: disabled\` ends the runs in progress, as POST /automations/{id}/disable does.`,
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'missing_required_field', 'invalid_parameter', 'template_not_published'],
      }),
      params: s.AutomationIdParams,
      body: s.UpdateAutomation,
      response: { 200: s.Automation },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteAutomation(deps, actor, params.id), {
      ...op({ id: 'deleteAutomation', summary: 'Delete an automation with its versions and runs', tag, auth: 'full', method: 'DELETE', errors: ['not_found'] }),
      params: s.AutomationIdParams,
      response: { 200: Deleted('automation') },
    })
    .post('/:id/enable', ({ deps, actor, params }) => svc.enableAutomation(deps, actor, params.id), {
      ...op({
        id: 'enableAutomation',
        summary: 'Start reacting to the trigger',
        description: 'Checks again that the events, templates, topics and segments the steps name still exist. Occurrences from before enabling start nothing.',
        tag,
        auth: 'full',
        method: 'POST',
        errors: ['not_found', 'invalid_parameter'],
      }),
      params: s.AutomationIdParams,
      response: { 200: s.Automation },
    })
    .post('/:id/disable', ({ deps, actor, params }) => svc.disableAutomation(deps, actor, params.id), {
      ...op({ id: 'disableAutomation', summary: 'Stop reacting to the trigger; runs in progress end as cancelled', tag, auth: 'full', method: 'POST', errors: ['not_found'] }),
      params: s.AutomationIdParams,
      response: { 200: s.Automation },
    })
    .post('/:id/duplicate', async ({ deps, actor, params, set }) => ((set.status = 201), svc.duplicateAutomation(deps, actor, params.id)), {
      ...op({ id: 'duplicateAutomation', summary: 'Copy an automation’s current version as a new, disabled automation', tag, auth: 'full', method: 'POST', errors: ['not_found'] }),
      params: s.AutomationIdParams,
      response: { 201: s.Automation },
    })
    .get('/:id/runs', ({ deps, actor, params, query }) => svc.listRuns(deps, actor, params.id, query), {
      ...op({ id: 'listAutomationRuns', summary: 'List an automation’s runs, newest first', tag, auth: 'full', method: 'GET', errors: ['not_found', 'invalid_cursor'] }),
      params: s.AutomationIdParams,
      query: s.ListRunsQuery,
      response: { 200: s.RunList },
    })
    .get('/:id/runs/:run_id', ({ deps, actor, params }) => svc.getRun(deps, actor, params.id, params.run_id), {
      ...op({ id: 'getAutomationRun', summary: 'Get one run, step by step', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.RunIdParams,
      response: { 200: s.Run },
    })
    .get('/:id/versions', ({ deps, actor, params, query }) => svc.listVersions(deps, actor, params.id, query), {
      ...op({ id: 'listAutomationVersions', summary: 'List an automation’s versions, newest first', tag, auth: 'full', method: 'GET', errors: ['not_found', 'invalid_cursor'] }),
      params: s.AutomationIdParams,
      query: Paging,
      response: { 200: s.VersionList },
    })
