import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import * as s from './schema'
import * as svc from './service'

const tag = 'deliverability'

export const deliverabilityRoutes = (platform: Platform) =>
  new Elysia({ name: 'deliverability', prefix: '/deliverability' })
    .use(platform)
    .get('/report', ({ deps, actor }) => svc.getReport(deps, actor), {
      ...op({
        id: 'getDeliverabilityReport',
        summary: 'Bounce and complaint rates against thresholds, their trend, and the domains’ authentication',
        description: 'Rates of real (not simulator) mail over today, 7 and 30 UTC days, judged against the kill switch’s thresholds once a window has enough sends; a 30-day daily series; each domain’s DKIM, SPF, return-path MX and DMARC as the last check found them.',
        tag,
        auth: 'full',
        method: 'GET',
      }),
      response: { 200: s.DeliverabilityReport },
    })
    .get('/domains/:id', ({ deps, actor, params }) => svc.checkDomainLive(deps, actor, params.id), {
      ...op({
        id: 'checkDomainDeliverability',
        summary: 'Live SPF, DKIM, DMARC, MX and PTR checks of one domain, each with its fix',
        description: 'Asks DNS now (MAILROOM_DNS_SERVERS) and stores nothing; GET /domains/{id} shows what the scheduled checks found.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['not_found', 'dns_unreachable'],
      }),
      params: s.DeliverabilityDomainParams,
      response: { 200: s.DomainDeliverability },
    })
    .get('/blocklists', ({ deps, actor }) => svc.checkBlocklists(deps, actor), {
      ...op({
        id: 'checkBlocklists',
        summary: 'DNS blocklist checks of the sending addresses and verified domains',
        description:
          'Each dedicated IP and the host’s default outbound address against MAILROOM_DNSBL_ZONES, each verified domain against MAILROOM_DBL_ZONES, now. A 127.0.0.x answer is a listing (with the zone’s TXT reason), NXDOMAIN is clean, no answer is unknown. A listed domain may not send (`sending_domain_blocked`) until a check finds it clean; the result is stored, as the daily check’s is.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['dns_unreachable'],
      }),
      response: { 200: s.BlocklistReport },
    })
