import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Principal } from '../../../src/auth/principal.ts'
import { parseConfig } from '../../../src/config/load-config.ts'
import type { CredentialProvider } from '../../../src/credentials/credential-provider.ts'
import { CredentialProviders } from '../../../src/credentials/credential-providers.ts'
import { revealInto } from '../../../src/auth/secret.ts'
import { StaticCredentialProvider } from '../../../src/credentials/static-credential-provider.ts'

const config = parseConfig(JSON.stringify({
  upstreams: [
    { name: 'web', transport: 'streamable-http', url: 'http://127.0.0.1:1/mcp', headers: { authorization: 'Bearer web-own' } },
    { name: 'tool', transport: 'stdio', command: 'node', env: { API_KEY: 'tool-own-key' } }
  ]
}), {})
const [web, tool] = config.upstreams as [typeof config.upstreams[0], typeof config.upstreams[0]]
const alice: Principal = { id: 'alice', roles: [], via: 'api-key' }
const bob: Principal = { id: 'bob', roles: [], via: 'api-key' }

test('the static provider answers the upstream\'s configured headers, the same for every principal and for none', async () => {
  const provider = new StaticCredentialProvider()
  assert.equal(provider.type, 'static')
  for (const principal of [alice, bob, undefined]) {
    assert.deepEqual(revealInto({}, await provider.headersFor(web, principal === undefined ? undefined : { principal })), { authorization: 'Bearer web-own' })
  }
})

test('the static provider\'s headers print as [redacted]', async () => {
  const headers = await new StaticCredentialProvider().headersFor(web, { principal: alice })
  assert.equal(JSON.stringify(headers), '{"authorization":"[redacted]"}')
})

test('the static provider gives a stdio child its configured env and no extra arguments', async () => {
  const child = await new StaticCredentialProvider().childEnvFor(tool)
  assert.deepEqual(revealInto({}, child.env), { API_KEY: 'tool-own-key' })
  assert.deepEqual(child.args, [])
})

test('the static provider wraps each config once: a send allocates nothing new', async () => {
  const provider = new StaticCredentialProvider()
  assert.equal(provider.headersFor(web, { principal: alice }), provider.headersFor(web, { principal: bob }))
})

test('the registry gives an upstream without an auth type the one static provider', () => {
  const providers = new CredentialProviders()
  const first = providers.for(web)
  assert.equal(first.type, 'static')
  assert.equal(providers.for(tool), first, 'one provider per auth type, shared by its upstreams')
})

test('the registry makes a provider with the factory registered for its type', () => {
  const made: CredentialProvider[] = []
  const providers = new CredentialProviders({
    static: () => {
      const provider = new StaticCredentialProvider()
      made.push(provider)
      return provider
    }
  })
  assert.equal(providers.for(web), made[0])
  providers.for(tool)
  assert.equal(made.length, 1)
})
