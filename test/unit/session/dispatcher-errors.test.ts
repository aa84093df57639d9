import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ANONYMOUS } from '../../../src/auth/principal.ts'
import { SwitchboardError } from '../../../src/errors.ts'
import { forwardFailure } from '../../../src/gateway/forward.ts'
import { createLogger } from '../../../src/observability/logger.ts'
import { RpcError } from '../../../src/protocol/json-rpc.ts'
import { Dispatcher, type DispatcherDeps } from '../../../src/session/dispatcher.ts'
import type { MethodHandler } from '../../../src/session/method-handler.ts'
import { Session } from '../../../src/session/session.ts'

/** A dispatcher serving one method whose forward failed with `err`, and the log lines it wrote. */
function serving (err: unknown): { dispatcher: Dispatcher, session: Session, lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const log = createLogger('info', { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>) } })
  const session = new Session({
    transport: 'test',
    protocolVersion: '2025-11-25',
    clientInfo: undefined,
    clientCapabilities: {},
    principal: ANONYMOUS,
    view: { unrestricted: true, allows: () => true },
    digests: { tools: '', prompts: '', resources: '' },
    log
  })
  // What methods.ts does with a failed forward: the mapped error is thrown.
  const handler: MethodHandler = async (_params, ctx) => { throw forwardFailure(err, 'files', 'prompts/get', ctx.signal) }
  const deps = { methods: new Map([['prompts/get', handler]]), serverInfo: { name: 't', version: '0' }, log } as unknown as DispatcherDeps
  return { dispatcher: new Dispatcher(deps), session, lines }
}

describe('Dispatcher: a forwarded request that failed unexpectedly', () => {
  it('answers a bare -32603 "Internal error" and logs the error behind it once, as an Error', async () => {
    const { dispatcher, session, lines } = serving(new TypeError('the relay broke'))
    const answer = await dispatcher.handleRequest(session, { jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'p' } })
    assert.deepEqual(answer, { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'Internal error' } })
    const logged = lines.filter(l => l.msg === 'request failed')
    assert.equal(logged.length, 1)
    const err = logged[0]?.err as { type: string, message: string, stack: string }
    assert.equal(err.type, 'TypeError')
    assert.equal(err.message, 'the relay broke')
    assert.equal(logged[0]?.method, 'prompts/get')
  })

  it('logs a failure of a code the client learns nothing of (the pin store) the same way', async () => {
    const { dispatcher, session, lines } = serving(new SwitchboardError('SB_ERR_PIN_STORE', 'the pin store could not be read'))
    const answer = await dispatcher.handleRequest(session, { jsonrpc: '2.0', id: 2, method: 'prompts/get' })
    assert.deepEqual(answer, { jsonrpc: '2.0', id: 2, error: { code: -32603, message: 'Internal error' } })
    assert.equal(lines.filter(l => l.msg === 'request failed' && (l.err as { code?: string }).code === 'SB_ERR_PIN_STORE').length, 1)
  })

  for (const [what, err] of [['a timeout', new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT')], ['the upstream\'s own error', new RpcError(-32602, 'Unknown prompt: p')]] as const) {
    it(`logs nothing for ${what}, which the answer explains`, async () => {
      const { dispatcher, session, lines } = serving(err)
      const answer = await dispatcher.handleRequest(session, { jsonrpc: '2.0', id: 3, method: 'prompts/get' })
      assert.ok(answer !== undefined && 'error' in answer && answer.error.message !== 'Internal error')
      assert.equal(lines.filter(l => l.msg === 'request failed').length, 0)
    })
  }
})
