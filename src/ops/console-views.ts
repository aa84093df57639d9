import type { CallEvent } from '../observability/call-feed.ts'

// What the admin API shows beyond status and config, for the operator console (and curl): the
// sessions one by one, the catalog as a client sees it, per-upstream call statistics, the call a
// console makes as a chosen principal, and the live stream's events. Plain data, no HTTP.

/** One session this replica holds. `ref` names it to the admin API; the session id itself is never shown. */
export interface AdminSessionItem {
  /** The first 16 hex digits of the session id's SHA-256: enough to end it, useless to hijack it. */
  ref: string
  principal: string
  /** The endpoint path segment; null for /mcp. */
  endpoint: string | null
  transport: string
  protocolVersion: string
  /** clientInfo.name (and version) as the client sent it, cut to 200 characters. */
  client: string | null
  /** Milliseconds since the epoch. */
  openedAt: number
  lastActivityAt: number
  inFlight: number
}

/** GET /admin/sessions: the counts of AdminSessionsView and the sessions, newest activity first. */
export interface AdminSessionList {
  total: number
  byTransport: Record<string, number>
  byPrincipal: Record<string, number>
  byEndpoint: Record<string, number>
  /** At most `limit` (default 500) sessions; `truncated` when there were more. */
  sessions: AdminSessionItem[]
  truncated: boolean
}

/** One tool as a client on the endpoint sees it, with what only an operator sees. */
export interface CatalogToolView {
  /** The exposed name. */
  name: string
  upstream: string
  /** The upstream's own name of the tool. */
  upstreamName: string
  title?: string
  description?: string
  inputSchema: Record<string, unknown>
  annotations?: Record<string, unknown>
  /** Pin state (pinned, changed, held) when pinning or scanning keeps a record of it. */
  pin?: 'pinned' | 'changed' | 'held'
  /** The definition scan's findings on the served definition. */
  findings?: Array<{ kind: string, detail: string }>
  /** The search score when the view was asked with a query (the ranking search_tools uses). */
  score?: number
}

export interface CatalogPromptView { name: string, upstream: string, description?: string, arguments?: unknown[] }
export interface CatalogResourceView { uri: string, name: string, upstream: string, mimeType?: string, description?: string }
export interface CatalogTemplateView { uriTemplate: string, name: string, upstream: string, description?: string }

/** GET /admin/catalog?endpoint=&principal=&q= */
export interface AdminCatalogView {
  /** null: /mcp. */
  endpoint: string | null
  /** The principal whose view was applied; null: every item of the endpoint, no policy applied. */
  principal: string | null
  /** The configured endpoints, for a picker. */
  endpoints: string[]
  tools: CatalogToolView[]
  prompts: CatalogPromptView[]
  resources: CatalogResourceView[]
  templates: CatalogTemplateView[]
}

/** A principal a console may call as (from the config's auth section); roles decide the policy. */
export interface AdminPrincipalView { id: string, roles: string[], via: 'api-key' | 'jwt' | 'none' }

/** POST /admin/tools/call: the call runs through the gateway's own call path (policy, limits, guards, audit) as this principal. */
export interface AdminToolCall {
  principal: string
  /** jwt principals are not listed in the config: their roles are given here. Ignored for api-key principals. */
  roles?: string[]
  endpoint?: string | null
  tool: string
  arguments?: Record<string, unknown>
}

/** Its answer: the tool result exactly as a client would get it, or the JSON-RPC error. */
export type AdminToolCallResult = { result: Record<string, unknown> } | { error: { code: number, message: string, data?: unknown } }

/** One minute of one upstream's calls. */
export interface CallMinute {
  /** The minute's start, milliseconds since the epoch. */
  at: number
  calls: number
  /** Calls whose outcome was not ok (tool_error included). */
  errors: number
  /** The 95th percentile duration in ms (from fixed buckets); null with no calls. */
  p95Ms: number | null
}

/** GET /admin/stats: the last 15 minutes per upstream, oldest minute first, from an in-process ring buffer. */
export interface AdminCallStats { windowMinutes: number, upstreams: Array<{ upstream: string, minutes: CallMinute[] }> }

/**
 * GET /admin/events (text/event-stream): `event: status` (data: { upstreams: AdminUpstreamView[],
 * sessions: AdminSessionsView, stats: AdminCallStats }) at once and every `statusIntervalMs`,
 * `event: call` (data: CallEvent) for each finished call, `event: approvals` when the operator
 * approvals change, and a comment line as keepalive.
 */
export type LiveCall = CallEvent
