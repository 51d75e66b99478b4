import { expect, test } from 'bun:test'
import { topicAllows } from '../src/topics/service'
import { harness } from './support/harness'

test('topicAllows: an answer wins; silence follows the default; an address that is no contact follows the default', async () => {
  const h = await harness()
  const optIn = (await h.call('POST', '/topics', { body: { name: 'News', default_subscription: 'opt_in' } })).body.id
  const optOut = (await h.call('POST', '/topics', { body: { name: 'Receipts', default_subscription: 'opt_out' } })).body.id
  await h.call('POST', '/contacts', { body: { email: 'yes@example.org' } })
  await h.call('POST', '/contacts', { body: { email: 'no@example.org' } })
  await h.call('POST', '/contacts', { body: { email: 'quiet@example.org' } })
  await h.call('PATCH', '/contacts/yes@example.org/topics', { body: { topics: [{ topic_id: optIn, subscribed: true }] } })
  await h.call('PATCH', '/contacts/no@example.org/topics', { body: { topics: [{ topic_id: optOut, subscribed: false }] } })
  const q = h.root.db.q
  expect(await topicAllows(q, h.accountId, optIn, 'YES@example.org')).toBe(true)
  expect(await topicAllows(q, h.accountId, optIn, 'quiet@example.org')).toBe(false)
  expect(await topicAllows(q, h.accountId, optIn, 'stranger@example.org')).toBe(false)
  expect(await topicAllows(q, h.accountId, optOut, 'no@example.org')).toBe(false)
  expect(await topicAllows(q, h.accountId, optOut, 'quiet@example.org')).toBe(true)
  expect(await topicAllows(q, h.accountId, optOut, 'stranger@example.org')).toBe(true)
  await h.close()
})
