// The retry schedule, reply reading and circuit breaker as pure functions.
import { describe, expect, test } from 'bun:test'
import { CircuitBreaker, classifyBounce, enhancedCode, MIN_LIFETIME_MS, nextRetry, parseRetryHint, RETRY_SCHEDULE_MS } from '../src/delivery/retry'
import { resultOf } from '../src/delivery/transport'

const MIN = 60_000
const HOUR = 60 * MIN

describe('retry schedule', () => {
  test('adds up to at least 48 hours and starts quickly', () => {
    expect(RETRY_SCHEDULE_MS.slice(0, 3)).toEqual([MIN, 5 * MIN, 15 * MIN])
    expect(RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(48 * HOUR)
  })

  test('walks the schedule and gives up only once it is spent and 48 hours have passed', () => {
    let now = 0
    const delays: number[] = []
    let attempts = 0
    for (;;) {
      attempts++
      const d = nextRetry(attempts, now, 0, '451 4.3.0 later')
      if (d.giveUp) break
      delays.push(d.delayMs)
      now += d.delayMs
    }
    expect(delays.slice(0, 11)).toEqual(RETRY_SCHEDULE_MS.slice(0, 10).concat([delays[10]]))
    expect(now).toBeGreaterThanOrEqual(MIN_LIFETIME_MS)
    expect(now).toBeLessThan(MIN_LIFETIME_MS + 12 * HOUR)
    expect(attempts).toBe(RETRY_SCHEDULE_MS.length + 1)
  })

  test('a "retry in N" hint is a floor within bounds, and never shortens the 48 hours', () => {
    expect(nextRetry(1, 0, 0, '451 4.7.1 Greylisted, retry in 300 seconds').delayMs).toBe(5 * MIN)
    expect(nextRetry(1, 0, 0, '451 please try again in 2 minutes').delayMs).toBe(2 * MIN)
    expect(nextRetry(3, 0, 0, '451 retry in 10 seconds').delayMs).toBe(15 * MIN)
    expect(nextRetry(1, 0, 0, '421 try again in 30 hours').delayMs).toBe(6 * HOUR)
    expect(nextRetry(40, 10 * HOUR, 0, '451 retry in 10 seconds').giveUp).toBe(false)
  })

  test('reads hints in the usual wordings', () => {
    expect(parseRetryHint('451 4.7.1 Please retry in 60 seconds')).toBe(60_000)
    expect(parseRetryHint('450 4.2.0 Greylisted, try again in 5 minutes')).toBe(5 * MIN)
    expect(parseRetryHint('421 4.7.0 Try again after 1 hour')).toBe(HOUR)
    expect(parseRetryHint('451 4.3.0 Temporary local problem')).toBeNull()
    expect(parseRetryHint('451 retry in 1 s')).toBe(10_000)
  })
})

describe('replies', () => {
  test('enhanced status codes', () => {
    expect(enhancedCode('550 5.1.1 <x@y>: user unknown')).toBe('5.1.1')
    expect(enhancedCode('250 2.0.0 Ok')).toBe('2.0.0')
    expect(enhancedCode('550 no such user')).toBeNull()
  })

  test('which 5xx replies suppress the address', () => {
    expect(classifyBounce(550, '5.1.1', '550 5.1.1 unknown')).toEqual({ type: 'Permanent', subType: 'NoEmail', suppress: true })
    expect(classifyBounce(550, null, '550 no such user')).toEqual({ type: 'Permanent', subType: 'General', suppress: true })
    expect(classifyBounce(552, '5.2.2', '552 5.2.2 mailbox full')).toMatchObject({ type: 'Transient', subType: 'MailboxFull', suppress: false })
    expect(classifyBounce(552, '5.3.4', '552 5.3.4 message too big')).toMatchObject({ subType: 'MessageTooLarge', suppress: false })
    expect(classifyBounce(554, '5.7.1', '554 5.7.1 spam')).toMatchObject({ type: 'Permanent', subType: 'ContentRejected', suppress: false })
    expect(classifyBounce(554, null, '554 transaction failed')).toMatchObject({ type: 'Undetermined', suppress: false })
  })

  test('nodemailer outcomes map to delivered, deferred, bounced, network or failed', () => {
    const err = (o: object) => Object.assign(new Error('x'), o)
    expect(resultOf(null, { response: '250 2.0.0 Ok: queued' }, 'h', 'd')).toMatchObject({ kind: 'delivered', code: 250, enhanced: '2.0.0' })
    expect(resultOf(err({ code: 'EENVELOPE', responseCode: 450, response: '450 4.2.1 busy' }), null, 'h', 'd').kind).toBe('deferred')
    expect(resultOf(err({ code: 'EENVELOPE', responseCode: 550, response: '550 5.1.1 no' }), null, 'h', 'd').kind).toBe('bounced')
    expect(resultOf(err({ code: 'ECONNECTION', message: 'connect ECONNREFUSED 127.0.0.1:25' }), null, 'h', 'd')).toMatchObject({ kind: 'network', destination: 'd' })
    expect(resultOf(err({ code: 'EAUTH', responseCode: 535, response: '535 bad' }), null, 'h', 'relay').kind).toBe('network')
    expect(resultOf(err({ code: 'ETLS', responseCode: 500, response: '500 no' }), null, 'h', 'd').kind).toBe('deferred')
  })
})

describe('circuit breaker', () => {
  test('a relay opens it at the first connection failure; backoff doubles; a success closes it', () => {
    const b = new CircuitBreaker(1, 1000, 8000)
    expect(b.failure('relay', 0)).toBe(true)
    expect(b.isOpen(999)).toBe(true)
    expect(b.isOpen(1000)).toBe(false)
    expect(b.failure('relay', 1000)).toBe(true)
    expect(b.resumeAt).toBe(3000)
    b.failure('relay', 3000)
    b.failure('relay', 7000)
    b.failure('relay', 15_000)
    expect(b.resumeAt).toBe(23_000)
    b.success()
    expect(b.isOpen(15_001)).toBe(false)
    expect(b.failure('relay', 30_000)).toBe(true)
    expect(b.resumeAt).toBe(31_000)
  })

  test('MX delivery opens it only when many different destinations fail in a row', () => {
    const b = new CircuitBreaker(3, 1000)
    expect(b.failure('a.example', 0)).toBe(false)
    expect(b.failure('a.example', 0)).toBe(false)
    expect(b.failure('b.example', 0)).toBe(false)
    b.success()
    expect(b.failure('c.example', 0)).toBe(false)
    expect(b.failure('d.example', 0)).toBe(false)
    expect(b.failure('e.example', 0)).toBe(true)
    expect(b.isOpen(500)).toBe(true)
  })
})
