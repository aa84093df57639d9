import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { UpstreamSource } from '../../../src/catalog/catalog.ts'
import { buildResourceCatalog } from '../../../src/catalog/resource-catalog.ts'
import { templateMatcher } from '../../../src/catalog/uri-template.ts'
import { configSchema } from '../../../src/config/schema.ts'
import { RpcError } from '../../../src/protocol/json-rpc.ts'

function source (name: string, priority: number, resources: string[], templates: string[] = [], extra: Record<string, unknown> = {}, live = true): UpstreamSource {
  const config = configSchema.parse({ upstreams: [{ name, transport: 'stdio', command: 'node', ...extra }] }).upstreams[0]
  assert.ok(config)
  return {
    config,
    priority,
    live,
    lists: {
      tools: [],
      prompts: [],
      resources: resources.map(uri => ({ uri, name: uri.split('/').pop() })),
      resourceTemplates: templates.map(uriTemplate => ({ uriTemplate, name: uriTemplate }))
    }
  }
}

describe('templateMatcher (RFC 6570, matched rather than expanded)', () => {
  const cases: Array<[string, string[], string[]]> = [
    ['file:///{path}', ['file:///a.txt'], ['file:///a/b.txt']],
    ['file:///{+path}', ['file:///a/b/c.txt', 'file:///'], ['http://x/']],
    ['db://{table}/rows/{id}', ['db://users/rows/7'], ['db://users/rows/7/x', 'db://users/cols/7']],
    ['search://q{?term,limit}', ['search://q', 'search://q?term=a&limit=2'], ['search://qx']],
    ['x://a{/seg}', ['x://a', 'x://a/b', 'x://a/b/c'], ['x://ab']],
    ['x://a{#frag}', ['x://a', 'x://a#top'], ['x://ab']],
    ['lit://a.b(c)', ['lit://a.b(c)'], ['lit://aXb(c)']]
  ]
  for (const [template, yes, no] of cases) {
    it(template, () => {
      const matcher = templateMatcher(template)
      assert.ok(matcher)
      for (const uri of yes) assert.ok(matcher.test(uri), `${uri} should match`)
      for (const uri of no) assert.ok(!matcher.test(uri), `${uri} should not match`)
    })
  }
  it('rejects malformed templates', () => {
    for (const bad of ['x://{', 'x://}', 'x://{}', 'x://{a}}', 'x://{{a}']) assert.equal(templateMatcher(bad), undefined, bad)
  })
})

describe('buildResourceCatalog', () => {
  it('keeps URIs exactly, sorts them and routes each to its upstream', () => {
    const catalog = buildResourceCatalog([
      source('b', 1, ['mem://z', 'mem://a?x=1'], ['mem://items/{id}']),
      source('a', 0, ['file:///etc/hosts'], ['file:///{+path}'])
    ])
    assert.deepEqual(catalog.resources.map(r => r.key), ['file:///etc/hosts', 'mem://a?x=1', 'mem://z'])
    assert.equal(catalog.route('mem://a?x=1'), 'b')
    assert.equal(catalog.route('mem://items/42'), 'b')
    assert.equal(catalog.route('file:///var/log/x'), 'a')
    assert.equal(catalog.route('nope://x'), undefined)
    assert.equal(catalog.routeTemplate('mem://items/{id}'), 'b')
  })

  it('serves a contested URI or template from the first upstream in config order and reports the collision', () => {
    const catalog = buildResourceCatalog([
      source('second', 1, ['shared://hello'], ['shared://{x}']),
      source('first', 0, ['shared://hello'], ['shared://{x}'])
    ])
    assert.equal(catalog.route('shared://hello'), 'first')
    assert.equal(catalog.routeTemplate('shared://{x}'), 'first')
    assert.deepEqual(catalog.collisions.map(c => [c.kind, c.served, c.hidden]), [['resource', 'first', 'second'], ['template', 'first', 'second']])
  })

  it('routes an overlapping template match by config order', () => {
    const catalog = buildResourceCatalog([source('late', 1, [], ['x://{a}']), source('early', 0, [], ['x://{+a}'])])
    assert.equal(catalog.route('x://q'), 'early')
  })

  it('applies include/exclude globs and leaves out upstreams that are down', () => {
    const catalog = buildResourceCatalog([
      source('a', 0, ['f://public/1', 'f://private/2'], [], { resources: { exclude: ['f://private/*'] } }),
      source('down', 1, ['d://1'], [], {}, false)
    ])
    assert.deepEqual(catalog.resources.map(r => r.key), ['f://public/1'])
  })

  it('pages with keyset cursors and rejects a forged one', () => {
    const uris = Array.from({ length: 25 }, (_, i) => `r://${String(i).padStart(2, '0')}`)
    const catalog = buildResourceCatalog([source('a', 0, uris)])
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = catalog.pageResources(cursor, 10)
      seen.push(...page.items.map(r => r.uri as string))
      cursor = page.nextCursor
    } while (cursor !== undefined)
    assert.deepEqual(seen, uris)
    assert.throws(() => catalog.pageResources('garbage', 10), RpcError)
  })

  it('changes its digest when a definition changes, not when the order does', () => {
    const a = buildResourceCatalog([source('a', 0, ['r://1', 'r://2'])])
    const b = buildResourceCatalog([source('a', 0, ['r://2', 'r://1'])])
    const c = buildResourceCatalog([source('a', 0, ['r://1', 'r://3'])])
    assert.equal(a.digest, b.digest)
    assert.notEqual(a.digest, c.digest)
  })
})
