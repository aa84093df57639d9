import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createUrlConnectGate, declaresUrlElicitation } from '../../../src/credentials/url-connect-gate.ts'
import { CallCancelledError, isSwitchboardError } from '../../../src/errors.ts'
import { CallSignal } from '../../../src/protocol/cancel-signal.ts'
import { ConnectFlowsDouble } from '../../helpers/connect-flows-double.ts'
import { contextOf, viewDenying } from '../gateway/call-chain/call-fixtures.ts'

const URL_CLIENT = { clientCapabilities: { elicitation: { url: {} } } }

function gate (flows: ConnectFlowsDouble, waitMs?: number): ReturnType<typeof createUrlConnectGate> {
  return createUrlConnectGate({ flows, upstreams: () => new Set(['web']), needsConnect: flows.needsConnect, ...(waitMs === undefined ? {} : { waitMs }) })
}

test('guards only the upstreams it is given', () => {
  const g = gate(new ConnectFlowsDouble(['web']))
  assert.equal(g.guards('web'), true)
  assert.equal(g.guards('plain'), false)
})

test('URL elicitation is declared by elicitation.url only (an empty elicitation is form mode)', () => {
  assert.equal(declaresUrlElicitation({ elicitation: { url: {} } }), true)
  assert.equal(declaresUrlElicitation({ elicitation: {} }), false)
  assert.equal(declaresUrlElicitation({ elicitation: { form: {} } }), false)
  assert.equal(declaresUrlElicitation({}), false)
})

test('an accepted elicitation whose connect never completes fails with the URL once the wait is over', async () => {
  const flows = new ConnectFlowsDouble(['web'])
  const ctx = contextOf(viewDenying(), { ...URL_CLIENT, requestClient: async () => ({ action: 'accept' }) })
  const err = await gate(flows, 20).admit('web', ctx).then(() => undefined, (e: unknown) => e)
  assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED'))
  assert.match(String(err.details.url), /\/connect\/web\?link=/)
  assert.equal(ctx.connect, 'required')
})

test('a request cancelled while it waits for the connect ends as cancelled, not as connect required', async () => {
  const flows = new ConnectFlowsDouble(['web'])
  const signal = new CallSignal()
  const ctx = contextOf(viewDenying(), { ...URL_CLIENT, requestClient: async () => ({ action: 'accept' }) }, signal)
  const admitted = gate(flows).admit('web', ctx)
  setImmediate(() => { signal.abort(new Error('client cancelled')) })
  await assert.rejects(admitted, CallCancelledError)
})

test('a client that cannot be asked (no stream, an error) gets the URL as -32042', async () => {
  const flows = new ConnectFlowsDouble(['web'])
  const ctx = contextOf(viewDenying(), { ...URL_CLIENT, requestClient: async () => { throw new Error('no open stream') } })
  const err = await gate(flows).admit('web', ctx).then(() => undefined, (e: unknown) => e)
  assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED'))
})

test('a principal with a grant passes without a question', async () => {
  const flows = new ConnectFlowsDouble(['web'])
  const ctx = contextOf(viewDenying(), { ...URL_CLIENT, requestClient: async () => { throw new Error('must not be asked') } })
  flows.grant('web', ctx.principal)
  await gate(flows).admit('web', ctx)
  assert.equal(ctx.connect, undefined)
})
