import { Elysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import * as s from './schema'
import * as svc from './service'

const tag = 'trust'

export const trustRoutes = (platform: Platform) =>
  new Elysia({ name: 'trust', prefix: '/trust' })
    .use(platform)
    .get('/standing', ({ deps, actor }) => svc.getStanding(deps, actor), {
      ...op({
        id: 'getTrustStanding',
        summary: 'The account’s trust level, the limits it implies, the reasons, and what raises it',
        description: 'Levels: `sandbox`, `new`, `established`, `trusted`; states over them: `active`, `paused`, `review`, `suspended`, and single paused domains. The rates are the real sends of the review window.',
        tag,
        auth: 'full',
        method: 'GET',
      }),
      response: { 200: s.TrustStanding },
    })
    .post('/appeal', async ({ deps, actor, body, set }) => ((set.status = 201), svc.appeal(deps, actor, body)), {
      ...op({
        id: 'appealTrustStanding',
        summary: 'Ask for a review of a pause or throttle',
        description:
          'A decision reserved to a person signed in with two-factor authentication. The automatic review re-reads the rates: a pause lifts at once when they are back under the thresholds, and the level rises when every requirement in `raises_it` is met. ' +
          'Otherwise the appeal is kept for the operator and the answer is `staff_review_required` (with `appeal_id`); a paused account goes under review meanwhile.',
        tag,
        auth: 'person',
        method: 'POST',
        body: true,
        errors: ['staff_review_required'],
      }),
      body: s.AppealBody,
      response: { 201: s.TrustAppeal },
    })
