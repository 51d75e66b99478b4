import type { SimulatorBehaviour } from '../emails/simulator'
import type { Outcome } from './record'
import type { DeliveryRow } from './types'

/** The delayed simulator address is delivered this long after its delay. */
export const SIMULATED_DELAY_MS = 60_000

const attempt = (at: string, smtpCode: number, enhancedCode: string, response: string) => ({
  startedAt: at,
  durationMs: 0,
  host: null,
  smtpCode,
  enhancedCode,
  response,
  outcome: 'simulated' as const,
})

/**
 * Simulator recipients never touch the network; they play the event sequence a real
 * message would produce. No suppression is ever added, so the addresses stay usable.
 */
export function simulate(row: DeliveryRow, behaviour: SimulatorBehaviour, now: number): Outcome {
  const at = new Date(now).toISOString()
  const sent = row.attempts === 0 ? [{ type: 'sent' as const, at }] : []
  switch (behaviour) {
    case 'suppressed':
      return {
        row,
        state: 'suppressed',
        countAttempt: false,
        events: [{ type: 'suppressed', at, data: { suppressed: { reason: 'simulated', message: 'The simulator address is treated as on the suppression list.' } } }],
        at,
      }
    case 'bounced': {
      const response = '550 5.1.1 The email account that you tried to reach does not exist (simulated)'
      return {
        row,
        state: 'bounced',
        countAttempt: true,
        attempt: attempt(at, 550, '5.1.1', response),
        events: [...sent, { type: 'bounced', at, data: { bounce: { type: 'Permanent', subType: 'NoEmail', message: 'The recipient does not exist (simulated hard bounce).', diagnosticCode: [`smtp; ${response}`] } } }],
        at,
      }
    }
    case 'complained':
      return {
        row,
        state: 'delivered',
        countAttempt: true,
        attempt: attempt(at, 250, '2.0.0', '250 2.0.0 OK (simulated)'),
        events: [...sent, { type: 'delivered', at }, { type: 'complained', at, data: { complaint: { type: 'abuse', simulated: true } } }],
        at,
      }
    case 'delayed':
      if (row.state !== 'deferred') {
        const response = '451 4.7.1 Try again later (simulated delay)'
        const next = new Date(now + SIMULATED_DELAY_MS).toISOString()
        return {
          row,
          state: 'deferred',
          countAttempt: true,
          nextAttemptAt: next,
          attempt: attempt(at, 451, '4.7.1', response),
          events: [...sent, { type: 'delivery_delayed', at, data: { response, next_attempt_at: next } }],
          at,
        }
      }
      return { row, state: 'delivered', countAttempt: true, attempt: attempt(at, 250, '2.0.0', '250 2.0.0 OK (simulated)'), events: [...sent, { type: 'delivered', at }], at }
    case 'delivered':
    default:
      return { row, state: 'delivered', countAttempt: true, attempt: attempt(at, 250, '2.0.0', '250 2.0.0 OK (simulated)'), events: [...sent, { type: 'delivered', at }], at }
  }
}
