import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { JsonRpcMessage } from '../../../src/protocol/json-rpc.ts'
import { RpcError } from '../../../src/protocol/json-rpc.ts'
import { createLogger } from '../../../src/observability/logger.ts'
import { ANONYMOUS } from '../../../src/auth/principal.ts'
import { Session } from '../../../src/session/session.ts'

function session (): Session {
  return new Session({
    transport: 'test',
    protocolVersion: '2025-11-25',
    clientInfo: undefined,
    clientCapabilities: { sampling: {} },
    principal: ANONYMOUS,
    view: { unrestricted: true, allows: () => true },
    digests: { tools: '', prompts: '', resources: '' },
    log: createLogger('silent')
  })
}

describe('Session: requests to the client', () => {
  it('sends on the given stream under an id of its own and resolves with the client\'s answer', async () => {
    const s = session()
    const sent: JsonRpcMessage[] = []
    const answer = s.requestClient('sampling/createMessage', { maxTokens: 5 }, m => sent.push(m), new AbortController().signal)
    const request = sent[0] as { id: number, method: string }
    assert.equal(request.method, 'sampling/createMessage')
    assert.equal(s.resolveClientRequest({ jsonrpc: '2.0', id: request.id, result: { model: 'm' } }), true)
    assert.deepEqual(await answer, { model: 'm' })
    assert.equal(s.resolveClientRequest({ jsonrpc: '2.0', id: request.id, result: {} }), false, 'a second answer is ignored')
  })

  it('passes the client\'s error back with its code and data', async () => {
    const s = session()
    const sent: JsonRpcMessage[] = []
    const answer = s.requestClient('elicitation/create', {}, m => sent.push(m), new AbortController().signal)
    s.resolveClientRequest({ jsonrpc: '2.0', id: (sent[0] as { id: number }).id, error: { code: -1, message: 'rejected', data: { why: 'no' } } })
    await assert.rejects(answer, (err: unknown) => err instanceof RpcError && err.code === -1 && (err.data as { why: string }).why === 'no')
  })

  it('tells the client when the upstream cancels, and stops waiting', async () => {
    const s = session()
    const sent: JsonRpcMessage[] = []
    const controller = new AbortController()
    const answer = s.requestClient('sampling/createMessage', {}, m => sent.push(m), controller.signal)
    controller.abort(new Error('cancelled by the upstream'))
    await assert.rejects(answer, /cancelled by the upstream/)
    const id = (sent[0] as { id: number }).id
    assert.deepEqual(sent[1], { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'cancelled by the upstream' } })
    assert.equal(s.resolveClientRequest({ jsonrpc: '2.0', id, result: {} }), false, 'a late answer finds nothing waiting')
  })

  it('fails at once when there is no stream to carry the request, and when the session closes', async () => {
    const s = session()
    await assert.rejects(s.requestClient('roots/list', undefined, undefined, new AbortController().signal), /no open stream/)
    const pending = s.requestClient('roots/list', undefined, () => {}, new AbortController().signal)
    s.close()
    await assert.rejects(pending, /session closed/)
    await assert.rejects(s.requestClient('roots/list', undefined, () => {}, new AbortController().signal), /closed/)
  })
})
