// The official Resend SDK (npm `resend`), pointed at Mailroom over real HTTP, must work unchanged.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Resend } from 'resend'
import { fanOut } from './support/broadcasts'
import { makeSegment } from './support/contact-fixtures'
import { harness, type Harness } from './support/harness'

let h: Harness
let server: ReturnType<typeof Bun.serve>
let resend: Resend

beforeAll(async () => {
  h = await harness({ MAILROOM_RATE_LIMIT: '100000' })
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => h.app.handle(req) })
  resend = new Resend(h.token, { baseUrl: `http://127.0.0.1:${server.port}` } as never)
})
afterAll(async () => {
  server.stop(true)
  await h.close()
})

describe('resend SDK 6.38 against Mailroom', () => {
  test('emails: send with an idempotency key (replayed), get, batch, and errors in the SDK’s error object', async () => {
    const first = await resend.emails.send({ from: 'Agent <agent@anywhere.dev>', to: 'delivered@resend.dev', subject: 'Hi', text: 'Hello' }, { idempotencyKey: 'sdk-1' })
    expect(first.error).toBeNull()
    const again = await resend.emails.send({ from: 'Agent <agent@anywhere.dev>', to: 'delivered@resend.dev', subject: 'Hi', text: 'Hello' }, { idempotencyKey: 'sdk-1' })
    expect(again.data?.id).toBe(first.data!.id)
    const got = await resend.emails.get(first.data!.id)
    expect(got.data).toMatchObject({ object: 'email', id: first.data!.id, subject: 'Hi', to: ['delivered@resend.dev'], last_event: 'queued' })
    const batch = await resend.batch.send([
      { from: 'a@anywhere.dev', to: 'delivered@simulator.test', subject: 'one', text: '1' },
      { from: 'a@anywhere.dev', to: 'bounced@simulator.test', subject: 'two', text: '2' },
    ])
    expect(batch.data?.data).toHaveLength(2)
    const bad = await resend.emails.send({ from: 'not an address', to: 'delivered@resend.dev', subject: 'x', text: 'y' })
    expect(bad.data).toBeNull()
    expect(bad.error).toMatchObject({ name: 'invalid_from_address', statusCode: 422 })
    const cancel = await resend.emails.cancel(first.data!.id)
    expect(cancel.error).toMatchObject({ statusCode: 409 })
  })

  test('API keys: create, list, remove', async () => {
    const made = await resend.apiKeys.create({ name: 'sdk key', permission: 'sending_access' })
    expect(made.data?.token).toStartWith('mr_')
    const list = await resend.apiKeys.list()
    expect(list.data?.data.map((k) => k.id)).toContain(made.data!.id)
    const removed = await resend.apiKeys.remove(made.data!.id)
    expect(removed.error).toBeNull()
  })

  test('topics and contacts, including the bare-array topic answers the SDK sends', async () => {
    const topic = await resend.topics.create({ name: 'Product news', defaultSubscription: 'opt_in' } as never)
    expect(topic.error).toBeNull()
    const topicId = topic.data!.id
    expect((await resend.topics.get(topicId)).data).toMatchObject({ name: 'Product news', default_subscription: 'opt_in' })
    const contact = await resend.contacts.create({ email: 'ada@example.org', firstName: 'Ada' } as never)
    expect(contact.error).toBeNull()
    const answered = await resend.contacts.topics.update({ email: 'ada@example.org', topics: [{ id: topicId, subscription: 'opt_in' }] } as never)
    expect(answered.error).toBeNull()
    const listed = await resend.contacts.topics.list({ email: 'ada@example.org' } as never)
    expect(listed.data?.data.find((t: { id: string }) => t.id === topicId)).toMatchObject({ subscription: 'opt_in' })
    expect((await resend.contacts.get({ email: 'ada@example.org' } as never)).data).toMatchObject({ email: 'ada@example.org', first_name: 'Ada' })
    expect((await resend.contacts.remove({ email: 'ada@example.org' } as never)).error).toBeNull()
    expect((await resend.topics.remove(topicId)).error).toBeNull()
  })

  test('contacts with and without an audienceId, their segments, and contact properties', async () => {
    const prop = await resend.contactProperties.create({ key: 'plan', type: 'string', fallbackValue: 'free' })
    expect(prop.data?.object).toBe('contact_property')
    expect((await resend.contactProperties.get(prop.data!.id)).data).toMatchObject({ key: 'plan', type: 'string', fallbackValue: 'free' })
    expect((await resend.contactProperties.update({ id: prop.data!.id, fallbackValue: 'trial' })).error).toBeNull()
    expect((await resend.contactProperties.list()).data?.data).toEqual([expect.objectContaining({ key: 'plan', fallbackValue: 'trial' })])

    // Without an audience.
    const grace = await resend.contacts.create({ email: 'grace@example.org', firstName: 'Grace', properties: { plan: 'pro' } })
    expect(grace.error).toBeNull()
    expect(grace.data?.object).toBe('contact')
    expect((await resend.contacts.get(grace.data!.id)).data).toMatchObject({ email: 'grace@example.org', first_name: 'Grace', properties: { plan: 'pro' } })
    expect((await resend.contacts.update({ id: grace.data!.id, lastName: 'Hopper', properties: { plan: 'team' } })).error).toBeNull()
    expect((await resend.contacts.get({ email: 'grace@example.org' })).data).toMatchObject({ last_name: 'Hopper', properties: { plan: 'team' } })
    expect((await resend.contacts.list()).data?.data.map((c) => c.email)).toContain('grace@example.org')
    const duplicate = await resend.contacts.create({ email: 'GRACE@example.org' })
    expect(duplicate.error).toMatchObject({ statusCode: 409, code: 'contact_already_exists' })
    const badProperty = await resend.contacts.update({ email: 'grace@example.org', properties: { plan: 7 } })
    expect(badProperty.error).toMatchObject({ statusCode: 400, name: 'validation_error' })

    // With an audience (a segment under its older name).
    const audience = await makeSegment(h, 'Newsletter')
    const ada = await resend.contacts.create({ audienceId: audience.id, email: 'ada@example.org', firstName: 'Ada' })
    expect(ada.error).toBeNull()
    expect((await resend.contacts.list({ audienceId: audience.id })).data?.data.map((c) => c.email)).toEqual(['ada@example.org'])
    expect((await resend.contacts.get({ audienceId: audience.id, email: 'ada@example.org' })).data).toMatchObject({ id: ada.data!.id, first_name: 'Ada' })
    expect((await resend.contacts.update({ audienceId: audience.id, id: ada.data!.id, unsubscribed: true })).error).toBeNull()
    expect((await resend.contacts.get({ audienceId: audience.id, id: ada.data!.id })).data).toMatchObject({ unsubscribed: true })
    expect((await resend.contacts.get({ audienceId: audience.id, email: 'grace@example.org' })).error).toMatchObject({ statusCode: 404, name: 'not_found' })

    // Segment membership.
    expect((await resend.contacts.segments.add({ email: 'grace@example.org', segmentId: audience.id })).error).toBeNull()
    expect((await resend.contacts.segments.list({ contactId: grace.data!.id })).data?.data).toEqual([expect.objectContaining({ id: audience.id, name: 'Newsletter' })])
    expect((await resend.contacts.list({ segmentId: audience.id })).data?.data.map((c) => c.email)).toEqual(['ada@example.org', 'grace@example.org'])
    const refused = await resend.contacts.segments.add({ contactId: ada.data!.id, segmentId: (await makeSegment(h, 'VIP')).id })
    expect(refused.error).toMatchObject({ statusCode: 409, code: 'contact_resubscribe_required' })
    expect((await resend.contacts.segments.remove({ email: 'grace@example.org', segmentId: audience.id })).error).toBeNull()

    // Imports take JSON here; the SDK's multipart upload is refused with a clear error.
    const upload = await resend.contacts.imports.create({ file: new Blob(['email\nada@example.org\n'], { type: 'text/csv' }) } as never)
    expect(upload.error).toMatchObject({ statusCode: 415, code: 'unsupported_media_type' })

    expect((await resend.contacts.remove({ audienceId: audience.id, email: 'ada@example.org' })).data).toMatchObject({ object: 'contact', contact: 'ada@example.org', deleted: true })
    expect((await resend.contacts.remove(grace.data!.id)).data).toMatchObject({ deleted: true })
    expect((await resend.contactProperties.remove(prop.data!.id)).data).toMatchObject({ object: 'contact_property', deleted: true })
  })

  test('segments and audiences (the SDK’s alias of segments): create, get, list, update, members, remove', async () => {
    const made = await resend.segments.create({ name: 'Newsletter' })
    expect(made.error).toBeNull()
    expect(made.data).toMatchObject({ object: 'segment', name: 'Newsletter' })
    const id = made.data!.id
    expect((await resend.segments.get(id)).data).toMatchObject({ object: 'segment', id, name: 'Newsletter', created_at: expect.any(String) })
    expect((await resend.segments.update(id, { name: 'Weekly newsletter' })).data).toMatchObject({ object: 'segment', id })
    const viaAudiences = await resend.audiences.get(id)
    expect(viaAudiences.data).toMatchObject({ id, name: 'Weekly newsletter' })
    const second = await resend.audiences.create({ name: 'Acme people', rules: [{ field: 'email', op: 'ends_with', value: '@acme.dev' }] } as never)
    expect(second.error).toBeNull()
    const listed = await resend.audiences.list({ limit: 1 })
    expect(listed.data).toMatchObject({ object: 'list', has_more: true, data: [expect.objectContaining({ id: second.data!.id, name: 'Acme people' })] })
    const rest = await resend.segments.list({ limit: 1, after: second.data!.id })
    expect(rest.data?.data.map((x) => x.id)).toEqual([id])
    // A rule segment's members are the contacts matching it.
    await resend.contacts.create({ email: 'ada@acme.dev' })
    await resend.contacts.create({ email: 'bob@other.dev' })
    expect((await resend.contacts.list({ segmentId: second.data!.id })).data?.data.map((c) => c.email)).toEqual(['ada@acme.dev'])
    const handPicked = await resend.contacts.segments.add({ email: 'bob@other.dev', segmentId: second.data!.id })
    expect(handPicked.error).toMatchObject({ statusCode: 422, name: 'validation_error', code: 'invalid_parameter' })
    const unknownRule = await resend.segments.create({ name: 'x', rules: [{ field: 'property', key: 'plan', op: 'eq', value: 'pro' }] } as never)
    expect(unknownRule.error).toMatchObject({ statusCode: 422, code: 'invalid_parameter' })
    expect((await resend.segments.remove(id)).data).toEqual({ object: 'segment', id, deleted: true })
    expect((await resend.audiences.remove(second.data!.id)).error).toBeNull()
    expect((await resend.segments.get(id)).error).toMatchObject({ statusCode: 404, name: 'not_found' })
    for (const c of ['ada@acme.dev', 'bob@other.dev']) await resend.contacts.remove({ email: c })

    // Resend's older /audiences routes, as a plain HTTP client calls them.
    const base = `http://127.0.0.1:${server.port}`
    const headers = { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' }
    const created = await fetch(`${base}/audiences`, { method: 'POST', headers, body: JSON.stringify({ name: 'Registered Users' }) })
    expect(created.status).toBe(201)
    const audience = (await created.json()) as { id: string }
    expect(audience).toMatchObject({ object: 'audience', name: 'Registered Users' })
    expect(await (await fetch(`${base}/audiences/${audience.id}`, { headers })).json()).toMatchObject({ object: 'audience', id: audience.id })
    expect(await (await fetch(`${base}/audiences`, { headers })).json()).toMatchObject({ object: 'list', data: expect.arrayContaining([{ object: 'audience', id: audience.id, name: 'Registered Users', created_at: expect.any(String) }]) })
    expect(await (await fetch(`${base}/audiences/${audience.id}`, { method: 'DELETE', headers })).json()).toEqual({ object: 'audience', id: audience.id, deleted: true })
  })

  test('domains: create, get, list, verify, remove', async () => {
    const d = await resend.domains.create({ name: 'sdk-example.com' })
    expect(d.data).toMatchObject({ name: 'sdk-example.com', records: expect.any(Array) })
    expect((await resend.domains.get(d.data!.id)).data).toMatchObject({ object: 'domain', name: 'sdk-example.com' })
    expect((await resend.domains.list()).data?.data.map((x) => x.id)).toContain(d.data!.id)
    expect((await resend.domains.remove(d.data!.id)).error).toBeNull()
  })

  test('templates: create().publish(), get, list, update, duplicate, send by alias, remove', async () => {
    const made = await resend.templates
      .create({ name: 'Welcome', alias: 'welcome', from: 'Acme <hi@acme.dev>', subject: 'Welcome, {{{NAME}}}', html: '<p>Hi {{{NAME}}}</p>', variables: [{ key: 'NAME', type: 'string', fallbackValue: 'friend' }] })
      .publish()
    expect(made.error).toBeNull()
    const id = made.data!.id
    expect((await resend.templates.get('welcome')).data).toMatchObject({ id, status: 'published', variables: [{ key: 'NAME', type: 'string', fallback_value: 'friend' }] })
    expect((await resend.templates.list()).data?.data.map((t) => t.id)).toEqual([id])
    expect((await resend.templates.update(id, { subject: 'Hello, {{{NAME}}}', replyTo: 'help@acme.dev' })).data).toMatchObject({ id, has_unpublished_versions: true, reply_to: ['help@acme.dev'] })
    const copy = await resend.templates.duplicate(id)
    expect(copy.data).toMatchObject({ object: 'template', name: 'Welcome (copy)' })
    const sent = await resend.emails.send({ to: 'delivered@simulator.test', template: { id: 'welcome', variables: { NAME: 'Ada' } } } as never)
    expect(sent.error).toBeNull()
    expect((await resend.emails.get(sent.data!.id)).data).toMatchObject({ from: 'Acme <hi@acme.dev>', subject: 'Welcome, Ada', html: '<p>Hi Ada</p>' })
    const refused = await resend.emails.send({ to: 'delivered@simulator.test', template: { id: copy.data!.id } } as never)
    expect(refused.error).toMatchObject({ statusCode: 422, code: 'template_not_published' })
    expect((await resend.templates.remove(id)).data).toEqual({ object: 'template', id, deleted: true })
    expect((await resend.templates.get(id)).error).toMatchObject({ statusCode: 404 })
  })

  test('broadcasts: create, get, list, update, send with a schedule in words, cancel, duplicate, send now, recipients, clicked links, remove', async () => {
    const segment = await resend.segments.create({ name: 'Broadcast readers' })
    for (const email of ['delivered+sdk1@resend.dev', 'delivered+sdk2@resend.dev']) expect((await resend.contacts.create({ email, segments: [{ id: segment.data!.id }] } as never)).error).toBeNull()
    const made = await resend.broadcasts.create({ segmentId: segment.data!.id, from: 'Acme <news@acme.dev>', subject: 'Hello {{{FIRST_NAME|there}}}', html: '<p>News</p>', name: 'SDK' })
    expect(made.error).toBeNull()
    const id = made.data!.id
    expect((await resend.broadcasts.get(id)).data).toMatchObject({ object: 'broadcast', id, name: 'SDK', status: 'draft', segment_id: segment.data!.id, audience_id: segment.data!.id, html: '<p>News</p>' })
    expect((await resend.broadcasts.list()).data?.data.map((b) => b.id)).toContain(id)
    expect((await resend.broadcasts.update(id, { subject: 'News for {{{FIRST_NAME|you}}}', replyTo: ['help@acme.dev'], previewText: 'Inside' })).data).toMatchObject({ id, reply_to: ['help@acme.dev'], preview_text: 'Inside' })
    const scheduled = await resend.broadcasts.send(id, { scheduledAt: 'in 1 hour' })
    expect(scheduled.data).toMatchObject({ id, status: 'scheduled', recipient_count: 2 })
    expect((await resend.broadcasts.cancel(id)).data).toMatchObject({ object: 'broadcast', id, status: 'canceled' })
    const copy = await resend.broadcasts.duplicate(id)
    expect(copy.data).toMatchObject({ object: 'broadcast', name: 'SDK (copy)', status: 'draft' })
    const now = await resend.broadcasts.send(copy.data!.id)
    expect(now.data).toMatchObject({ id: copy.data!.id, status: 'queued', recipient_count: 2 })
    await fanOut(h)
    await h.worker.runOnce()
    const sent = await resend.broadcasts.recipients(copy.data!.id, { type: 'sent' })
    expect(sent.data).toMatchObject({ object: 'list', has_more: false })
    expect(sent.data?.data.map((r) => r.email).sort()).toEqual(['delivered+sdk1@resend.dev', 'delivered+sdk2@resend.dev'])
    expect((await resend.broadcasts.recipients(copy.data!.id, { type: 'bounced', bounceType: 'permanent', limit: 10 })).data?.data).toEqual([])
    expect((await resend.broadcasts.clickedLinks(copy.data!.id)).data).toMatchObject({ object: 'list', data: [], has_more: false })
    expect((await resend.broadcasts.remove(copy.data!.id)).error).toMatchObject({ statusCode: 409, code: 'broadcast_status_conflict' })
    const draft = await resend.broadcasts.create({ audienceId: segment.data!.id, from: 'news@acme.dev', subject: 'x', text: 'y' })
    expect((await resend.broadcasts.remove(draft.data!.id)).data).toEqual({ object: 'broadcast', id: draft.data!.id, deleted: true })
    const bad = await resend.broadcasts.create({ segmentId: segment.data!.id, from: 'not an address', subject: 'x', text: 'y' })
    expect(bad.error).toMatchObject({ statusCode: 422, name: 'invalid_from_address' })
  })
})
