import assert from 'node:assert/strict'
import { test } from 'node:test'
import { connectPaths } from '../../../src/http/connect-context.ts'
import { escapeHtml } from '../../../src/http/connect-pages.ts'

test('the connect paths follow the path of http.publicUrl, and escape the upstream and the link', () => {
  const root = connectPaths('https://mcp.example.com')
  assert.equal(root.prefix, '')
  assert.equal(root.connect('github', 'a.b+c'), '/connect/github?link=a.b%2Bc')
  assert.equal(root.signInKey, '/connect/signin/key')
  const behind = connectPaths('https://tools.example.com/gateway/')
  assert.equal(behind.prefix, '/gateway')
  assert.equal(behind.connect('git hub'), '/gateway/connect/git%20hub')
  assert.equal(behind.signIn, '/gateway/connect/signin')
})

test('page text shows bidirectional and zero-width characters escaped, so a name cannot reorder the sentence around it', () => {
  assert.equal(escapeHtml('evil\u202Eevil'), 'evil\\u{202E}evil')
  assert.equal(escapeHtml('<b>\u2066x\u2069\u200B'), '&lt;b&gt;\\u{2066}x\\u{2069}\\u{200B}')
})
