import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { policyStep } from '../../../../src/gateway/call-chain/policy.ts'
import { resolveStep, type ToolCatalogs } from '../../../../src/gateway/call-chain/resolve.ts'
import { ToolCall } from '../../../../src/gateway/call-chain/tool-call.ts'
import { createMetrics } from '../../../../src/observability/metrics.ts'
import { RpcError } from '../../../../src/protocol/json-rpc.ts'
import type { CatalogEntry } from '../../../../src/catalog/catalog.ts'
import { contextOf, entryOf, recordingNext, resolvedCall, viewDenying } from './call-fixtures.ts'
import { policiesSchema } from '../../../../src/config/access-schema.ts'
import { createAccessPolicy } from '../../../../src/policy/access-policy.ts'

const everyone = createAccessPolicy(policiesSchema.parse({}))
const allowAll = (): typeof everyone => everyone

function catalogsOf (entries: CatalogEntry[], held: CatalogEntry[] = []): ToolCatalogs {
  const byName = new Map(entries.map(e => [e.exposed, e]))
  const heldByName = new Map(held.map(e => [e.exposed, e]))
  return { tools: { resolve: name => byName.get(name), quarantined: name => heldByName.get(name) } }
}

const unknownTool = (name: string) => (err: unknown) => err instanceof RpcError && err.code === -32602 && err.message === `Unknown tool: ${name}`

describe('resolve step', () => {
  it('passes a known name on with its catalog entry and upstream', async () => {
    const echo = entryOf('web__echo')
    const { next, seen } = recordingNext()
    const call = new ToolCall({ name: 'web__echo' }, 'web__echo', contextOf())
    await resolveStep(catalogsOf([echo]))(call, next)
    assert.equal(seen[0], call)
    assert.deepEqual([call.entry, call.upstream, call.outcome], [echo, 'web', 'ok'])
  })

  it('refuses a name nobody serves as an unknown tool, without going further', async () => {
    const { next, seen } = recordingNext()
    const call = new ToolCall({ name: 'web__nope' }, 'web__nope', contextOf())
    await assert.rejects(resolveStep(catalogsOf([]))(call, next), unknownTool('web__nope'))
    assert.deepEqual([seen.length, call.outcome, call.upstream], [0, 'unknown_tool', ''])
  })

  it('answers a quarantined tool the principal may see with the reason, naming its upstream', async () => {
    const held = entryOf('web__echo')
    const { next, seen } = recordingNext()
    const call = new ToolCall({ name: 'web__echo' }, 'web__echo', contextOf())
    const result = await resolveStep(catalogsOf([], [held]))(call, next)
    assert.equal(seen.length, 0)
    assert.deepEqual([call.outcome, call.upstream], ['quarantined', 'web'])
    assert.deepEqual((result._meta as Record<string, unknown>)['switchboard/error'], { code: 'SB_ERR_TOOL_QUARANTINED', upstream: 'web', tool: 'echo' })
  })

  it('answers a quarantined tool the principal may not see exactly like an unknown one', async () => {
    const held = entryOf('web__echo')
    const call = new ToolCall({ name: 'web__echo' }, 'web__echo', contextOf(viewDenying('web__echo')))
    await assert.rejects(resolveStep(catalogsOf([], [held]))(call, recordingNext().next), unknownTool('web__echo'))
    assert.equal(call.outcome, 'unknown_tool')
  })
})

describe('policy step', () => {
  it('lets a tool the policy allows through', async () => {
    const { next, seen } = recordingNext()
    const call = resolvedCall(entryOf('web__echo'))
    await policyStep(createMetrics(), allowAll)(call, next)
    assert.deepEqual([seen.length, call.outcome, call.upstream], [1, 'ok', 'web'])
  })

  it('answers a denied tool like an unknown one, counts the denial and hides its upstream from the call metrics', async () => {
    const metrics = createMetrics()
    const { next, seen } = recordingNext()
    const call = resolvedCall(entryOf('web__delete'), {}, contextOf(viewDenying('web__delete')))
    await assert.rejects(policyStep(metrics, allowAll)(call, next), unknownTool('web__delete'))
    assert.deepEqual([seen.length, call.outcome, call.upstream, call.entry?.upstream], [0, 'denied', '', 'web'])
    assert.match(await metrics.registry.metrics(), /switchboard_policy_denials_total\{kind="tools",upstream="web",name="web__delete"\} 1/)
  })

  it('answers a tool outside the session endpoint as unknown, not as a denial', async () => {
    const metrics = createMetrics()
    const outside = { selects: () => false }
    const call = resolvedCall(entryOf('web__echo'), {}, contextOf(viewDenying('web__echo'), { selection: outside }))
    await assert.rejects(policyStep(metrics, allowAll)(call, recordingNext().next), unknownTool('web__echo'))
    assert.equal(call.outcome, 'unknown_tool')
    assert.doesNotMatch(await metrics.registry.metrics(), /switchboard_policy_denials_total\{/)
  })
})
