import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'api-keys'

export const apiKeyRoutes = (platform: Platform) =>
  new Elysia({ name: 'api-keys', prefix: '/api-keys' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createKey(deps, actor, body)), {
      ...op({ id: 'createApiKey', summary: 'Create an API key; its token is shown once', tag, auth: 'full', method: 'POST', body: true, errors: ['invalid_parameter', 'key_budget_exceeds_plan'] }),
      body: s.CreateApiKey,
      response: { 201: s.ApiKeyWithToken },
    })
    .get('', ({ deps, actor, query }) => svc.listKeys(deps, actor, query), {
      ...op({ id: 'listApiKeys', summary: 'List API keys (never their tokens)', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListApiKeysQuery,
      response: { 200: s.ApiKeyList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getKey(deps, actor, params.id), {
      ...op({ id: 'getApiKey', summary: 'Get one API key (never its token)', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.KeyIdParams,
      response: { 200: s.ApiKey },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateKey(deps, actor, params.id, body), {
      ...op({ id: 'updateApiKey', summary: 'Rename a key or change its domain scope and scopes', tag, auth: 'full', method: 'PATCH', body: true, errors: ['not_found'] }),
      params: s.KeyIdParams,
      body: s.UpdateApiKey,
      response: { 200: s.ApiKey },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteKey(deps, actor, params.id), {
      ...op({ id: 'deleteApiKey', summary: 'Revoke an API key at once', tag, auth: 'full', method: 'DELETE', errors: ['not_found'] }),
      params: s.KeyIdParams,
      response: { 200: Deleted('api_key') },
    })
    .post('/:id/rotate', ({ deps, actor, params, body }) => svc.rotateKey(deps, actor, params.id, body.grace_hours), {
      ...op({ id: 'rotateApiKey', summary: 'Issue a new token; the old one works for the grace period', tag, auth: 'full', method: 'POST', body: true, errors: ['not_found'] }),
      params: s.KeyIdParams,
      body: s.RotateApiKey,
      response: { 200: s.ApiKeyWithToken },
    })
    .post('/:id/resume', ({ deps, actor, params }) => svc.resumeKey(deps, actor, params.id), {
      ...op({ id: 'resumeApiKey', summary: 'Lift a kill switch (a person only)', tag, auth: 'person', method: 'POST', errors: ['not_found'] }),
      params: s.KeyIdParams,
      response: { 200: s.ApiKey },
    })

export const keyLimitRoutes = (platform: Platform) =>
  new Elysia({ name: 'key-limits', prefix: '/limits/keys' })
    .use(platform)
    .get('/:id', ({ deps, actor, params }) => svc.getLimits(deps, actor, params.id), {
      ...op({ id: 'getKeyLimits', summary: 'A key’s budget, rate ceiling, use and reset times', tag, auth: 'send', method: 'GET', errors: ['not_found'] }),
      params: s.KeyIdParams,
      response: { 200: s.KeyLimits },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateLimits(deps, actor, params.id, body), {
      ...op({ id: 'updateKeyLimits', summary: 'Set a key’s budget, period, rate ceiling and loop guard', tag, auth: 'full', method: 'PATCH', body: true, errors: ['not_found', 'approval_required', 'key_budget_exceeds_plan'] }),
      params: s.KeyIdParams,
      body: s.UpdateKeyLimits,
      response: { 200: s.KeyLimits },
    })
