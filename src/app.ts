import { Elysia, type AnyElysia } from 'elysia'
import type { RootDeps } from './deps'
import { platform } from './http/platform'
import { RouteTable } from './http/route-table'
import { mcpRoutes } from './mcp/routes'
import { metaRoutes } from './meta/routes'
import type { Runtime } from './meta/service'
import { MODULES } from './modules'

/** Builds the whole HTTP app from its dependencies. Pure: no listening, no timers, so tests get exactly this app. */
export function buildApp(root: RootDeps, runtime: Runtime) {
  const routes = new RouteTable()
  const p = platform(root, routes)
  let app: AnyElysia
  app = new Elysia({ name: 'mailroom', normalize: false }).use(p).use(metaRoutes(p, () => app, runtime, root.config.baseUrl)).use(mcpRoutes(p, () => app))
  for (const mod of MODULES) app = app.use(mod(p))
  for (const r of app.routes) routes.add(r.method, r.path)
  return app
}
