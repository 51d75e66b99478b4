import { Elysia, t } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import * as s from './schema'
import * as svc from './service'
import { getUsage } from './usage'

const tag = 'emails'

const COUNTING =
  'Counted from the event record through rollups kept as events are recorded (UTC quarter-hours, hours and days), so a year answers as fast as a day. ' +
  'Windows are counted in whole quarter-hours: a start inside one counts from its beginning, an end inside one to its end, and the reply gives the window counted.'

export const metricsRoutes = (platform: Platform) =>
  new Elysia({ name: 'metrics' })
    .use(platform)
    .get('/metrics', ({ deps, actor, query }) => svc.getMetrics(deps, actor, query), {
      ...op({
        id: 'getMetrics',
        summary: 'Send, delivery and engagement figures over a window, with the window before it and a daily series',
        description: `${COUNTING} Simulator sends count. \`series\` has one element per UTC day of the window (at most 10,000), empty days included.`,
        tag,
        auth: 'full',
        method: 'GET',
      }),
      query: s.MetricsQuery,
      response: { 200: s.Metrics },
    })
    .get('/emails/metrics', ({ deps, actor, query }) => svc.getEmailMetrics(deps, actor, query), {
      ...op({
        id: 'getEmailMetrics',
        summary: 'Account metrics in Resend’s shape, by period, domain, email or broadcast',
        description:
          `${COUNTING} Simulator sends are not counted. Rates are fractions: delivered, bounced over sent; unique opens, unique clicks, complaints and unsubscribes over delivered. ` +
          'An open or click is unique when it is its email’s first. Periods follow the calendar of `timezone`, days of 23 or 25 hours included where clocks change; ' +
          'zones whose offset is not a whole hour (India, Nepal) are exact too, quarter-hours being kept. The `email` dimension and `email_id` read the event record of those emails. ' +
          'A call with `since`, `until`, `group_by`, `event`, `domain` or `api_key_id` is answered as GET /metrics, and then refuses this form’s own parameters.',
        tag,
        auth: 'full',
        method: 'GET',
        errors: ['invalid_parameter'],
      }),
      query: s.EmailMetricsQuery,
      response: { 200: t.Union([s.EmailMetrics, s.Metrics]) },
    })
    .get('/usage', ({ deps, actor }) => getUsage(deps, actor), {
      ...op({
        id: 'getUsage',
        summary: 'Emails used against the daily and monthly quotas, each key’s budget, with reset times',
        description: 'Read from the same counters the send checks spend from, so a send is refused exactly when these say nothing remains.',
        tag,
        auth: 'full',
        method: 'GET',
      }),
      query: t.Object({}),
      response: { 200: s.Usage },
    })
