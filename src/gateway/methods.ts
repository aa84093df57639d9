import type { Logger } from 'pino'
import { DEFAULT_CALL_TIMEOUT_MS } from '../config/schema.ts'
import type { CatalogEntry } from '../catalog/catalog.ts'
import type { CatalogKind, CatalogStore } from '../catalog/catalog-store.ts'
import { SEARCH_TOOLS_DIGEST, visibleDigest, type AccessView } from '../catalog/catalog-view.ts'
import type { AccessKind } from '../policy/access-policy.ts'
import type { Metrics } from '../observability/metrics.ts'
import { RPC, RpcError, isRecord } from '../protocol/json-rpc.ts'
import { isLogLevel, type LogLevel } from '../session/log-levels.ts'
import type { MethodContext, MethodHandler } from '../session/method-handler.ts'
import type { Session } from '../session/session.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import type { CallPath } from './call-tool.ts'
import { DISCOVERY_TOOLS, createDiscoveryTools } from './discovery-tools.ts'
import { forward, forwardFailure } from './forward.ts'
import { SharedPages } from './shared-pages.ts'
import type { Subscriptions } from './subscriptions.ts'
import { type TaskEntry, TaskRelay } from './task-relay.ts'
import type { ForwardTask } from './task-forwarding.ts'
import { isCircuitOpen } from '../upstream/circuit-breaker.ts'
import type { ConnectGate } from '../credentials/connect-gate.ts'
import { isSwitchboardError } from '../errors.ts'

export interface MethodDeps {
  catalogs: CatalogStore
  pool: UpstreamPool
  subscriptions: Subscriptions
  tasks: TaskRelay
  /** Sends a request about a task another replica holds there; undefined with one replica. */
  forwardTask?: ForwardTask
  /** tools/call, and the result side of its chain, which a tasks/result payload passes too. */
  callTool: Pick<CallPath, 'call' | 'result'>
  setLevel: (session: Session, level: LogLevel) => void
  metrics: Metrics
  pageSize: number
  log: Logger
  /** A session subscribed or unsubscribed (replicas sharing the session take it on). */
  subscriptionsChanged?: (session: Session) => void
  /** Asks callers to connect their account at per-user OAuth upstreams (read per request); absent when none has one. */
  readonly connectGate?: ConnectGate | undefined
}

function cursorOf (params: Record<string, unknown>): string | undefined {
  const cursor = params.cursor
  if (cursor !== undefined && typeof cursor !== 'string') throw new RpcError(RPC.INVALID_PARAMS, 'cursor must be a string')
  return cursor
}

function stringParam (params: Record<string, unknown>, key: string, method: string): string {
  const value = params[key]
  if (typeof value !== 'string') throw new RpcError(RPC.INVALID_PARAMS, `${method} needs a string ${key}`)
  return value
}

/**
 * A list method: one page of what the session may see of the current catalog under `key`, and the
 * session marked as having seen it (so it is owed a list_changed only when that changes again).
 */
function list<C extends object> (kind: CatalogKind, key: string, current: () => C, pageSize: () => number, pageOf: (catalog: C, cursor: string | undefined, size: number, view: AccessView) => { items: unknown[], nextCursor?: string }, digest: (view: AccessView) => string): MethodHandler {
  const shared = new SharedPages()
  return async (params, { session }) => {
    const cursor = cursorOf(params)
    const { view } = session
    const catalog = current()
    const size = pageSize()
    const build = (): Record<string, unknown> => {
      const page = pageOf(catalog, cursor, size, view)
      return page.nextCursor === undefined ? { [key]: page.items } : { [key]: page.items, nextCursor: page.nextCursor }
    }
    const result = view.unrestricted ? shared.page(catalog, size, cursor, build) : build()
    session.seen[kind] = digest(view)
    return result
  }
}

/**
 * Every MCP method the gateway serves beyond the lifecycle: lists come from the merged catalogs,
 * everything else is routed to the upstream that owns the name or URI and answered untouched.
 */
