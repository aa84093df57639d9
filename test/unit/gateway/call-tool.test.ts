import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import type { CatalogStore } from '../../../src/catalog/catalog-store.ts'
import { auditSchema, policiesSchema, rateLimitsSchema } from '../../../src/config/access-schema.ts'
import { createAccessPolicy } from '../../../src/policy/access-policy.ts'
import { circuitBreakerSchema } from '../../../src/config/resilience-schema.ts'
import { SwitchboardError } from '../../../src/errors.ts'
import { createAuditLog } from '../../../src/gateway/audit.ts'
import type { ToolCatalogs } from '../../../src/gateway/call-chain/resolve.ts'
import type { ResultStep } from '../../../src/gateway/call-chain/tool-call.ts'
import { createCallTool } from '../../../src/gateway/call-tool.ts'
import { createMethods } from '../../../src/gateway/methods.ts'
import { Subscriptions } from '../../../src/gateway/subscriptions.ts'
import { META_RELATED_TASK, TaskRelay } from '../../../src/gateway/task-relay.ts'
import { createLogger } from '../../../src/observability/logger.ts'
import { createMetrics } from '../../../src/observability/metrics.ts'
import { createRateLimiter } from '../../../src/policy/rate-limiter.ts'
import type { Session } from '../../../src/session/session.ts'
import { CircuitBreaker } from '../../../src/upstream/circuit-breaker.ts'
import type { UpstreamPool } from '../../../src/upstream/upstream-pool.ts'
import { RequestContext } from '../../../src/session/call-context.ts'
import { CallSignal } from '../../../src/protocol/cancel-signal.ts'
import { contextOf, entryOf, viewDenying } from './call-chain/call-fixtures.ts'

const silent = pino({ level: 'silent' })

/** The pool as the call path uses it, around one upstream "web" whose every request `answer` settles. */
function poolOf (answer: (method: string, params: Record<string, unknown>) => Promise<Record<string, unknown>>, options: { retries?: { maxAttempts: number, backoffMs: number }, breaker?: CircuitBreaker } = {}): UpstreamPool {
  const connection = { request: async (method: string, params: Record<string, unknown>) => await answer(method, params) }
  return {
    get: () => ({ config: { retries: options.retries, timeoutMs: 1000 }, capabilities: {} }),
    breaker: () => options.breaker,
    connectionFor: () => connection,
    credentialsFor: () => undefined,
    isConnected: () => true
  } as unknown as UpstreamPool
}

const echo = entryOf('web__echo', 'web', { annotations: { readOnlyHint: true } })
const catalogs: ToolCatalogs = { tools: { resolve: name => name === echo.exposed ? echo : undefined, quarantined: () => undefined } }

function capture () {
  const lines: Array<Record<string, unknown>> = []
  const log = createLogger('info', { write (line: string) { lines.push(JSON.parse(line) as Record<string, unknown>) } })
  return { lines, audit: createAuditLog(auditSchema.parse({}), log) }
}

function deps (pool: UpstreamPool, extra: Partial<Parameters<typeof createCallTool>[0]> = {}): Parameters<typeof createCallTool>[0] {
  const metrics = createMetrics()
  const policy = createAccessPolicy(policiesSchema.parse({}))
  return { catalogs, pool, metrics, log: silent, limiter: createRateLimiter(rateLimitsSchema.parse({}), { log: silent, metrics }), concurrency: new Map(), policy: () => policy, ...extra }
}

