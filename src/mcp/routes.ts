import { Elysia, t, type AnyElysia } from 'elysia'
import { op } from '../http/docs'
import type { Platform } from '../http/platform'
import { endMcpSession, handleMcp } from './server'

const JsonRpcMessage = t.Object(
  {
    jsonrpc: t.Literal('2.0'),
    id: t.Optional(t.Union([t.String(), t.Number()])),
    method: t.Optional(t.String({ maxLength: 200 })),
    params: t.Optional(t.Unknown()),
    result: t.Optional(t.Unknown()),
    error: t.Optional(t.Unknown()),
  },
  { description: 'one JSON-RPC 2.0 message of the Model Context Protocol' },
)

/** Mounted beside the modules because its tools call the app itself: `app` is read when a call comes. */
export const mcpRoutes = (platform: Platform, app: () => AnyElysia) =>
  new Elysia({ name: 'mcp' })
    .use(platform)
    .post('/mcp', ({ deps, actor, request, body }) => handleMcp(deps, actor, app(), request, body), {
      ...op({
        id: 'callMcp',
        summary: 'Model Context Protocol endpoint (JSON-RPC 2.0 over Streamable HTTP)',
        description:
          'Authenticate with an API key or an OAuth access token. `initialize` opens a session (`Mcp-Session-Id` reply header); a call naming a session that is gone answers `session_expired`. `tools/list` names the tools; each is one REST operation, its input schema the route’s own, and `tools/call` makes that REST request with the same credential, so budgets, rate ceilings, approvals and permissions apply as over REST. A refused tool call is a result with `isError: true` and the REST error envelope. 1 MB per call.',
        tag: 'oauth',
        auth: 'send',
        method: 'POST',
        body: true,
        errors: ['session_expired'],
      }),
      body: t.Union([JsonRpcMessage, t.Array(JsonRpcMessage, { minItems: 1, maxItems: 50 })]),
      response: {
        200: t.Union([JsonRpcMessage, t.Array(JsonRpcMessage)], { description: 'the JSON-RPC reply; `Mcp-Session-Id` in the headers after `initialize`' }),
        202: t.Null({ description: 'accepted: the body held only notifications or responses' }),
      },
    })
    // Outside the 195 operations: the transport's way for a client to end its
    // session (GET, a server-sent stream this server does not offer, answers 405).
    .delete('/mcp', async ({ deps, actor, request, set }) => {
      await endMcpSession(deps, actor, request.headers.get('mcp-session-id'))
      set.status = 204
    }, { auth: 'send', detail: { hide: true } })
