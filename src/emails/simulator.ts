/**
 * Simulator recipients never leave the machine and play out the real event
 * sequence. `delivered@simulator.test`, `bounced+signup@simulator.test`, …; Resend's
 * test addresses at resend.dev behave the same.
 */
export type SimulatorBehaviour = 'delivered' | 'bounced' | 'complained' | 'suppressed' | 'delayed'

export const SIMULATOR_DOMAINS = ['simulator.test', 'resend.dev']
export const BEHAVIOURS: SimulatorBehaviour[] = ['delivered', 'bounced', 'complained', 'suppressed', 'delayed']

export function simulatorBehaviour(address: string): SimulatorBehaviour | null {
  const m = address.toLowerCase().match(/^([a-z]+)(\+[^@]*)?@([a-z0-9.-]+)$/)
  if (!m || !SIMULATOR_DOMAINS.includes(m[3])) return null
  return BEHAVIOURS.includes(m[1] as SimulatorBehaviour) ? (m[1] as SimulatorBehaviour) : null
}

export const isSimulatorAddress = (address: string) => simulatorBehaviour(address) !== null
