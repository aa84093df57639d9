import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { inspect } from 'node:util'
import { pino } from 'pino'
import { IncomingToken } from '../../../src/auth/incoming-token.ts'
import { ANONYMOUS } from '../../../src/auth/principal.ts'
import { createLogger } from '../../../src/observability/logger.ts'
import { CallSignal } from '../../../src/protocol/cancel-signal.ts'
import type { JsonRpcMessage } from '../../../src/protocol/json-rpc.ts'
import { RequestContext, askClient } from '../../../src/session/call-context.ts'
import { Session } from '../../../src/session/session.ts'

function session (): Session {
  return new Session({
    transport: 'test',
    protocolVersion: '2025-11-25',
    clientInfo: undefined,
    clientCapabilities: { elicitation: {} },
    principal: ANONYMOUS,
    endpoint: 'ops',
    view: { unrestricted: true, allows: () => true },
    digests: { tools: '', prompts: '', resources: '' },
    log: createLogger('silent')
  })
}

describe('call context', () => {
  it('names the session principal and draws one call id per request, the same each time it is read', () => {
    const s = session()
    const a = new RequestContext(s, new CallSignal())
    const b = new RequestContext(s, new CallSignal())
    assert.equal(a.principal, ANONYMOUS)
    assert.equal(a.session.endpoint, 'ops')
    assert.equal(a.callId, a.callId)
    assert.notEqual(a.callId, b.callId)
  })

  it('lets the call path ask the session client on the request stream and get its answer (an approval can elicit)', async () => {
    const s = session()
    const sent: JsonRpcMessage[] = []
    const ctx = new RequestContext(s, new CallSignal(), m => { sent.push(m) })
    const answer = askClient(ctx, 'elicitation/create', { message: 'Run web__delete?', requestedSchema: { type: 'object', properties: {} } }, new AbortController().signal)
    const asked = sent[0] as { id: number, method: string }
    assert.equal(asked.method, 'elicitation/create')
    s.resolveClientRequest({ jsonrpc: '2.0', id: asked.id, result: { action: 'accept' } })
    assert.deepEqual(await answer, { action: 'accept' })
  })

  it('carries the incoming token without ever printing it', () => {
    const token = new IncomingToken('sk-live-secret')
    const ctx = new RequestContext(session(), new CallSignal(), undefined, undefined, token)
    const lines: string[] = []
    pino({}, { write: (line: string) => { lines.push(line) } }).info({ token: ctx.token }, 'request')
    for (const printed of [String(token), `${token}`, JSON.stringify({ token }), inspect(token), inspect({ ctx: { token } }), lines.join('')]) {
      assert.doesNotMatch(printed, /sk-live-secret/)
      assert.match(printed, /\[redacted\]/)
    }
    assert.equal(ctx.token?.reveal(), 'sk-live-secret')
  })
})
