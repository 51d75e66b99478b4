import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import * as s from './schema'
import * as svc from './service'

const tag = 'dedicated-ips'

export const dedicatedIpRoutes = (platform: Platform) =>
  new Elysia({ name: 'dedicated-ips', prefix: '/dedicated-ips' })
    .use(platform)
    .get('', ({ deps, actor, query }) => svc.listIps(deps, actor, query), {
      ...op({ id: 'listDedicatedIps', summary: 'List the account’s outbound source addresses with their warm-up state and domains', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListDedicatedIpsQuery,
      response: { 200: s.DedicatedIpList },
    })
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.registerIp(deps, actor, body)), {
      ...op({
        id: 'registerDedicatedIp',
        summary: 'Register an address of this host as a dedicated outbound IP',
        description:
          'A person’s decision (owners and admins, in the console). The address must be one of this host’s (any of 127/8 on Linux loopback). Its reverse DNS name is recorded. Warm-up caps the daily volume by the schedule in `warmup.schedule`, from today, unless `warmup: false`.',
        tag,
        auth: 'person',
        method: 'POST',
        body: true,
        errors: ['invalid_parameter', 'dedicated_ip_taken'],
      }),
      body: s.RegisterDedicatedIp,
      response: { 201: s.DedicatedIp },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getIp(deps, actor, params.id), {
      ...op({ id: 'getDedicatedIp', summary: 'Get one dedicated IP', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.DedicatedIpIdParams,
      response: { 200: s.DedicatedIp },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateIp(deps, actor, params.id, body), {
      ...op({
        id: 'updateDedicatedIp',
        summary: 'Assign domains to a dedicated IP, turn warm-up on or off, set the overflow rule',
        description: 'The MTA binds to this address when it delivers mail of the assigned domains. Domains the operator pinned (MAILROOM_DEDICATED_IP_PINS) answer `dedicated_ip_assigned_by_us`.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'invalid_parameter', 'dedicated_ip_assigned_by_us'],
      }),
      params: s.DedicatedIpIdParams,
      body: s.UpdateDedicatedIp,
      response: { 200: s.DedicatedIp },
    })
