import type { DomainRow, Ledger, SendContext } from '../emails/checks'
import type { Draft } from '../emails/draft'
import type { Deps } from '../deps'
import type { Actor } from '../lib/actor'
import { onboardingCap } from './onboarding'
import { volumeGate } from './standing'

/**
 * The trust system's gate on a send as a whole, inside its transaction and after
 * the ledger: the onboarding sender's daily cap, then the standing's limits on
 * volume (bulk sends under review or from a young domain, the ladder's daily cap).
 */
export async function sendGate(deps: Deps, actor: Actor, ledger: Ledger, items: { draft: Draft; domain: DomainRow | null }[], now: number, ctx?: SendContext) {
  await onboardingCap(deps, actor, items.map((p) => p.draft), now)
  const real = items.filter((p) => !p.draft.simulator)
  const recipients = real.reduce((n, p) => n + p.draft.recipients.length, 0)
  await volumeGate(
    deps,
    actor,
    {
      real: recipients,
      bulk: !!ctx?.batch && recipients > deps.config.trust.bulkSize,
      domains: real.flatMap((p) => (p.domain ? [{ name: p.domain.name, verifiedAt: p.domain.verifiedAt }] : [])),
      sentToday: ledger.daily.used,
    },
    now,
  )
}

/**
 * The gate on a broadcast when it starts (now or at its time): `domain` is the
 * sending domain, null when every recipient is a simulator address, which
 * passes. A broadcast is always a bulk send.
 */
export async function broadcastGate(deps: Deps, actor: Actor, domain: DomainRow | null, recipients: number, now: number) {
  if (!domain) return
  await volumeGate(deps, actor, { real: recipients, bulk: true, domains: [{ name: domain.name, verifiedAt: domain.verifiedAt }], sentToday: null }, now, true)
}
