import { Elysia } from 'elysia'
import type { Platform } from '../http/platform'
import { op } from '../http/docs'
import { Deleted } from '../http/schemas'
import * as s from './schema'
import * as svc from './service'

const tag = 'topics'

export const topicRoutes = (platform: Platform) =>
  new Elysia({ name: 'topics', prefix: '/topics' })
    .use(platform)
    .post('', async ({ deps, actor, body, set }) => ((set.status = 201), svc.createTopic(deps, actor, body)), {
      ...op({
        id: 'createTopic',
        summary: 'Create a topic (a subscription category)',
        description: 'The default is required: `default_subscription` (`opt_in` or `opt_out`) or `default_subscribed` (boolean). Visibility defaults to `private`.',
        tag,
        auth: 'full',
        method: 'POST',
        body: true,
        errors: ['missing_required_field', 'invalid_parameter', 'topic_name_taken'],
      }),
      body: s.CreateTopic,
      response: { 201: s.Topic },
    })
    .get('', ({ deps, actor, query }) => svc.listTopics(deps, actor, query), {
      ...op({ id: 'listTopics', summary: 'List topics, newest first', tag, auth: 'full', method: 'GET', errors: ['invalid_cursor'] }),
      query: s.ListTopicsQuery,
      response: { 200: s.TopicList },
    })
    .get('/:id', ({ deps, actor, params }) => svc.getTopic(deps, actor, params.id), {
      ...op({ id: 'getTopic', summary: 'Get one topic', tag, auth: 'full', method: 'GET', errors: ['not_found'] }),
      params: s.TopicIdParams,
      response: { 200: s.Topic },
    })
    .patch('/:id', ({ deps, actor, params, body }) => svc.updateTopic(deps, actor, params.id, body), {
      ...op({
        id: 'updateTopic',
        summary: 'Rename a topic, change its description, visibility or default',
        description: 'A new default changes only what contacts who never answered report; recorded answers stay as given.',
        tag,
        auth: 'full',
        method: 'PATCH',
        body: true,
        errors: ['not_found', 'invalid_parameter', 'topic_name_taken'],
      }),
      params: s.TopicIdParams,
      body: s.UpdateTopic,
      response: { 200: s.Topic },
    })
    .delete('/:id', ({ deps, actor, params }) => svc.deleteTopic(deps, actor, params.id), {
      ...op({ id: 'deleteTopic', summary: 'Delete a topic and every answer contacts gave about it', tag, auth: 'full', method: 'DELETE', errors: ['not_found'] }),
      params: s.TopicIdParams,
      response: { 200: Deleted('topic') },
    })
