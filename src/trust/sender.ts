import type { Config } from '../config'
import { parseAddress, type Address } from '../emails/address'

/** Resend's onboarding address, which agents copy from its examples: it means this deployment's onboarding sender. */
export const RESEND_ONBOARDING = 'onboarding@resend.dev'

export const onboardingAddress = (config: Config): Address | null => (config.trust.onboardingFrom ? parseAddress(config.trust.onboardingFrom) : null)

/** `from` names the onboarding sender: the operator's onboarding address, or Resend's. */
export function isOnboarding(config: Config, from: Pick<Address, 'address'> | null) {
  if (!from) return false
  return from.address === RESEND_ONBOARDING || from.address === onboardingAddress(config)?.address
}
