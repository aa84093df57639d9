import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createGuardrailHook, type HookPhase, type HookVerdict } from '../../../src/guardrails/webhook-client.ts'
import { CallSignal } from '../../../src/protocol/cancel-signal.ts'

/** A hook on loopback that answers every POST with `body`; the verdict the client makes of it. */
async function verdictFor (t: TestContext, phase: HookPhase, body: unknown): Promise<HookVerdict> {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/check`
  const hook = createGuardrailHook({ url, timeoutMs: 2000, failMode: 'closed', on: [phase], headers: {} }, 1024 * 1024)
  return await hook.ask(phase, { phase }, new CallSignal())
}

describe('reading a guardrail hook\'s answer strictly', () => {
  it('takes an allow carrying rewritten arguments for an invalid answer, naming the field, instead of a plain allow', async (t) => {
    const verdict = await verdictFor(t, 'request', { decision: 'allow', arguments: { text: 'rewritten' } })
    assert.equal(verdict.decision, 'failed')
    assert.ok(verdict.decision === 'failed')
    assert.equal(verdict.failure, 'invalid')
    assert.deepEqual(verdict.unknownFields, ['arguments'])
    assert.match(verdict.detail, /^the answer is not a request verdict: unknown field "arguments"/)
  })

  it('names every unknown field, on either side and for every decision', async (t) => {
    const denied = await verdictFor(t, 'request', { decision: 'deny', reason: 'no', because: 'x', severity: 3 })
    assert.ok(denied.decision === 'failed')
    assert.deepEqual(denied.unknownFields, ['because', 'severity'])
    assert.match(denied.detail, /unknown fields "because", "severity"/)
    const replaced = await verdictFor(t, 'result', { decision: 'replace', result: { content: [] }, arguments: {} })
    assert.ok(replaced.decision === 'failed')
    assert.deepEqual(replaced.unknownFields, ['arguments'])
    // A request-side form on the result side: the field it lacks and the one it has too many.
    const wrongSide = await verdictFor(t, 'result', { decision: 'replace', arguments: { text: 'x' } })
    assert.ok(wrongSide.decision === 'failed')
    assert.deepEqual(wrongSide.unknownFields, ['arguments'])
    assert.match(wrongSide.detail, /result: /)
  })

  it('still takes the documented answers, and a replacement result\'s own extra members', async (t) => {
    assert.deepEqual(await verdictFor(t, 'request', { decision: 'allow' }), { decision: 'allow' })
    assert.deepEqual(await verdictFor(t, 'request', { decision: 'deny', reason: 'no' }), { decision: 'deny', reason: 'no' })
    assert.deepEqual(await verdictFor(t, 'request', { decision: 'replace', arguments: { a: 1 } }), { decision: 'replace', value: { a: 1 } })
    const result = { content: [{ type: 'text', text: 'x', annotations: { audience: ['user'] } }], _meta: { 'example.com/checked': true } }
    assert.deepEqual(await verdictFor(t, 'result', { decision: 'replace', result }), { decision: 'replace', value: result })
  })
})
