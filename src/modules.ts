import type { Elysia } from 'elysia'
import { apiKeyRoutes, keyLimitRoutes } from './api-keys/routes'
import { contactRoutes } from './contacts/routes'
import { emailRoutes } from './emails/routes'
import { eventRoutes } from './events/routes'
import { domainRoutes } from './domains/routes'
import type { Platform } from './http/platform'
import { receivingRoutes } from './receiving/routes'
import { suppressionRoutes } from './suppressions/routes'
import { topicRoutes } from './topics/routes'
import { trackingRoutes } from './tracking/routes'

/** Every resource group's routes, in mount order. Adding a group is one line here. */
export const MODULES: ((platform: Platform) => Elysia<any, any, any, any, any, any, any>)[] = [apiKeyRoutes, keyLimitRoutes, topicRoutes, contactRoutes, suppressionRoutes, domainRoutes, receivingRoutes, emailRoutes, trackingRoutes, eventRoutes]
