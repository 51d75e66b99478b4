import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { CallToolRequestSchema, ErrorCode as RpcError, isInitializeRequest, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { AnyElysia } from 'elysia'
import { eq } from 'drizzle-orm'
import { mcpSessions } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import { envelope } from '../http/errors'
import type { Actor } from '../lib/actor'
import { DAY, iso } from '../lib/clock'
import { randomBase62 } from '../lib/crypto'
import { buildTools, restCall, type MountedRoute, type Tool } from './tools'

/** A session idle this long is gone; the client reconnects with `initialize`. */
export const SESSION_IDLE_MS = DAY
const SESSION_HEADER = 'mcp-session-id'

/** The request headers a tool call carries over to its REST request: the credential and what the CSRF check reads. */
const FORWARDED = ['authorization', 'cookie', 'origin', 'sec-fetch-site', 'x-forwarded-for']

const built = new WeakMap<AnyElysia, Tool[]>()
function toolsOf(app: AnyElysia) {
  let tools = built.get(app)
  if (!tools) built.set(app, (tools = buildTools(app.routes as unknown as MountedRoute[])))
  return tools
}

/** Whose session it is: the key (an OAuth grant's key included) or the console session that opened it. */
const principalOf = (actor: Actor) => (actor.keyId ? `key:${actor.keyId}` : `session:${actor.person?.sessionId}`)

async function liveSession(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q.select().from(mcpSessions).where(eq(mcpSessions.id, id))
  const idle = row ? deps.clock.now() - Date.parse(row.lastUsedAt) : Infinity
  if (!row || row.accountId !== actor.accountId || row.principal !== principalOf(actor) || idle >= SESSION_IDLE_MS) {
    throw new AppError('session_expired', { message: 'This MCP session is unknown, belongs to another credential, or was idle too long; send `initialize` again.' })
  }
  return row
}

/** Ends the caller's own session: later calls naming it answer `session_expired`. */
export async function endMcpSession(deps: Deps, actor: Actor, id: string | null) {
  if (!id) throw new AppError('validation_error', { message: 'Name the session to end in the `Mcp-Session-Id` header.', details: [{ field: 'mcp-session-id', message: 'required' }] })
  await liveSession(deps, actor, id)
  await deps.db.write((tx) => tx.delete(mcpSessions).where(eq(mcpSessions.id, id)))
}

/** One REST request through the app, as the caller, answered as a tool result. */
async function callTool(app: AnyElysia, request: Request, actor: Actor, baseUrl: string, tool: Tool, args: Record<string, unknown>) {
  const call = restCall(tool, args, actor.keyId)
  if ('missing' in call) {
    const err = new AppError('validation_error', { message: `Missing ${call.missing.map((m) => `\`${m}\``).join(', ')}.`, details: call.missing.map((field) => ({ field, message: 'required' })) })
    return toolResult(err.status, envelope(baseUrl, err))
  }
  const headers = new Headers()
  for (const h of FORWARDED) {
    const v = request.headers.get(h)
    if (v !== null) headers.set(h, v)
  }
  if (call.body !== undefined) headers.set('content-type', 'application/json')
  if (call.idempotencyKey !== undefined) headers.set('idempotency-key', call.idempotencyKey)
  const qs = call.query.size ? `?${call.query}` : ''
  const res = await app.handle(new Request(`${new URL(request.url).origin}${call.path}${qs}`, { method: call.method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body) }))
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // Not JSON: handed over as text.
  }
  return toolResult(res.status, body, res.headers.get('x-request-id'))
}

function toolResult(status: number, body: unknown, requestId?: string | null) {
  const structured = body !== null && typeof body === 'object' && !Array.isArray(body) ? { structuredContent: body as Record<string, unknown> } : {}
  return {
    content: [{ type: 'text' as const, text: typeof body === 'string' ? body : JSON.stringify(body) }],
    ...structured,
    isError: status >= 400,
    _meta: { http_status: status, ...(requestId ? { request_id: requestId } : {}) },
  }
}

function mcpServer(app: AnyElysia, request: Request, actor: Actor, baseUrl: string) {
  const server = new Server({ name: 'mailroom', version: '0.1.0' }, { capabilities: { tools: {} }, instructions: 'Transactional email: send, inspect deliveries, manage contacts, topics, segments, broadcasts and webhooks. Every tool is one REST operation of this server, under the same key controls.' })
  const all = toolsOf(app)
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: all.map((t) => t.definition) }))
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const tool = all.find((t) => t.spec.name === req.params.name)
    if (!tool) throw new McpError(RpcError.InvalidParams, `Unknown tool \`${req.params.name}\`; tools/list names them.`)
    return callTool(app, request, actor, baseUrl, tool, req.params.arguments ?? {})
  })
  return server
}

/**
 * One POST of the Streamable HTTP transport. The SDK's web-standard transport
 * runs in its stateless form with JSON replies, so any instance can answer any
 * call; the session an `initialize` opens lives in the database, and a call that
 * names a gone session answers `session_expired`. Writes happen after the tool
 * calls, which are requests of their own with their own transactions.
 */
export async function handleMcp(deps: Deps, actor: Actor, app: AnyElysia, request: Request, body: unknown): Promise<Response> {
  const messages = Array.isArray(body) ? body : [body]
  const init = messages.find((m) => isInitializeRequest(m))
  const sessionId = request.headers.get(SESSION_HEADER)
  if (!init && sessionId) await liveSession(deps, actor, sessionId)
  const baseUrl = deps.config.baseUrl
  const server = mcpServer(app, request, actor, baseUrl)
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  await server.connect(transport)
  // The body was read and checked by the platform; the transport gets it parsed, with the media types it insists on.
  const headers = new Headers({ accept: 'application/json, text/event-stream', 'content-type': 'application/json' })
  const version = request.headers.get('mcp-protocol-version')
  if (version) headers.set('mcp-protocol-version', version)
  let res: Response
  try {
    res = await transport.handleRequest(new Request(request.url, { method: 'POST', headers }), { parsedBody: body })
  } finally {
    await server.close()
  }
  if (res.status >= 400) {
    const rpc = (await res.json().catch(() => ({}))) as { error?: { code: number; message: string } }
    throw new AppError('validation_error', { message: rpc.error?.message ?? 'The JSON-RPC message was refused.', extra: { jsonrpc: '2.0', error: rpc.error, id: null } })
  }
  const now = iso(deps.clock.now())
  const out = new Headers(res.headers)
  if (init) {
    const id = randomBase62(32)
    const params = init.params
    await deps.db.write((tx) =>
      tx.insert(mcpSessions).values({ id, accountId: actor.accountId, principal: principalOf(actor), clientName: params.clientInfo.name.slice(0, 200), protocolVersion: params.protocolVersion, createdAt: now, lastUsedAt: now }),
    )
    out.set(SESSION_HEADER, id)
  } else if (sessionId) {
    await deps.db.write((tx) => tx.update(mcpSessions).set({ lastUsedAt: now }).where(eq(mcpSessions.id, sessionId)))
  }
  return new Response(res.body, { status: res.status, headers: out })
}
