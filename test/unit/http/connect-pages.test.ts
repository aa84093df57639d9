import { test } from 'node:test'
import assert from 'node:assert/strict'
import { escapeHtml, pageHtml, prefersHtml, tableHtml } from '../../../src/http/connect-pages.ts'

test('escapes every character that could open markup or an attribute', () => {
  assert.equal(escapeHtml('<a href="x" onclick=\'y\'>&</a>'), '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;')
})

test('pages and tables carry their texts escaped', () => {
  const page = pageHtml('<t>', ['<p>'], tableHtml(['<h>'], [['<c>']]))
  assert.ok(!/<t>|<p><p>|<h>|<c>/.test(page))
  assert.match(page, /<title>&lt;t&gt;<\/title>/)
  assert.match(page, /<th>&lt;h&gt;<\/th>/)
  assert.match(page, /<td>&lt;c&gt;<\/td>/)
})

test('a browser\'s Accept prefers HTML; curl, a JSON client and no Accept get JSON', () => {
  assert.equal(prefersHtml('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'), true)
  assert.equal(prefersHtml('*/*'), false)
  assert.equal(prefersHtml('application/json'), false)
  assert.equal(prefersHtml('application/json, text/html;q=0.5'), false)
  assert.equal(prefersHtml('text/*'), true)
  assert.equal(prefersHtml(undefined), false)
})
