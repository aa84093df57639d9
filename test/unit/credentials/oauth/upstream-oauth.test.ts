import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { withOfflineAccess } from '../../../../src/credentials/oauth/upstream-oauth.ts'

describe('scopes asked for (SEP-2207)', () => {
  it('adds offline_access when the authorization server lists it', () => {
    assert.deepEqual(withOfflineAccess(['mcp:basic'], { scopes_supported: ['mcp:basic', 'offline_access'] }), ['mcp:basic', 'offline_access'])
  })

  it('never asks for offline_access the server does not list, nor twice', () => {
    assert.deepEqual(withOfflineAccess(['mcp:basic'], { scopes_supported: ['mcp:basic', 'mcp:read'] }), ['mcp:basic'])
    assert.deepEqual(withOfflineAccess(['mcp:basic'], {}), ['mcp:basic'])
    assert.deepEqual(withOfflineAccess(['offline_access'], { scopes_supported: ['offline_access'] }), ['offline_access'])
  })
})
