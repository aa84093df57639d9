import { test } from 'node:test'
import assert from 'node:assert/strict'
import { throughGate } from '../../../src/credentials/connect-gate.ts'
import { createUrlConnectGate } from '../../../src/credentials/url-connect-gate.ts'
import { SwitchboardError, isSwitchboardError } from '../../../src/errors.ts'
import { ConnectFlowsDouble } from '../../helpers/connect-flows-double.ts'
import { contextOf, viewDenying } from '../gateway/call-chain/call-fixtures.ts'

const URL_CLIENT = { clientCapabilities: { elicitation: { url: {} } } }

function gateOver (flows: ConnectFlowsDouble): ReturnType<typeof createUrlConnectGate> {
  return createUrlConnectGate({ flows, upstreams: () => new Set(['web']), needsConnect: flows.needsConnect })
}

/** What a provider throws when the grant it was to use is gone (refused at refresh and forgotten): no URL. */
const grantLost = (): SwitchboardError => new SwitchboardError('SB_ERR_UPSTREAM_CONNECT_REQUIRED', undefined, { details: { upstream: 'web' } })

test('a grant lost on the way sends a client without URL elicitation the -32042 with the connect URL, and nothing more is sent', async () => {
  const flows = new ConnectFlowsDouble(['web'])
  const ctx = contextOf(viewDenying())
  flows.grant('web', ctx.principal)
  let sent = 0
  const err = await throughGate(gateOver(flows), 'web', ctx, async () => {
    sent++
    // The refresh was refused: the provider forgot the grant and has no URL to give.
    await flows.disconnect('web', `${ctx.principal.via}:${ctx.principal.id}`)
    throw grantLost()
  }).then(() => undefined, (e: unknown) => e)
  assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED'))
  assert.match(String(err.details.url), /\/connect\/web\?link=/)
  assert.equal(typeof err.details.elicitationId, 'string')
  assert.equal(sent, 1)
  assert.equal(ctx.connect, 'required')
})

test('a grant lost on the way asks a URL-elicitation client to connect, then sends once more', async () => {
  const flows = new ConnectFlowsDouble(['web'])
  const asked: string[] = []
  const ctx = contextOf(viewDenying(), {
    ...URL_CLIENT,
    requestClient: async (_method, params) => {
      asked.push(String(params?.url))
      flows.grant('web', ctx.principal)
      return { action: 'accept' }
    }
  })
  flows.grant('web', ctx.principal)
  let sent = 0
  const result = await throughGate(gateOver(flows), 'web', ctx, async () => {
    if (++sent === 1) {
      await flows.disconnect('web', `${ctx.principal.via}:${ctx.principal.id}`)
      throw grantLost()
    }
    return 'answered'
  })
  assert.equal(result, 'answered')
  assert.equal(sent, 2)
  assert.equal(asked.length, 1)
  assert.match(asked[0] ?? '', /\/connect\/web\?link=/)
})

test('other failures, and a connect required that already names its URL, pass through without asking again', async () => {
  const flows = new ConnectFlowsDouble(['web'])
  const ctx = contextOf(viewDenying())
  flows.grant('web', ctx.principal)
  for (const thrown of [new SwitchboardError('SB_ERR_UPSTREAM_TOKEN'), new SwitchboardError('SB_ERR_UPSTREAM_CONNECT_REQUIRED', undefined, { details: { upstream: 'web', url: 'http://127.0.0.1/connect/web?link=x' } })]) {
    let sent = 0
    const err = await throughGate(gateOver(flows), 'web', ctx, async () => { sent++; throw thrown }).then(() => undefined, (e: unknown) => e)
    assert.equal(err, thrown)
    assert.equal(sent, 1)
  }
  assert.equal(flows.links.size, 0, 'no connect link was made')
})
