import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ERRORS, ERROR_CODES, type ErrorCode, SwitchboardError } from '../../../src/errors.ts'
import {
  INTERNAL_MESSAGE, modernHttpStatus, refusalStatus, toHttpForm, toRpcError, toRpcResponse, toToolResult, toolCallAnswer, unexpectedCause
} from '../../../src/protocol/error-forms.ts'
import { MCP_ERROR, RPC, RpcError, rpcError } from '../../../src/protocol/json-rpc.ts'
import { MODERN_ERROR } from '../../../src/protocol/modern.ts'

const CODES = Object.keys(ERROR_CODES) as ErrorCode[]
const RPC_CODES = new Set<number>([...Object.values(RPC), ...Object.values(MCP_ERROR), ...Object.values(MODERN_ERROR)])
/** What forwarding a request can meet: the upstream's failures, a message it could not write, and the connect gate's refusals. */
const UPSTREAM_FAILURES = new Set<ErrorCode>(['SB_ERR_UPSTREAM_UNAVAILABLE', 'SB_ERR_UPSTREAM_TIMEOUT', 'SB_ERR_UPSTREAM_CLOSED', 'SB_ERR_UPSTREAM_HTTP', 'SB_ERR_SESSION_LIMIT', 'SB_ERR_MESSAGE_UNSERIALIZABLE', 'SB_ERR_UPSTREAM_PROTOCOL', 'SB_ERR_UPSTREAM_AUTH', 'SB_ERR_UPSTREAM_CONNECT_REQUIRED', 'SB_ERR_CONNECT_REFUSED', 'SB_ERR_UPSTREAM_TOKEN', 'SB_ERR_TOKEN_STORE_UNAVAILABLE'])

describe('the error table', () => {
  it('declares, for every code, a named JSON-RPC code, a tool-call form and an HTTP status only where one applies', () => {
    assert.ok(CODES.length > 0)
    for (const code of CODES) {
      const spec = ERRORS[code]
      assert.match(code, /^SB_ERR_[A-Z]+(_[A-Z]+)*$/)
      assert.equal(spec.message, ERROR_CODES[code])
      assert.ok(RPC_CODES.has(spec.rpc), `${code}: ${spec.rpc} is one of the named constants`)
      assert.ok(spec.toolCall === 'result' || spec.toolCall === 'error', code)
      if (spec.http !== undefined) assert.ok(spec.http >= 400 && spec.http < 600, code)
      if (spec.retryAfterS !== undefined) assert.notEqual(spec.http, undefined, `${code}: Retry-After goes with an HTTP status`)
    }
  })
})

