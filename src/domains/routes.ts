import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'domains'

export const domainRoutes = (platform: Platform) =>
  new Elysia({ name: 'domains', prefix: '/domains' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createDomain(deps, actor, body)), {
      ...op({
        id: 'createDomain',
        summary: 'Add a sending domain; returns the DNS records to publish',
        description:
          'Generates a 2048-bit DKIM key and a selector. The records are DKIM (TXT), the return-path MX and SPF (TXT) at `<custom_return_path>.<name>`, DMARC advice, and the receiving MX and tracking CNAME when asked for. Checks start at once and run for 72 hours.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['invalid_region', 'mailbox_provider_domain', 'domain_not_claimable', 'domain_blocklisted', 'domain_already_exists', 'domain_verified_elsewhere', 'return_path_subdomain_in_use', 'domain_limit_reached'],
      }),
      body: s.CreateDomain,
      response: { 201: s.Domain },
    })
    .get('', ({ deps, actor, query }) => svc.listDomains(deps, actor, query), {
      ...op({ id: 'listDomains', summary: 'List domains, newest first (without their records)', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListDomainsQuery,
      response: { 200: s.DomainList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getDomain(deps, actor, params.id), {
      ...op({ id: 'getDomain', summary: 'Get one domain with its records and what the last check found', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.DomainIdParams,
      response: { 200: s.Domain },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateDomain(deps, actor, params.id, body), {
      ...op({
        id: 'updateDomain',
        summary: 'Change click tracking, open tracking or the tracking subdomain',
        description:
          'Only `click_tracking`, `open_tracking` and `tracking_subdomain` can change; `name`, `region`, `custom_return_path`, `tls` and `capabilities` are accepted only with their current value. Tracking can be turned on once the tracking CNAME verified.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'domain_field_immutable', 'tracking_subdomain_cannot_be_removed', 'tracking_subdomain_unverified'],
      }),
      params: s.DomainIdParams,
      body: s.UpdateDomain,
      response: { 200: s.Domain },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteDomain(deps, actor, params.id), {
      ...op({ id: 'deleteDomain', summary: 'Remove a domain and its DKIM keys', tag, auth: 'full', method: 'DELETE', errors: ['not_found'] }),
      params: s.DomainIdParams,
      response: { 200: Deleted('domain') },
    })
    .post('/:id/verify', ({ deps, actor, params, body }) => svc.verifyDomain(deps, actor, params.id, body), {
      ...op({
        id: 'verifyDomain',
        summary: 'Check the domain’s DNS records now',
        description:
          'Answers the domain with each record’s status and, where it did not verify, what was found. A closed check window reopens for 72 hours; after 7 days closed, only with `{"reopen": true}`.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['not_found', 'spf_conflict', 'spf_lookup_limit', 'dkim_key_mismatch', 'domain_check_window_expired', 'domain_verified_elsewhere', 'dns_unreachable'],
      }),
      params: s.DomainIdParams,
      body: s.VerifyDomain,
      response: { 200: s.Domain },
    })
    .post('/:id/dkim/rotate', ({ deps, actor, params }) => svc.rotateDkim(deps, actor, params.id), {
      ...op({
        id: 'rotateDomainDkim',
        summary: 'Start a DKIM key rotation: a new selector and key beside the old',
        description: 'The old key keeps signing until a check sees the new record; then the new key signs and the old record leaves the list.',
        tag,
        auth: 'full',
        method: 'POST',
        errors: ['not_found'],
      }),
      params: s.DomainIdParams,
      response: { 200: s.Domain },
    })