export function createMethods (deps: MethodDeps): ReadonlyMap<string, MethodHandler> {
  // pageSize is read per request: a reload may change it.
  const { catalogs, pool, subscriptions, metrics } = deps

  function subscribed (session: Session, uri: string, upstream: string, result: Record<string, unknown>): Record<string, unknown> {
    session.subscribed.set(uri, upstream)
    deps.subscriptionsChanged?.(session)
    return result
  }

  async function routed (upstream: string, method: string, params: Record<string, unknown>, ctx: MethodContext): Promise<Record<string, unknown>> {
    const connection = pool.get(upstream)
    const timeoutMs = connection?.config.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS
    const gate = deps.connectGate
    try {
      // Every request but tools/call (which has its own step) passes the gate here, once.
      if (gate?.guards(upstream) === true) await gate.admit(upstream, ctx)
      const result = await forward(pool, metrics, upstream, method, params, ctx, timeoutMs)
      metrics.forwarded.inc({ upstream, method, outcome: 'ok', endpoint: ctx.session.endpoint ?? '' })
      return result
    } catch (err) {
      const mapped = forwardFailure(err, upstream, method, ctx.signal)
      const outcome = err instanceof RpcError ? 'upstream_error' : ctx.signal.aborted ? 'cancelled' : isCircuitOpen(err) ? 'circuit_open' : isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED') ? 'connect_required' : 'failed'
      metrics.forwarded.inc({ upstream, method, outcome, endpoint: ctx.session.endpoint ?? '' })
      throw mapped
    }
  }

  /**
   * Where a resource URI is served: the routing table, else the only upstream that has resources at
   * all. Down upstreams count (their last-known capabilities), so a URI of one that is down is never
   * sent to another.
   */
  function resourceUpstream (uri: string): string | undefined {
    const routed = catalogs.resources.route(uri)
    if (routed !== undefined) return routed
    const candidates = [...pool.sharedConnections()].filter(c => c.capabilities.resources !== undefined)
    return candidates.length === 1 ? candidates[0]?.name : undefined
  }

  /** The session's connection to an upstream, if it can have one (routed() reports why not). */
  function connectionOf (upstream: string, ctx: MethodContext): ReturnType<UpstreamPool['get']> {
    try {
      return pool.connectionFor(upstream, ctx.session)
    } catch {
      return undefined
    }
  }

  function notFound (uri: string): RpcError {
    return new RpcError(-32002, `Resource not found: ${uri}`, { uri })
  }

  /**
   * The policy's answer for a name the session asks about; a refusal is counted and then answered
   * exactly as if the name did not exist.
   */
  function permitted (ctx: MethodContext, kind: AccessKind, name: string, upstream: string): boolean {
    if (ctx.session.view.allows(kind, name, upstream)) return true
    // Outside the session's endpoint: unknown there, not a policy decision.
    if (ctx.session.selection?.selects(kind, name, upstream) === false) return false
    metrics.policyDenials.inc({ kind, upstream, name: kind === 'resources' ? '' : name })
    return false
  }

  function visiblePrompt (name: string, ctx: MethodContext): CatalogEntry {
    const entry = catalogs.prompts.resolve(name)
    if (entry === undefined || !permitted(ctx, 'prompts', name, entry.upstream)) throw new RpcError(RPC.INVALID_PARAMS, `Unknown prompt: ${name}`)
    return entry
  }

  /** The upstream of a URI the session may use; -32002 for one it may not, as for one nobody serves. */
  function visibleResource (uri: string, ctx: MethodContext): string {
    const upstream = resourceUpstream(uri)
    if (upstream === undefined || !permitted(ctx, 'resources', uri, upstream)) throw notFound(uri)
    return upstream
  }

  /** The caller's task named in params.taskId; one that is unknown, expired or another principal's does not exist. */
  function ownTask (params: Record<string, unknown>, ctx: MethodContext): TaskEntry {
    const entry = deps.tasks.find(params.taskId, ctx.session.principal)
    if (entry === undefined) throw new RpcError(RPC.INVALID_PARAMS, `Unknown task: ${String(params.taskId)}`)
    return entry
  }

  /** The replica holding the task, when it is another one and the request can be sent there. */
  function elsewhere (params: Record<string, unknown>): string | undefined {
    const owner = TaskRelay.ownerOf(params.taskId)
    return deps.forwardTask !== undefined && owner !== undefined && owner !== deps.tasks.replica ? owner : undefined
  }

  /**
   * tasks/get, tasks/cancel, tasks/result: to the task's upstream under its own id, the answer under
   * the gateway's; a task another replica holds is asked there.
   */
  const taskRequest = (method: string): MethodHandler => async (params, ctx) => {
    const owner = elsewhere(params)
    if (owner !== undefined && deps.forwardTask !== undefined) return await deps.forwardTask(owner, method, params, ctx)
    const entry = ownTask(params, ctx)
    const answer = await routed(entry.upstream, method, { ...params, taskId: entry.upstreamId }, ctx)
    if (method === 'tasks/result') return deps.tasks.related(entry, await deps.callTool.result(answer, { ctx, upstream: entry.upstream, tool: entry.tool }))
    // A Task (tasks/get, a 2025-11-25 tasks/cancel) is news of it; a bare acknowledgement is not.
    return typeof answer.taskId === 'string' ? deps.tasks.heard(entry, answer) : answer
  }

  const digestOf = (kind: CatalogKind) => (view: AccessView) => visibleDigest(catalogs, kind, view)
  /** The list filter for a view: none when it may see everything. */
  const shows = (view: AccessView, kind: AccessKind) => view.unrestricted ? undefined : (name: string, upstream: string) => view.allows(kind, name, upstream)
  const pageSize = (): number => deps.pageSize
  const listTools = list('tools', 'tools', () => catalogs.tools, pageSize, (c, cursor, size, view) => c.page(cursor, size, shows(view, 'tools')), digestOf('tools'))
  const callTool = deps.callTool.call
  const discovery = createDiscoveryTools({ catalogs, callTool, metrics })
  const viaDiscovery: MethodHandler = async (params, ctx) => await discovery.call(params, ctx) ?? await callTool(params, ctx)

  const methods = new Map<string, MethodHandler>([
    ['tools/list', async (params, ctx) => {
      if (!ctx.session.searchesTools) return await listTools(params, ctx)
      // A search endpoint lists its two tools, always the same, in one page.
      if (cursorOf(params) !== undefined) throw new RpcError(RPC.INVALID_PARAMS, 'Invalid cursor')
      ctx.session.seen.tools = SEARCH_TOOLS_DIGEST
      return { tools: DISCOVERY_TOOLS }
    }],
    // On a search endpoint a tool of its selection may still be called directly, as search_tools names it.
    // The plain case is callTool's own promise: no frame around it on the hot path.
    ['tools/call', (params, ctx) => ctx.session.searchesTools ? viaDiscovery(params, ctx) : callTool(params, ctx)],
    ['prompts/list', list('prompts', 'prompts', () => catalogs.prompts, pageSize, (c, cursor, size, view) => c.page(cursor, size, shows(view, 'prompts')), digestOf('prompts'))],
    ['prompts/get', async (params, ctx) => {
      const entry = visiblePrompt(stringParam(params, 'name', 'prompts/get'), ctx)
      return await routed(entry.upstream, 'prompts/get', { ...params, name: entry.original }, ctx)
    }],
    ['resources/list', list('resources', 'resources', () => catalogs.resources, pageSize, (c, cursor, size, view) => c.pageResources(cursor, size, shows(view, 'resources')), digestOf('resources'))],
    ['resources/templates/list', list('resources', 'resourceTemplates', () => catalogs.resources, pageSize, (c, cursor, size, view) => c.pageTemplates(cursor, size, shows(view, 'resources')), digestOf('resources'))],
    ['resources/read', async (params, ctx) => {
      const uri = stringParam(params, 'uri', 'resources/read')
      const upstream = visibleResource(uri, ctx)
      return await routed(upstream, 'resources/read', params, ctx)
    }],
    ['resources/subscribe', async (params, ctx) => {
      const uri = stringParam(params, 'uri', 'resources/subscribe')
      const upstream = visibleResource(uri, ctx)
      const connection = connectionOf(upstream, ctx)
      const resources = connection?.capabilities.resources
      if (connection?.state === 'ready' && !(isRecord(resources) && resources.subscribe === true)) {
        throw new RpcError(RPC.METHOD_NOT_FOUND, `Upstream "${upstream}" does not support resource subscriptions`)
      }
      const first = subscriptions.add(upstream, uri, ctx.session.id)
      // A shared connection is subscribed once for all its clients; a session's own one for itself.
      if (!first && connection?.owner === undefined) return subscribed(ctx.session, uri, upstream, {})
      try {
        return subscribed(ctx.session, uri, upstream, await routed(upstream, 'resources/subscribe', params, ctx))
      } catch (err) {
        subscriptions.remove(upstream, uri, ctx.session.id)
        throw err
      }
    }],
    ['resources/unsubscribe', async (params, ctx) => {
      const uri = stringParam(params, 'uri', 'resources/unsubscribe')
      // Where this session subscribed it, even if that upstream is down now or the URI moved.
      const upstream = subscriptions.upstreamOf(uri, ctx.session.id) ?? resourceUpstream(uri)
      if (upstream === undefined) throw notFound(uri)
      const last = subscriptions.remove(upstream, uri, ctx.session.id)
      ctx.session.subscribed.delete(uri)
      deps.subscriptionsChanged?.(ctx.session)
      const connection = connectionOf(upstream, ctx)
      if (!last && connection?.owner === undefined) return {}
      // A down upstream forgot its subscriptions; it is not re-subscribed to this one when it returns.
      if (connection?.state !== 'ready') return {}
      return await routed(upstream, 'resources/unsubscribe', params, ctx)
    }],
    ['completion/complete', async (params, ctx) => {
      const ref = params.ref
      if (!isRecord(ref)) throw new RpcError(RPC.INVALID_PARAMS, 'completion/complete needs a ref')
      let upstream: string | undefined
      let forwarded = params
      if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
        const entry = visiblePrompt(ref.name, ctx)
        upstream = entry.upstream
        forwarded = { ...params, ref: { ...ref, name: entry.original } }
      } else if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
        upstream = catalogs.resources.routeTemplate(ref.uri) ?? resourceUpstream(ref.uri)
        if (upstream === undefined || !permitted(ctx, 'resources', ref.uri, upstream)) throw new RpcError(RPC.INVALID_PARAMS, `Unknown resource: ${ref.uri}`)
      } else {
        throw new RpcError(RPC.INVALID_PARAMS, 'completion/complete needs a ref/prompt name or a ref/resource uri')
      }
      // An upstream without completions simply has none to offer.
      if (pool.get(upstream)?.capabilities.completions === undefined) return { completion: { values: [], hasMore: false } }
      return await routed(upstream, 'completion/complete', forwarded, ctx)
    }],
    ['tasks/get', taskRequest('tasks/get')],
    ['tasks/cancel', taskRequest('tasks/cancel')],
    // 2026-07-28 tasks extension: the client's inputResponses for a task waiting on them.
    ['tasks/update', taskRequest('tasks/update')],
    ['tasks/result', taskRequest('tasks/result')],
    // What the gateway heard of the caller's tasks (from their creation, tasks/get, tasks/cancel and
    // status notifications), in one page: at most TASK_LIMITS of them exist.
    ['tasks/list', async (_params, ctx) => ({ tasks: deps.tasks.list(ctx.session.principal) })],
    ['logging/setLevel', async (params, { session }) => {
      const level = params.level
      if (!isLogLevel(level)) throw new RpcError(RPC.INVALID_PARAMS, `Invalid log level: ${String(level)}`)
      deps.setLevel(session, level)
      return {}
    }]
  ])
  return methods
}
