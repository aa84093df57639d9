import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { metadataPaths, metadataUrl, protectedResourceMetadata } from '../../../src/auth/protected-resource.ts'
import { authSchema, type AuthConfig } from '../../../src/config/access-schema.ts'

const JWT = { issuer: 'https://idp.example.com/realms/gw', audience: 'https://gw.example.com/mcp', jwksUri: 'https://idp.example.com/realms/gw/certs' }
const WK = '/.well-known/oauth-protected-resource'

function auth (extra: Record<string, unknown> = {}, jwt: Record<string, unknown> = {}): AuthConfig {
  return authSchema.parse({ jwt: { ...JWT, ...jwt }, ...extra })
}

describe('protectedResourceMetadata', () => {
  it('defaults resource to the audience and the authorization server to the issuer', () => {
    assert.deepEqual(protectedResourceMetadata(auth()), {
      resource: 'https://gw.example.com/mcp',
      authorization_servers: ['https://idp.example.com/realms/gw'],
      bearer_methods_supported: ['header'],
      resource_name: 'Switchboard MCP gateway'
    })
  })

  it('uses the configured resource, authorization servers and scopes', () => {
    const doc = protectedResourceMetadata(auth({
      resource: 'https://public.example.com/tools/mcp',
      authorizationServers: ['https://as1.example.com', 'https://as2.example.com'],
      scopes: ['mcp:tools']
    }))
    assert.deepEqual(doc, {
      resource: 'https://public.example.com/tools/mcp',
      authorization_servers: ['https://as1.example.com', 'https://as2.example.com'],
      bearer_methods_supported: ['header'],
      scopes_supported: ['mcp:tools'],
      resource_name: 'Switchboard MCP gateway'
    })
  })

  it('is undefined without jwt (API keys only)', () => {
    assert.equal(protectedResourceMetadata(authSchema.parse({ apiKeys: [{ id: 'a', key: 'k'.repeat(16) }] })), undefined)
  })
})

describe('metadataUrl', () => {
  it('inserts the well-known prefix between the host and the resource path', () => {
    assert.equal(metadataUrl(auth()), `https://gw.example.com${WK}/mcp`)
    assert.equal(metadataUrl(auth({ resource: 'https://gw.example.com:8443/public/mcp' })), `https://gw.example.com:8443${WK}/public/mcp`)
  })

  it('uses the root form for a resource without a path, with or without a trailing slash', () => {
    assert.equal(metadataUrl(auth({ resource: 'https://gw.example.com' })), `https://gw.example.com${WK}`)
    assert.equal(metadataUrl(auth({ resource: 'https://gw.example.com/' })), `https://gw.example.com${WK}`)
  })

  it('strips a trailing slash from the resource path', () => {
    assert.equal(metadataUrl(auth({ resource: 'https://gw.example.com/mcp/' })), `https://gw.example.com${WK}/mcp`)
  })

  it('keeps a query component after the path', () => {
    assert.equal(metadataUrl(auth({ resource: 'https://gw.example.com/mcp?tenant=a' })), `https://gw.example.com${WK}/mcp?tenant=a`)
  })

  it('is undefined without jwt; an audience that is not an http(s) URL needs resource, which then names the URL', () => {
    assert.equal(metadataUrl(authSchema.parse({ apiKeys: [{ id: 'a', key: 'k'.repeat(16) }] })), undefined)
    assert.throws(() => auth({}, { audience: 'api://switchboard' }), /resource/)
    assert.equal(metadataUrl(auth({ resource: 'https://gw.example.com/mcp' }, { audience: 'api://switchboard' })), `https://gw.example.com${WK}/mcp`)
  })
})

describe('metadataPaths', () => {
  it('serves the root and the path-suffixed form', () => {
    assert.deepEqual(metadataPaths(auth()), [WK, `${WK}/mcp`])
    assert.deepEqual(metadataPaths(auth({ resource: 'https://gw.example.com/a/b/' })), [WK, `${WK}/a/b`])
  })

  it('serves the root form alone for a resource without a path', () => {
    assert.deepEqual(metadataPaths(auth({ resource: 'https://gw.example.com/' })), [WK])
  })

  it('serves nothing without jwt', () => {
    assert.deepEqual(metadataPaths(authSchema.parse({ apiKeys: [{ id: 'a', key: 'k'.repeat(16) }] })), [])
  })
})