describe('tools/call through the chain', () => {
  it('forwards under the upstream name and audits each call once with its own call id', async () => {
    const sent: Array<Record<string, unknown>> = []
    const { lines, audit } = capture()
    const path = createCallTool(deps(poolOf(async (_m, params) => { sent.push(params); return { content: [{ type: 'text', text: 'hi' }] } }), { audit }))
    const first = contextOf()
    const second = contextOf()
    await path.call({ name: 'web__echo', arguments: { text: 'hi' } }, first)
    await assert.rejects(path.call({ name: 'web__nope', arguments: {} }, second), /Unknown tool: web__nope/)
    assert.equal(sent[0]?.name, 'echo')
    assert.deepEqual(lines.map(l => [l.callId, l.tool, l.outcome]), [[first.callId, 'web__echo', 'ok'], [second.callId, 'web__nope', 'unknown_tool']])
    assert.notEqual(first.callId, second.callId)
    assert.match(first.callId, /^[0-9a-f-]{36}$/)
  })

  it('audits a denied tool with its upstream, while the call metrics name neither', async () => {
    const { lines, audit } = capture()
    const d = deps(poolOf(async () => ({ content: [] })), { audit })
    const path = createCallTool(d)
    await assert.rejects(path.call({ name: 'web__echo', arguments: {} }, contextOf(viewDenying('web__echo'))), /Unknown tool/)
    assert.deepEqual(lines.map(l => [l.upstream, l.outcome, l.responseBytes]), [['web', 'denied', 0]])
    assert.match(await d.metrics.registry.metrics(), /switchboard_tool_calls_total\{upstream="",tool="",outcome="denied"/)
  })

  it('gives the circuit breaker one verdict for a call however many attempts its retries make', async () => {
    const breaker = new CircuitBreaker(circuitBreakerSchema.parse({ failureThreshold: 2 }))
    let attempts = 0
    const pool = poolOf(async () => {
      attempts++
      if (attempts < 3) throw new SwitchboardError('SB_ERR_UPSTREAM_CLOSED')
      return { content: [{ type: 'text', text: 'third time' }] }
    }, { retries: { maxAttempts: 3, backoffMs: 1 }, breaker })
    const result = await createCallTool(deps(pool)).call({ name: 'web__echo', arguments: {} }, contextOf())
    assert.equal(attempts, 3)
    assert.equal(result.isError, undefined)
    assert.deepEqual([breaker.state, breaker.failures], ['closed', 0])
  })

  it('runs a rebuilt chain after a reload: the new rate limits and the new audit apply to the next call', async () => {
    const d = deps(poolOf(async () => ({ content: [] })))
    const path = createCallTool(d)
    assert.equal((await path.call({ name: 'web__echo', arguments: {} }, contextOf())).isError, undefined)
    const limiter = createRateLimiter(rateLimitsSchema.parse({ rules: [{ key: 'global', limit: 1, windowMs: 60_000 }] }), { log: silent, metrics: d.metrics })
    const { lines, audit } = capture()
    path.rebuild({ limiter, audit })
    assert.equal((await path.call({ name: 'web__echo', arguments: {} }, contextOf())).isError, undefined)
    assert.equal((await path.call({ name: 'web__echo', arguments: {} }, contextOf())).isError, true)
    assert.deepEqual(lines.map(l => l.outcome), ['ok', 'rate_limited'])
    await limiter.close()
  })

  it('passes tools/call results and tasks/result payloads through the same result steps', async () => {
    const seen: Array<[string, string | undefined]> = []
    const mark: ResultStep = async (result, source) => { seen.push([source.upstream, source.tool]); return { ...result, marked: true } }
    const tasks = new TaskRelay({ maxTasks: 10, maxTtlMs: 60_000, replica: 'r1' })
    const pool = poolOf(async (method, params) => {
      if (method === 'tasks/result') return { content: [{ type: 'text', text: 'later' }], _meta: { [META_RELATED_TASK]: { taskId: params.taskId } } }
      return params.task === undefined ? { content: [] } : { task: { taskId: 'up-1', status: 'working' } }
    })
    const d = deps(pool, { tasks, guards: { call: [], results: [mark] } })
    const path = createCallTool(d)
    const ctx = contextOf()
    assert.equal((await path.call({ name: 'web__echo', arguments: {} }, ctx)).marked, true)
    const created = await path.call({ name: 'web__echo', arguments: {}, task: {} }, ctx)
    assert.equal(created.marked, undefined, 'a created task is not the tool result')
    const taskId = (created.task as { taskId: string }).taskId
    const methods = createMethods({ catalogs: {} as CatalogStore, pool, subscriptions: new Subscriptions(), tasks, callTool: path, setLevel: () => {}, metrics: d.metrics, pageSize: 10, log: silent })
    const session = ctx.session as unknown as Session
    const payload = await methods.get('tasks/result')?.({ taskId }, new RequestContext(session, new CallSignal()))
    assert.equal(payload?.marked, true)
    assert.equal(((payload?._meta as Record<string, unknown>)[META_RELATED_TASK] as { taskId: string }).taskId, taskId)
    assert.deepEqual(seen, [['web', 'web__echo'], ['web', 'web__echo']])
  })
})