describe('every code in all three forms', () => {
  for (const code of CODES) {
    const spec = ERRORS[code]
    const err = new SwitchboardError(code, undefined, { details: { limit: 'inFlightPerPrincipal', max: 1 } })

    it(`${code}: as a JSON-RPC error, its declared code, or a bare -32603 when not exposed (or, forwarding, not an upstream's failure)`, () => {
      const e = toRpcError(err)
      assert.ok(e instanceof RpcError)
      if (spec.exposed) {
        assert.equal(e.code, spec.rpc)
        assert.equal((e.data as Record<string, { code: string }>)['switchboard/error']?.code, code)
        assert.equal(unexpectedCause(e), undefined)
      } else {
        assert.deepEqual([e.code, e.message, e.data], [RPC.INTERNAL_ERROR, INTERNAL_MESSAGE, undefined])
        assert.equal(unexpectedCause(e), err, 'the error behind it is kept for the log')
      }
      const forwarded = toRpcError(err, { upstream: 'files', method: 'prompts/get' })
      assert.equal(forwarded.code, UPSTREAM_FAILURES.has(code) ? spec.rpc : RPC.INTERNAL_ERROR)
      assert.equal(unexpectedCause(forwarded), UPSTREAM_FAILURES.has(code) ? undefined : err)
    })

    it(`${code}: as an HTTP refusal, its declared status (500 without one) and Retry-After where declared`, () => {
      const form = toHttpForm(err, 7)
      assert.equal(form.status, spec.exposed ? spec.http ?? 500 : 500)
      assert.equal(form.retryAfterS, spec.exposed && spec.http !== undefined ? spec.retryAfterS : undefined)
      assert.equal(form.response.id, 7)
      assert.equal(form.response.error.code, toRpcError(err).code)
      assert.deepEqual(refusalStatus(form.response), spec.http === undefined ? undefined : { status: spec.http, retryAfterS: spec.retryAfterS })
    })

    it(`${code}: as a tool result, isError naming the code (or an internal error without internals)`, () => {
      const result = toToolResult(err, { upstream: 'files', tool: 'files__read', timeoutMs: 1000 })
      assert.equal(result.isError, true)
      const [content] = result.content as Array<{ type: string, text: string }>
      assert.equal(content?.type, 'text')
      assert.match(content?.text ?? '', /^Switchboard: /)
      const meta = result._meta as Record<string, { code: string }> | undefined
      if (spec.exposed) assert.equal(meta?.['switchboard/error']?.code, code)
      else assert.equal(meta, undefined)
      const answer = toolCallAnswer(err, { upstream: 'files', tool: 'files__read', timeoutMs: 1000 })
      assert.equal('result' in answer, spec.exposed && spec.toolCall === 'result')
    })
  }

  it('passes an RpcError through as it is, and turns anything else into a bare -32603 that keeps its cause', () => {
    const upstream = new RpcError(-32042, 'URL elicitation required', { elicitations: [] })
    assert.equal(toRpcError(upstream), upstream)
    assert.deepEqual(toolCallAnswer(upstream, {}), { error: upstream })
    const boom = new TypeError('boom')
    const internal = toRpcError(boom)
    assert.deepEqual([internal.code, internal.message, internal.data], [RPC.INTERNAL_ERROR, 'Internal error', undefined])
    assert.equal(unexpectedCause(internal), boom)
    assert.equal(toHttpForm(boom).status, 500)
    assert.deepEqual(toToolResult(boom), { content: [{ type: 'text', text: 'Switchboard: internal error' }], isError: true })
    const answer = toolCallAnswer(boom, {})
    assert.ok('error' in answer && answer.error.message === 'internal error' && unexpectedCause(answer.error) === boom)
  })
})

