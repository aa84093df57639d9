import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Principal } from '../../../src/auth/principal.ts'
import { parseConfig } from '../../../src/config/load-config.ts'
import type { UpstreamConfig } from '../../../src/config/schema.ts'
import type { CredentialRequest } from '../../../src/credentials/credential-provider.ts'
import { StaticCredentialProvider } from '../../../src/credentials/static-credential-provider.ts'
import { SwitchboardError } from '../../../src/errors.ts'
import { renewable, renewingOnce } from '../../../src/gateway/auth-retry.ts'
import { CallSignal } from '../../../src/protocol/cancel-signal.ts'

const alice: Principal = { id: 'alice', roles: [], via: 'jwt' }
const config = parseConfig(JSON.stringify({ upstreams: [{ name: 'up', transport: 'streamable-http', url: 'http://127.0.0.1:1/mcp' }] }), {}).upstreams[0] as UpstreamConfig
const connection = { config, who: (): CredentialRequest => ({ principal: alice }) }

const unauthorized = (): SwitchboardError => new SwitchboardError('SB_ERR_UPSTREAM_AUTH', 'the upstream refused the credential (HTTP 401)', { details: { status: 401 } })

/** A provider whose `refused` answers `renews` and records whom it was asked for. */
function providerThat (renews: boolean | Error): { provider: NonNullable<ReturnType<typeof renewable>>, asked: Array<string | undefined> } {
  const asked: Array<string | undefined> = []
  const inner = new StaticCredentialProvider()
  const provider = {
    type: 'test',
    headersFor: async (u: UpstreamConfig) => await inner.headersFor(u),
    childEnvFor: async (u: UpstreamConfig) => await inner.childEnvFor(u),
    refused: async (_u: UpstreamConfig, who: CredentialRequest | undefined) => {
      asked.push(who?.principal.id)
      if (renews instanceof Error) throw renews
      return renews
    }
  }
  return { provider, asked }
}

/** Sends that fail with each of `failures` in turn, then succeed. */
function sends (...failures: Error[]): { send: (timeoutMs: number) => Promise<string>, count: () => number } {
  let n = 0
  return {
    send: async () => {
      const failure = failures[n++]
      if (failure !== undefined) throw failure
      return 'ok'
    },
    count: () => n
  }
}

test('a provider without refused has no 401 rule', () => {
  assert.equal(renewable(new StaticCredentialProvider()), undefined)
  assert.equal(renewable(undefined), undefined)
})

test('a 401 on a repeatable request: the provider is told once for the connection\'s principal and the request goes once more', async () => {
  const { provider, asked } = providerThat(true)
  const { send, count } = sends(unauthorized())
  assert.equal(await renewingOnce(provider, connection, true, new CallSignal(), 5000, send), 'ok')
  assert.equal(count(), 2)
  assert.deepEqual(asked, ['alice'])
})

test('a second 401 is the caller\'s SB_ERR_UPSTREAM_AUTH: never a loop', async () => {
  const { provider, asked } = providerThat(true)
  const { send, count } = sends(unauthorized(), unauthorized(), unauthorized())
  await assert.rejects(renewingOnce(provider, connection, true, new CallSignal(), 5000, send), { code: 'SB_ERR_UPSTREAM_AUTH' })
  assert.equal(count(), 2)
  assert.deepEqual(asked, ['alice'])
})

test('a 401 on a request that is not safe to repeat renews the credential but is not sent again', async () => {
  const { provider, asked } = providerThat(true)
  const { send, count } = sends(unauthorized())
  await assert.rejects(renewingOnce(provider, connection, false, new CallSignal(), 5000, send), { code: 'SB_ERR_UPSTREAM_AUTH' })
  assert.equal(count(), 1)
  assert.deepEqual(asked, ['alice'], 'the next call gets the fresh credential')
})

test('a 401 the provider found no fresh credential for stands, and is not repeated', async () => {
  const { provider } = providerThat(false)
  const { send, count } = sends(unauthorized())
  await assert.rejects(renewingOnce(provider, connection, true, new CallSignal(), 5000, send), { code: 'SB_ERR_UPSTREAM_AUTH' })
  assert.equal(count(), 1)
})

test('a provider that fails to renew answers with its own failure', async () => {
  const { provider } = providerThat(new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', 'the refresh token was revoked; connect again'))
  const { send } = sends(unauthorized())
  await assert.rejects(renewingOnce(provider, connection, true, new CallSignal(), 5000, send), { code: 'SB_ERR_UPSTREAM_TOKEN' })
})

test('a 403 and other failures are not the 401 rule\'s: the provider is not asked', async () => {
  const { provider, asked } = providerThat(true)
  const forbidden = new SwitchboardError('SB_ERR_UPSTREAM_AUTH', 'HTTP 403', { details: { status: 403 } })
  await assert.rejects(renewingOnce(provider, connection, true, new CallSignal(), 5000, sends(forbidden).send), { code: 'SB_ERR_UPSTREAM_AUTH' })
  await assert.rejects(renewingOnce(provider, connection, true, new CallSignal(), 5000, sends(new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT', 'slow')).send), { code: 'SB_ERR_UPSTREAM_TIMEOUT' })
  assert.deepEqual(asked, [])
})

test('a cancelled call is not sent again after a 401', async () => {
  const { provider } = providerThat(true)
  const signal = new CallSignal()
  signal.abort(new Error('client gave up'))
  const { send, count } = sends(unauthorized())
  await assert.rejects(renewingOnce(provider, connection, true, signal, 5000, send), { code: 'SB_ERR_UPSTREAM_AUTH' })
  assert.equal(count(), 1)
})
