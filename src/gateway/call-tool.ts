import type { Logger } from 'pino'
import type { Metrics } from '../observability/metrics.ts'
import type { ConcurrencyLimiter } from '../policy/concurrency-limiter.ts'
import type { ConnectGate } from '../credentials/connect-gate.ts'
import type { RateLimiter } from '../policy/rate-limiter.ts'
import type { AccessPolicy } from '../policy/access-policy.ts'
import type { Guards } from '../guardrails/guards.ts'
import { RPC, RpcError, isRecord } from '../protocol/json-rpc.ts'
import type { CallContext } from '../session/call-context.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import { jsonBytes, type AuditLog } from './audit.ts'
import type { CallFeed } from '../observability/call-feed.ts'
import { compose } from './call-chain/compose.ts'
import { concurrencyStep } from './call-chain/concurrency.ts'
import { connectStep } from './call-chain/connect.ts'
import type { FirstListing } from './first-listing.ts'
import { failureStep } from './call-chain/failures.ts'
import { policyStep } from './call-chain/policy.ts'
import { rateLimitStep } from './call-chain/rate-limit.ts'
import { type ToolCatalogs, resolveStep } from './call-chain/resolve.ts'
import { resultPhase, resultStep } from './call-chain/results.ts'
import { forwardStep } from './call-chain/retries.ts'
import { taskStep } from './call-chain/tasks.ts'
import { type CallStep, type CallToolResult, type Next, type ResultSource, type ResultStep, ToolCall } from './call-chain/tool-call.ts'
import type { TaskRelay } from './task-relay.ts'

export type { CallToolResult }

/** What the chain is built from; `limiter` and `audit` (and the result steps) change with a reload. */
export interface CallToolDeps {
  catalogs: ToolCatalogs
  pool: UpstreamPool
  metrics: Metrics
  log: Logger
  limiter: RateLimiter
  /** Upstreams with a concurrency cap; a reload replaces entries in place. */
  concurrency: ReadonlyMap<string, ConcurrencyLimiter>
  audit?: AuditLog | undefined
  /** Tasks a `task` call created upstream, under the gateway's ids. */
  tasks?: TaskRelay | undefined
  /** The access policy now (a reload replaces it): rules decided at call time (when, annotations, ask). */
  policy: () => AccessPolicy
  /** The guardrails: argument checks and the hook after the rate limits, and the result side (tools/call and tasks/result). */
  guards?: Guards | undefined
  /** Holds a call a policy rule asks about until a human decides (after the guards: the human sees the arguments that will be sent). */
  approval?: CallStep | undefined
  /** Asks callers to connect their account at per-user OAuth upstreams; absent when no upstream has one. */
  connectGate?: ConnectGate | undefined
  /** Opens a user's connection to an upstream that lists through its users and has no catalog yet. */
  firstListing?: FirstListing | undefined
  /** Hears of every finished call (the console's live view and call statistics). */
  feed?: CallFeed | undefined
}

export interface CallPath {
  /** tools/call. */
  call: (params: Record<string, unknown>, ctx: CallContext) => Promise<CallToolResult>
  /** The result side of the chain, for a tool result that reaches the client another way (tasks/result). */
  result: (result: CallToolResult, source: ResultSource) => Promise<CallToolResult>
  /** A reload: the chain is built again from the changed parts. */
  rebuild: (changed: Partial<Pick<CallToolDeps, 'limiter' | 'audit' | 'guards' | 'approval' | 'connectGate' | 'firstListing'>>) => void
}

interface Chain {
  run: Next
  results: ResultStep | undefined
  deps: CallToolDeps
}

/**
 * The steps of tools/call, outermost first: what a failure means for the client → resolve the
 * exposed name → the access policy → the rate limits → the guardrails (arguments, the hook) →
 * approval (effect ask) → the connect gate (per-user OAuth) → the created task's id → the result
 * steps → a slot on a capped upstream → forward (circuit breaker, retries). Built once per config.
 * Cheap refusals come first: nobody is asked to approve a call a limit or a guard would refuse.
 */
function buildChain (deps: CallToolDeps): Chain {
  const results = resultPhase(deps.guards?.results ?? [])
  const steps: CallStep[] = [failureStep(), resolveStep(deps.catalogs, deps.firstListing), policyStep(deps.metrics, deps.policy)]
  if (deps.limiter.active) steps.push(rateLimitStep(deps.limiter, deps.metrics))
  steps.push(...deps.guards?.call ?? [])
  if (deps.approval !== undefined) steps.push(deps.approval)
  if (deps.connectGate !== undefined) steps.push(connectStep(deps.connectGate))
  if (deps.tasks !== undefined) steps.push(taskStep(deps.tasks))
  if (results !== undefined) steps.push(resultStep(results))
  steps.push(concurrencyStep(deps.concurrency, deps.metrics))
  return { run: compose(steps, forwardStep(deps.pool, deps.metrics, deps.log)), results, deps }
}

/** The auth type of the upstream a call went to (audit): its `auth.type`, `static` for its configured headers. */
function authOf (pool: UpstreamPool, upstream: string): string | undefined {
  if (upstream === '') return undefined
  const config = pool.get(upstream)?.config
  return config === undefined ? undefined : config.auth?.type ?? 'static'
}

/**
 * tools/call: the call runs through the chain; whatever way it ends, it is measured and audited
 * once. The upstream's result comes back exactly as it was sent; failures of the path become
 * isError results that say what happened. A tool the policy hides is answered exactly like one
 * that does not exist.
 */
export function createCallTool (deps: CallToolDeps): CallPath {
  let chain = buildChain(deps)
  const { metrics } = deps

  async function call (params: Record<string, unknown>, ctx: CallContext): Promise<CallToolResult> {
    const started = performance.now()
    const name = params.name
    if (typeof name !== 'string' || (params.arguments !== undefined && !isRecord(params.arguments))) {
      throw new RpcError(RPC.INVALID_PARAMS, 'tools/call needs a string name and an object of arguments')
    }
    const { run, deps: current } = chain
    const toolCall = new ToolCall(params, name, ctx)
    try {
      return await run(toolCall)
    } finally {
      const { outcome, upstream, result } = toolCall
      const { endpoint, actor } = ctx.session
      const durationMs = performance.now() - started
      metrics.observeCall(upstream, outcome === 'unknown_tool' || outcome === 'denied' ? '' : name, outcome, durationMs / 1000, endpoint)
      if (deps.feed !== undefined && deps.feed.listening > 0) {
        deps.feed.publish({ callId: ctx.callId, at: Date.now(), principal: ctx.principal.id, ...(actor === undefined ? {} : { actor }), endpoint, tool: name, upstream: toolCall.entry?.upstream ?? upstream, outcome, durationMs })
      }
      if (current.audit !== undefined) {
        const served = toolCall.entry?.upstream ?? upstream
        current.audit({ callId: ctx.callId, principal: ctx.principal, actor, endpoint, tool: name, upstream: served, outcome, durationMs, responseBytes: result === undefined ? 0 : jsonBytes(result), arguments: params.arguments, auth: authOf(current.pool, served), connect: ctx.connect, approval: toolCall.approvalRecord })
      }
    }
  }

  return {
    call,
    result: async (result, source) => chain.results === undefined ? result : await chain.results(result, source),
    rebuild (changed) {
      chain = buildChain({ ...chain.deps, ...changed })
    }
  }
}