// The wire as it was before the table (the mapping sites of forward.ts, call-tool.ts, mcp-routes.ts,
// principal-limits.ts): the same bytes.
describe('the forms reproduce what each mapping site sent', () => {
  const up = (code: ErrorCode, details: Record<string, unknown> = {}): SwitchboardError => new SwitchboardError(code, 'inner text', { details })
  const json = (value: unknown): string => JSON.stringify(value)

  it('forwarding (prompts/get, resources/read, ...): -32603 naming the upstream and the method', () => {
    const ctx = { upstream: 'files', method: 'resources/read' }
    const cases: Array<[SwitchboardError, string]> = [
      [up('SB_ERR_UPSTREAM_UNAVAILABLE', { circuit: 'open', retryAfterMs: 1234 }), '{"code":-32603,"message":"Switchboard: upstream \\"files\\" failed repeatedly, so the gateway is not sending it requests for now (circuit open); it will try again in 1.3 s","data":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_UNAVAILABLE","upstream":"files","circuit":"open","retryAfterMs":1234}}}'],
      [up('SB_ERR_UPSTREAM_TIMEOUT'), '{"code":-32603,"message":"Switchboard: upstream \\"files\\" did not answer resources/read in time","data":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_TIMEOUT","upstream":"files"}}}'],
      [up('SB_ERR_UPSTREAM_UNAVAILABLE'), '{"code":-32603,"message":"Switchboard: upstream \\"files\\" is not connected; try again shortly","data":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_UNAVAILABLE","upstream":"files"}}}'],
      [up('SB_ERR_SESSION_LIMIT'), '{"code":-32603,"message":"Switchboard: upstream \\"files\\" already serves as many sessions as it may (maxSessionConnections); try again later","data":{"switchboard/error":{"code":"SB_ERR_SESSION_LIMIT","upstream":"files"}}}'],
      [up('SB_ERR_UPSTREAM_HTTP', { status: 502 }), '{"code":-32603,"message":"Switchboard: upstream \\"files\\" answered HTTP 502 to resources/read","data":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_HTTP","upstream":"files","status":502}}}'],
      [up('SB_ERR_UPSTREAM_CLOSED'), '{"code":-32603,"message":"Switchboard: the connection to upstream \\"files\\" was lost during resources/read","data":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_CLOSED","upstream":"files"}}}'],
      [up('SB_ERR_MESSAGE_UNSERIALIZABLE', { tooDeep: true }), '{"code":-32600,"message":"Invalid Request: resources/read is nested too deeply to be forwarded to upstream \\"files\\"; nothing was sent","data":{"switchboard/error":{"code":"SB_ERR_MESSAGE_UNSERIALIZABLE","upstream":"files"}}}'],
      [up('SB_ERR_MESSAGE_UNSERIALIZABLE'), '{"code":-32603,"message":"Switchboard: resources/read could not be written as JSON for upstream \\"files\\"; nothing was sent","data":{"switchboard/error":{"code":"SB_ERR_MESSAGE_UNSERIALIZABLE","upstream":"files"}}}'],
      [up('SB_ERR_UPSTREAM_PROTOCOL'), '{"code":-32603,"message":"Switchboard: upstream \\"files\\" answered resources/read with something that is not a JSON-RPC answer","data":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_PROTOCOL","upstream":"files"}}}']
    ]
    for (const [err, wire] of cases) assert.equal(json(toRpcResponse(1, err, ctx).error), wire, err.code)
  })

  it('tools/call: isError results in the words of the call', () => {
    const ctx = { upstream: 'files', tool: 'files__read', timeoutMs: 2500 }
    const cases: Array<[SwitchboardError, string]> = [
      [up('SB_ERR_UPSTREAM_TIMEOUT'), '{"content":[{"type":"text","text":"Switchboard: upstream \\"files\\" did not answer tool \\"files__read\\" within 2500 ms, so the call was cancelled. Try again later; if the tool is slow by nature, the operator can raise its timeoutMs."}],"isError":true,"_meta":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_TIMEOUT","upstream":"files","timeoutMs":2500}}}'],
      [up('SB_ERR_UPSTREAM_UNAVAILABLE', { circuit: 'half-open', retryAfterMs: 12_001 }), '{"content":[{"type":"text","text":"Switchboard: upstream \\"files\\" failed repeatedly, so the gateway stopped sending it calls for now (circuit open) and tool \\"files__read\\" did not run. A probe call is checking whether it has recovered; retry in 13 s at the latest (retryAfterMs 12001)."}],"isError":true,"_meta":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_UNAVAILABLE","upstream":"files","circuit":"half-open","retryAfterMs":12001},"switchboard/retryAfterMs":12001}}'],
      [up('SB_ERR_UPSTREAM_UNAVAILABLE'), '{"content":[{"type":"text","text":"Switchboard: upstream \\"files\\" is not connected, so tool \\"files__read\\" cannot run now. The gateway is reconnecting; try again shortly."}],"isError":true,"_meta":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_UNAVAILABLE","upstream":"files"}}}'],
      [up('SB_ERR_UPSTREAM_HTTP', { status: '503' }), '{"content":[{"type":"text","text":"Switchboard: upstream \\"files\\" answered HTTP 503 to tool \\"files__read\\", so this call failed; its other calls are not affected. Try again; if it persists, the upstream\'s operator should look at its logs."}],"isError":true,"_meta":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_HTTP","upstream":"files","status":503}}}'],
      [up('SB_ERR_UPSTREAM_CLOSED'), '{"content":[{"type":"text","text":"Switchboard: the connection to upstream \\"files\\" was lost while tool \\"files__read\\" was running; the call may or may not have taken effect. The gateway is reconnecting."}],"isError":true,"_meta":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_CLOSED","upstream":"files"}}}'],
      [up('SB_ERR_RATE_LIMITED', { key: 'principal+tool', limit: 60, windowMs: 60_000, retryAfterMs: 12_400 }), '{"content":[{"type":"text","text":"Switchboard: rate limit reached for tool \\"files__read\\": at most 60 call(s) per 60 s per caller for this tool. Retry in 13 s (retryAfterMs 12400)."}],"isError":true,"_meta":{"switchboard/error":{"code":"SB_ERR_RATE_LIMITED","key":"principal+tool","limit":60,"windowMs":60000,"retryAfterMs":12400},"switchboard/retryAfterMs":12400}}'],
      [up('SB_ERR_TOOL_QUARANTINED', { tool: 'read' }), '{"content":[{"type":"text","text":"Switchboard: upstream \\"files\\" changed the definition of tool \\"files__read\\" since it was approved, so the tool is quarantined and did not run. An operator must review and approve the change (switchboard pins approve --upstream files --tool read)."}],"isError":true,"_meta":{"switchboard/error":{"code":"SB_ERR_TOOL_QUARANTINED","upstream":"files","tool":"read"}}}'],
      [up('SB_ERR_TOOL_QUARANTINED', { tool: 'read', heldBy: 'scan' }), '{"content":[{"type":"text","text":"Switchboard: the definition of tool \\"files__read\\" of upstream \\"files\\" has findings of the gateway\'s definition scan (for example hidden instructions or links to unknown hosts), so the tool is quarantined and did not run. An operator must review and approve it (switchboard pins approve --upstream files --tool read)."}],"isError":true,"_meta":{"switchboard/error":{"code":"SB_ERR_TOOL_QUARANTINED","upstream":"files","tool":"read"}}}'],
      [up('SB_ERR_UPSTREAM_BUSY'), '{"content":[{"type":"text","text":"Switchboard: upstream \\"files\\" is already running as many calls as it may and none finished in time, so tool \\"files__read\\" did not run. Retry in a few seconds."}],"isError":true,"_meta":{"switchboard/error":{"code":"SB_ERR_UPSTREAM_BUSY","upstream":"files"}}}']
    ]
    for (const [err, wire] of cases) assert.equal(json(toToolResult(err, ctx)), wire, err.code)
    const deep = toolCallAnswer(up('SB_ERR_MESSAGE_UNSERIALIZABLE', { tooDeep: true }), ctx)
    assert.ok('error' in deep)
    assert.equal(deep.error.message, 'Invalid Request: tools/call is nested too deeply to be forwarded to upstream "files"; nothing was sent')
  })

  it('HTTP refusals: the session store 503 with Retry-After 1, the caps 429 with Retry-After only for requests in flight', () => {
    const store = toHttpForm(new SwitchboardError('SB_ERR_SESSION_STORE_UNAVAILABLE'))
    assert.equal(store.status, 503)
    assert.equal(store.retryAfterS, 1)
    assert.equal(json(store.response), '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: the session store cannot be read right now; the session may still be held by another replica; retry","data":{"switchboard/error":{"code":"SB_ERR_SESSION_STORE_UNAVAILABLE","retryAfterMs":1000}}}}')
    const busy = toHttpForm(new SwitchboardError('SB_ERR_LIMIT_IN_FLIGHT', 'Switchboard: too many', { details: { limit: 'inFlightPerPrincipal', max: 2 } }), 3)
    assert.deepEqual([busy.status, busy.retryAfterS], [429, 1])
    assert.equal(json(busy.response), '{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"Switchboard: too many","data":{"switchboard/error":{"code":"SB_ERR_LIMIT_IN_FLIGHT","limit":"inFlightPerPrincipal","max":2},"switchboard/retryAfterMs":1000}}}')
    const listens = toHttpForm(new SwitchboardError('SB_ERR_LIMIT_LISTEN_STREAMS', 'x', { details: { limit: 'listenStreamsPerPrincipal', max: 1 } }))
    assert.deepEqual([listens.status, listens.retryAfterS], [429, undefined])
  })

  it('2026-07-28 answers: a cap 429, an unknown method 404, a missing client capability 400, the rest 200; an upstream look-alike is no refusal', () => {
    const refused = toRpcResponse(1, new SwitchboardError('SB_ERR_LIMIT_IN_FLIGHT', 'x', { details: { limit: 'inFlightPerPrincipal', max: 1 } }))
    assert.equal(modernHttpStatus(refused), 429)
    assert.equal(modernHttpStatus({ ...refused, id: 2 }), 429, 'a copy with the same error object')
    assert.equal(modernHttpStatus(rpcError(1, refused.error.code, refused.error.message, refused.error.data)), 200)
    assert.equal(modernHttpStatus(rpcError(1, RPC.METHOD_NOT_FOUND, 'no')), 404)
    assert.equal(modernHttpStatus(rpcError(1, MODERN_ERROR.MISSING_REQUIRED_CLIENT_CAPABILITY, 'no')), 400)
    assert.equal(modernHttpStatus(rpcError(1, RPC.INTERNAL_ERROR, 'no')), 200)
    assert.equal(modernHttpStatus(undefined), 200)
  })
})
