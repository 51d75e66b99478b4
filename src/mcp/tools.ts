/**
 * The MCP tools, each one REST operation. A tool names only its route; its
 * description and input schema are read from the mounted route (the TypeBox
 * schemas that validate the REST request), and a call is that REST request made
 * through the app with the caller's own credential, so auth, budgets, approvals
 * and validation are the REST route's by construction.
 */
export interface ToolSpec {
  name: string
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  path: string
  /** A body that is no object (a batch is an array) goes under this argument. */
  bodyAs?: string
  /** The path's `id` may be left out for the caller's own key. */
  ownKey?: boolean
}

export const TOOL_SPECS: ToolSpec[] = [
  { name: 'send_email', method: 'POST', path: '/emails' },
  { name: 'send_batch', method: 'POST', path: '/emails/batch', bodyAs: 'emails' },
  { name: 'list_emails', method: 'GET', path: '/emails' },
  { name: 'get_email', method: 'GET', path: '/emails/:id' },
  { name: 'list_email_events', method: 'GET', path: '/emails/:id/events' },
  { name: 'explain_email', method: 'GET', path: '/emails/:id/explain' },
  // Checks before a send: what it would meet, with nothing written or spent.
  { name: 'lint_email', method: 'POST', path: '/emails/lint' },
  { name: 'preflight_email', method: 'POST', path: '/emails/preflight' },
  { name: 'cancel_email', method: 'POST', path: '/emails/:id/cancel' },
  { name: 'reschedule_email', method: 'POST', path: '/emails/:id/reschedule' },
  { name: 'list_domains', method: 'GET', path: '/domains' },
  { name: 'get_domain', method: 'GET', path: '/domains/:id' },
  { name: 'create_domain', method: 'POST', path: '/domains' },
  { name: 'verify_domain', method: 'POST', path: '/domains/:id/verify' },
  { name: 'list_suppressions', method: 'GET', path: '/suppressions' },
  { name: 'create_suppression', method: 'POST', path: '/suppressions' },
  { name: 'delete_suppression', method: 'DELETE', path: '/suppressions/:id' },
  { name: 'list_templates', method: 'GET', path: '/templates' },
  { name: 'get_template', method: 'GET', path: '/templates/:id' },
  { name: 'render_template', method: 'POST', path: '/templates/:id/render' },
  { name: 'list_contacts', method: 'GET', path: '/contacts' },
  { name: 'create_contact', method: 'POST', path: '/contacts' },
  { name: 'get_contact', method: 'GET', path: '/contacts/:id' },
  { name: 'update_contact', method: 'PATCH', path: '/contacts/:id' },
  { name: 'delete_contact', method: 'DELETE', path: '/contacts/:id' },
  { name: 'update_contact_topics', method: 'PATCH', path: '/contacts/:id/topics' },
  { name: 'add_contact_to_segment', method: 'POST', path: '/contacts/:id/segments/:segmentId' },
  { name: 'remove_contact_from_segment', method: 'DELETE', path: '/contacts/:id/segments/:segmentId' },
  { name: 'list_topics', method: 'GET', path: '/topics' },
  { name: 'create_topic', method: 'POST', path: '/topics' },
  { name: 'update_topic', method: 'PATCH', path: '/topics/:id' },
  { name: 'delete_topic', method: 'DELETE', path: '/topics/:id' },
  { name: 'list_segments', method: 'GET', path: '/segments' },
  { name: 'create_segment', method: 'POST', path: '/segments' },
  { name: 'list_segment_contacts', method: 'GET', path: '/segments/:id/contacts' },
  { name: 'delete_segment', method: 'DELETE', path: '/segments/:id' },
  { name: 'list_broadcasts', method: 'GET', path: '/broadcasts' },
  { name: 'create_broadcast', method: 'POST', path: '/broadcasts' },
  { name: 'get_broadcast', method: 'GET', path: '/broadcasts/:id' },
  { name: 'send_broadcast', method: 'POST', path: '/broadcasts/:id/send' },
  { name: 'get_metrics', method: 'GET', path: '/metrics' },
  { name: 'list_webhooks', method: 'GET', path: '/webhooks' },
  { name: 'create_webhook', method: 'POST', path: '/webhooks' },
  { name: 'update_webhook', method: 'PATCH', path: '/webhooks/:id' },
  { name: 'delete_webhook', method: 'DELETE', path: '/webhooks/:id' },
  { name: 'get_key_limits', method: 'GET', path: '/limits/keys/:id', ownKey: true },
  { name: 'update_key_limits', method: 'PATCH', path: '/limits/keys/:id', ownKey: true },
  { name: 'get_usage', method: 'GET', path: '/usage' },
  // Why sends may be refused or held: the account's standing, actions waiting for a person, deliverability.
  { name: 'get_trust_standing', method: 'GET', path: '/trust/standing' },
  { name: 'list_agent_actions', method: 'GET', path: '/agent-actions' },
  { name: 'get_agent_action', method: 'GET', path: '/agent-actions/:id' },
  { name: 'get_deliverability_report', method: 'GET', path: '/deliverability/report' },
  { name: 'search_support_answers', method: 'GET', path: '/support/answers' },
  { name: 'get_support_answer', method: 'GET', path: '/support/answers/:slug' },
]

/**
 * The argument that carries the REST `Idempotency-Key` on tools that change
 * something, so an agent retrying a tool call after a lost reply gets the first
 * call's answer instead of a second send.
 */
