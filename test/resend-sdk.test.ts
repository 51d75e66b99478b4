// The official Resend SDK (npm `resend`), pointed at Mailroom over real HTTP, must work unchanged.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Resend } from 'resend'
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
})
