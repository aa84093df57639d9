import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createBrowserSessions } from '../../../../src/credentials/browser/browser-sessions.ts'
import { createSealedTokens } from '../../../../src/credentials/browser/sealed-token.ts'
import { createKeyDeriver } from '../../../../src/credentials/oauth/connect-signing.ts'

const KEY = Buffer.alloc(32, 7).toString('base64')
const ALICE = { id: 'alice', via: 'api-key', roles: ['admin'] } as const

test('a proof issued on one replica opens on another with the same tokens.encryptionKey, and names the principal without its roles', async () => {
  const one = createBrowserSessions(createKeyDeriver(KEY), 60_000)
  const two = createBrowserSessions(createKeyDeriver(KEY), 60_000)
  const { cookie, proven } = await one.issue(ALICE)
  const opened = await two.open(cookie)
  assert.equal(opened?.id, proven.id)
  assert.deepEqual([opened?.principal.id, opened?.principal.via, opened?.principal.roles], ['alice', 'api-key', []])
  assert.ok(!cookie.includes('alice'), 'the principal is not readable in the cookie')
})

test('a proof is refused when forged, altered, sealed with another key, of another purpose, too long or expired', async () => {
  const sessions = createBrowserSessions(createKeyDeriver(KEY), 60_000)
  const { cookie } = await sessions.issue(ALICE)
  const other = createBrowserSessions(createKeyDeriver(Buffer.alloc(32, 8).toString('base64')), 60_000)
  assert.equal(await other.open(cookie), undefined, 'another key')
  const parts = cookie.split('.')
  parts[3] = `${(parts[3] ?? '').slice(0, -2)}AA`
  assert.equal(await sessions.open(parts.join('.')), undefined, 'altered')
  assert.equal(await sessions.open('not-a-token'), undefined)
  assert.equal(await sessions.open(undefined), undefined)
  assert.equal(await sessions.open('x'.repeat(5000)), undefined)
  // A sealed value of another purpose (a sign-in in progress) is no proof.
  const signIn = createSealedTokens(new Uint8Array(createKeyDeriver(KEY)('connect-browser')), 'connect-signin')
  assert.equal(await sessions.open(await signIn.seal({ sid: 'x', p: { id: 'alice', via: 'api-key' } }, 60_000)), undefined)
  const short = createBrowserSessions(createKeyDeriver(KEY), 1)
  const { cookie: stale } = await short.issue(ALICE)
  await new Promise(resolve => setTimeout(resolve, 1100))
  assert.equal(await short.open(stale), undefined, 'expired')
})

test('a CSRF token matches only its own binding', () => {
  const sessions = createBrowserSessions(createKeyDeriver(KEY), 60_000)
  const token = sessions.csrfToken('binding-a')
  assert.equal(sessions.csrfMatches('binding-a', token), true)
  assert.equal(sessions.csrfMatches('binding-b', token), false)
  assert.equal(sessions.csrfMatches(undefined, token), false)
  assert.equal(sessions.csrfMatches('binding-a', undefined), false)
  assert.equal(sessions.csrfMatches('binding-a', `${token}x`), false)
})