export const IDEMPOTENCY_ARG = 'idempotency_key'
const idempotencyArg = {
  type: 'string',
  minLength: 1,
  maxLength: 256,
  description: 'sent as the `Idempotency-Key` header: a retry with the same key and arguments within 7 days answers the first call’s result and changes nothing again',
}

type JsonSchema = { type?: string; properties?: Record<string, unknown>; required?: string[]; description?: string; [k: string]: unknown }

/** A mounted route as Elysia lists it. */
export interface MountedRoute {
  method: string
  path: string
  hooks: { body?: JsonSchema; query?: JsonSchema; params?: JsonSchema; detail?: { summary?: string; description?: string; 'x-auth'?: string } }
}

export interface Tool {
  spec: ToolSpec
  pathParams: string[]
  queryParams: string[]
  /** Arguments that form the body: every one not in the path or query, or the one named by bodyAs. */
  bodyKind: 'none' | 'object' | 'nested'
  definition: {
    name: string
    description: string
    inputSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[] }
    annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean }
  }
}

/** TypeBox keeps its kind in symbol keys; JSON drops them and leaves the JSON Schema. */
const plain = (schema: JsonSchema | undefined): JsonSchema | undefined => (schema === undefined ? undefined : JSON.parse(JSON.stringify(schema)))

/**
 * Builds the tools from the mounted routes. A tool whose route is missing, or is
 * reserved to a console session or a person, fails here at start-up: an agent's
 * tool must never be a way around a person's decision.
 */
export function buildTools(routes: MountedRoute[]): Tool[] {
  return TOOL_SPECS.map((spec) => {
    const route = routes.find((r) => r.method === spec.method && r.path === spec.path)
    if (!route) throw new Error(`MCP tool ${spec.name}: no route ${spec.method} ${spec.path}`)
    const auth = route.hooks.detail?.['x-auth']
    if (auth !== 'send' && auth !== 'full') throw new Error(`MCP tool ${spec.name}: ${spec.method} ${spec.path} is a ${auth} route; tools may only call key routes`)
    const properties: Record<string, unknown> = {}
    const required = new Set<string>()
    const add = (schema: JsonSchema | undefined) => {
      for (const [k, v] of Object.entries(schema?.properties ?? {})) {
        // A path parameter wins over a body field of the same name (the body's copy only repeats it).
        if (k in properties) continue
        properties[k] = v
        if (schema!.required?.includes(k)) required.add(k)
      }
    }
    const pathParams = [...spec.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1])
    const params = plain(route.hooks.params)
    for (const p of pathParams) {
      properties[p] = params?.properties?.[p] ?? { type: 'string' }
      if (spec.ownKey) properties[p] = { ...(properties[p] as object), description: 'the key’s id; leave it out for the key (or OAuth grant) making the call' }
      else required.add(p)
    }
    const query = plain(route.hooks.query)
    add(query)
    const body = plain(route.hooks.body)
    let bodyKind: Tool['bodyKind'] = 'none'
    if (body && body.type === 'object') {
      bodyKind = 'object'
      add(body)
    } else if (body) {
      bodyKind = 'nested'
      properties[spec.bodyAs ?? 'body'] = body
      required.add(spec.bodyAs ?? 'body')
    }
    if (spec.method !== 'GET') properties[IDEMPOTENCY_ARG] = idempotencyArg
    const d = route.hooks.detail ?? {}
    return {
      spec,
      pathParams,
      queryParams: Object.keys(query?.properties ?? {}),
      bodyKind,
      definition: {
        name: spec.name,
        description: [`${d.summary ?? spec.name} (${spec.method} ${spec.path.replace(/:([A-Za-z_]+)/g, '{$1}')}).`, d.description].filter(Boolean).join(' '),
        inputSchema: { type: 'object', properties, ...(required.size ? { required: [...required] } : {}) },
        annotations: {
          title: d.summary ?? spec.name,
          readOnlyHint: spec.method === 'GET',
          destructiveHint: spec.method === 'DELETE',
          idempotentHint: spec.method !== 'POST',
          openWorldHint: spec.path.startsWith('/emails') || spec.path.startsWith('/broadcasts'),
        },
      },
    }
  })
}

export interface RestCall {
  method: string
  path: string
  query: URLSearchParams
  body?: unknown
  idempotencyKey?: string
}

/** Splits a tool call's arguments into the REST request: path, query string and body. */
export function restCall(tool: Tool, args: Record<string, unknown>, ownKeyId: string | null): RestCall | { missing: string[] } {
  const { [IDEMPOTENCY_ARG]: idempotencyKey, ...rest } = args
  let path = tool.spec.path
  const missing: string[] = []
  for (const p of tool.pathParams) {
    const value = rest[p] ?? (tool.spec.ownKey ? ownKeyId : undefined)
    delete rest[p]
    if (value === undefined || value === null || value === '') missing.push(p)
    else path = path.replace(`:${p}`, encodeURIComponent(String(value)))
  }
  if (missing.length) return { missing }
  const query = new URLSearchParams()
  for (const q of tool.queryParams) {
    const value = rest[q]
    delete rest[q]
    for (const v of value === undefined ? [] : Array.isArray(value) ? value : [value]) query.append(q, String(v))
  }
  const body = tool.bodyKind === 'object' ? rest : tool.bodyKind === 'nested' ? rest[tool.spec.bodyAs ?? 'body'] : undefined
  return { method: tool.spec.method, path, query, body, ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}) }
}
