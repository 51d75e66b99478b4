import { expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import { deliveries } from '../src/db/tables'
import { recordEvent } from '../src/emails/events'
import { iso } from '../src/lib/clock'
import { insertDomain } from './support/delivery-fixtures'
import { expectError, harness, type Harness } from './support/harness'
import { asCookie, person } from './support/people'

const ORIGIN = { origin: 'http://mailroom.test' }

/** `n` real sends by the key, delivered (capture mode): the emails' ids. */
async function sendMany(h: Harness, token: string, n: number, to = (i: number) => `person${i}@customer.test`) {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const r = await h.call('POST', '/emails', { key: token, body: { from: 'Shop <orders@shop.test>', to: to(i), subject: `Order ${i}`, text: 'Thanks' } })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    ids.push(r.body.id)
  }
  await h.worker.runOnce()
  return ids
}

/** What bounce processing leaves for a hard bounce of a non-existent mailbox. */
const bounce = (h: Harness, emailIds: string[]) =>
  h.root.db.write((tx) => tx.update(deliveries).set({ state: 'bounced', lastCode: 550, lastResponse: '550 5.1.1 <x>: Recipient address rejected: User unknown' }).where(inArray(deliveries.emailId, emailIds)))

async function setup() {
  const h = await harness({ MAILROOM_DELIVERY: 'capture', MAILROOM_HOSTNAME: 'mx.mailroom.test' })
  await insertDomain(h.root, h.accountId, 'shop.test')
  return h
}

test('a bounce spike pauses the key; only a person resumes it', async () => {
  const h = await setup()
  const agent = await h.key({ name: 'agent' })
  const calm = await h.key({ name: 'calm' })
  const ids = await sendMany(h, agent.token, 20)
  await sendMany(h, calm.token, 20)
  await bounce(h, ids.slice(0, 2))
  expect(await h.scheduler.runNow('kill-switch')).toEqual([agent.id])
  const refused = await h.call('POST', '/emails', { key: agent.token, body: { from: 'orders@shop.test', to: 'a@customer.test', subject: 'x', text: 'x' } })
  expectError(refused, 'kill_switch_active', 403)
  expect(refused.body.message).toContain('2 of 20 sends bounced; 2 of 20 recipients do not exist in the last 60 minutes')
  // The calm key goes on; the paused one cannot resume itself, nor can another key.
  expect((await h.call('GET', '/api-keys', { key: calm.token })).status).toBe(200)
  expectError(await h.call('POST', `/api-keys/${agent.id}/resume`, { key: agent.token }), 'kill_switch_active', 403)
  expectError(await h.call('POST', `/api-keys/${agent.id}/resume`), 'human_action_required', 403)
  const owner = await person(h)
  const resumed = await h.call('POST', `/api-keys/${agent.id}/resume`, asCookie(owner.cookie, ORIGIN))
  expect(resumed.status).toBe(200)
  expect(resumed.body.paused_at).toBeNull()
  expect((await h.call('GET', '/api-keys', { key: agent.token })).status).toBe(200)
  await h.close()
})

test('complaints over the threshold pause the key', async () => {
  const h = await setup()
  const agent = await h.key({ name: 'agent' })
  const ids = await sendMany(h, agent.token, 20)
  await h.root.db.write((tx) => recordEvent(tx, h.root.ids, { accountId: h.accountId, emailId: ids[0], type: 'complained', at: iso(h.clock.now()) }))
  expect(await h.scheduler.runNow('kill-switch')).toEqual([agent.id])
  expect((await h.call('GET', `/api-keys/${agent.id}`)).body.paused_reason).toContain('1 of 20 sends drew complaints')
  await h.close()
})

test('too few sends, simulator sends and an old window are not judged', async () => {
  const h = await setup()
  const few = await h.key({ name: 'few' })
  await bounce(h, await sendMany(h, few.token, 19))
  const sim = await h.key({ name: 'simulator' })
  await sendMany(h, sim.token, 20, (i) => `bounced+${i}@simulator.test`)
  expect(await h.scheduler.runNow('kill-switch')).toEqual([])
  const late = await h.key({ name: 'late' })
  const ids = await sendMany(h, late.token, 20)
  h.clock.advance(61 * 60_000)
  await bounce(h, ids)
  expect(await h.scheduler.runNow('kill-switch')).toEqual([])
  await h.close()
})
