import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { buildCatalog, type Catalog, type UpstreamSource } from '../../../src/catalog/catalog.ts'
import { encodeCursor } from '../../../src/catalog/cursor.ts'
import type { NamingOptions } from '../../../src/catalog/naming.ts'
import { configSchema, type UpstreamConfig } from '../../../src/config/schema.ts'
import { RPC, RpcError } from '../../../src/protocol/json-rpc.ts'
import type { UpstreamTool } from '../../../src/upstream/upstream-lists.ts'

const NAMING: NamingOptions = { separator: '__', maxNameLength: 64 }
const VALID = /^[A-Za-z][A-Za-z0-9_-]*$/

function upstreamConfig (name: string, extra: Record<string, unknown> = {}): UpstreamConfig {
  const config = configSchema.parse({ upstreams: [{ name, transport: 'stdio', command: 'node', ...extra }] })
  const upstream = config.upstreams[0]
  assert.ok(upstream)
  return upstream
}

function tools (...names: string[]): UpstreamTool[] {
  return names.map(name => ({ name, description: `the ${name} tool`, inputSchema: { type: 'object' } }))
}

function lists (toolList: UpstreamTool[]): UpstreamSource['lists'] {
  return { tools: toolList, prompts: [], resources: [], resourceTemplates: [] }
}

function source (name: string, toolNames: string[], options: { priority?: number, live?: boolean, config?: Record<string, unknown> } = {}): UpstreamSource {
  return {
    config: upstreamConfig(name, options.config),
    priority: options.priority ?? 0,
    lists: lists(tools(...toolNames)),
    live: options.live ?? true
  }
}

function names (catalog: Catalog): string[] {
  return catalog.entries.map(e => e.exposed)
}

function walk (catalog: Catalog, pageSize: number): string[] {
  const seen: string[] = []
  let cursor: string | undefined
  for (let pages = 0; pages < 10_000; pages++) {
    const page = catalog.page(cursor, pageSize)
    assert.ok(page.items.length <= pageSize)
    seen.push(...page.items.map(t => t.name as string))
    if (page.nextCursor === undefined) return seen
    cursor = page.nextCursor
  }
  assert.fail('pagination did not terminate')
}

function codeUnitSorted (values: readonly string[]): string[] {
  return [...values].sort((a, b) => a < b ? -1 : a > b ? 1 : 0)
}

describe('buildCatalog', () => {
  it('exposes each tool as <upstream><separator><tool> by default', () => {
    const catalog = buildCatalog([source('github', ['search', 'get_issue'])], NAMING)
    assert.deepEqual(names(catalog), ['github__get_issue', 'github__search'])
    assert.equal(catalog.size, 2)
  })

  it('uses the configured prefix and separator', () => {
    const catalog = buildCatalog([
      source('github', ['search'], { config: { prefix: 'gh' } }),
      source('memory', ['read_graph'], { priority: 1, config: { prefix: '' } })
    ], { separator: '-', maxNameLength: 64 })
    assert.deepEqual(names(catalog), ['gh-search', 'read_graph'])
  })

  it('sorts entries by exposed name whatever the upstream and tool order', () => {
    const catalog = buildCatalog([
      source('zeta', ['b', 'a', 'C']),
      source('alpha', ['zz', 'Z', 'a-b', 'a_b'], { priority: 1 }),
      source('mid', ['x'], { priority: 2, config: { prefix: '' } })
    ], NAMING)
    const exposed = names(catalog)
    assert.equal(exposed.length, 8)
    assert.deepEqual(exposed, codeUnitSorted(exposed))
    assert.deepEqual(catalog.page(undefined, 100).items.map(t => t.name), exposed)
  })

  it('gives an empty catalog when there are no upstreams or no tools', () => {
    for (const catalog of [buildCatalog([], NAMING), buildCatalog([source('empty', [])], NAMING)]) {
      assert.equal(catalog.size, 0)
      assert.deepEqual(catalog.page(undefined, 10), { items: [] })
    }
  })

  it('serves only included tools that are not excluded, matching the upstream\'s own names', () => {
    const catalog = buildCatalog([source('gh', ['get_issue', 'get_secret', 'list_issues', 'delete_repo', 'get.file'], {
      config: { tools: { include: ['get_*', 'get.*', 'list_*'], exclude: ['*secret*'], rename: { get_issue: 'issue' } } }
    })], NAMING)
    assert.deepEqual(names(catalog), ['gh__get_file', 'gh__issue', 'gh__list_issues'])
  })

  it('lets exclude win over include', () => {
    const catalog = buildCatalog([source('gh', ['a', 'b'], { config: { tools: { include: ['a', 'b'], exclude: ['a'] } } })], NAMING)
    assert.deepEqual(names(catalog), ['gh__b'])
  })

  it('serves nothing when include is empty', () => {
    const catalog = buildCatalog([source('gh', ['a', 'b'], { config: { tools: { include: [] } } })], NAMING)
    assert.equal(catalog.size, 0)
  })

  it('applies a rename before the prefix and resolves back to the upstream tool', () => {
    const catalog = buildCatalog([source('gh', ['search_repositories', 'other'], {
      config: { tools: { rename: { search_repositories: 'find_repos' } } }
    })], NAMING)
    assert.deepEqual(names(catalog), ['gh__find_repos', 'gh__other'])
    const entry = catalog.resolve('gh__find_repos')
    assert.equal(entry?.upstream, 'gh')
    assert.equal(entry?.original, 'search_repositories')
    assert.equal(entry?.definition.name, 'gh__find_repos')
    assert.equal(catalog.resolve('gh__search_repositories'), undefined)
    assert.deepEqual(catalog.renamed, [], 'a configured rename is not a forced rename')
  })

  it('resolves exposed names only', () => {
    const catalog = buildCatalog([source('gh', ['search'])], NAMING)
    assert.equal(catalog.resolve('gh__search')?.original, 'search')
    assert.equal(catalog.resolve('search'), undefined)
    assert.equal(catalog.resolve(''), undefined)
    assert.equal(catalog.resolve('gh__nope'), undefined)
  })

  it('keeps a contested name for the earlier upstream and serves both', () => {
    const catalog = buildCatalog([
      source('second', ['search'], { priority: 1, config: { prefix: '' } }),
      source('first', ['search'], { priority: 0, config: { prefix: '' } })
    ], NAMING)
    assert.equal(catalog.size, 2)
    assert.equal(catalog.resolve('search')?.upstream, 'first')
    const other = catalog.entries.find(e => e.upstream === 'second')
    assert.ok(other)
    assert.notEqual(other.exposed, 'search')
    assert.match(other.exposed, VALID)
    assert.equal(catalog.resolve(other.exposed)?.original, 'search')
    assert.deepEqual(catalog.renamed.map(r => ({ upstream: r.upstream, tool: r.tool, exposed: r.exposed, reason: r.reason })), [
      { upstream: 'second', tool: 'search', exposed: other.exposed, reason: 'collision' }
    ])
  })

  it('reports names changed for invalid characters or length', () => {
    const long = 'l'.repeat(80)
    const catalog = buildCatalog([source('fs', ['read.file', long, 'ok'])], NAMING)
    const reasons = Object.fromEntries(catalog.renamed.map(r => [r.tool, r.reason]))
    assert.deepEqual(reasons, { 'read.file': 'invalid-characters', [long]: 'too-long' })
    for (const entry of catalog.entries) {
      assert.match(entry.exposed, VALID)
      assert.ok(entry.exposed.length <= 64)
    }
  })

  it('does not serve a down upstream but keeps its names reserved', () => {
    const both = [
      source('first', ['search', 'only_first'], { priority: 0, config: { prefix: '' } }),
      source('second', ['search', 'only_second'], { priority: 1, config: { prefix: '' } })
    ]
    const up = buildCatalog(both, NAMING)
    const survivorName = up.entries.find(e => e.upstream === 'second' && e.original === 'search')?.exposed
    assert.ok(survivorName !== undefined && survivorName !== 'search')

    const firstDown = buildCatalog([{ ...both[0] as UpstreamSource, live: false }, both[1] as UpstreamSource], NAMING)
    assert.deepEqual(names(firstDown), codeUnitSorted(['only_second', survivorName]), 'the survivor keeps its disambiguated name')
    assert.equal(firstDown.resolve('search'), undefined, 'the reserved name is not served')
    assert.equal(firstDown.resolve('only_first'), undefined)
    assert.deepEqual(walk(firstDown, 1), names(firstDown))
    assert.ok(firstDown.renamed.every(r => r.upstream === 'second'), 'a down upstream is not reported')
  })

  it('serves only the live upstream when the others are down', () => {
    const catalog = buildCatalog([
      source('a', ['x'], { live: false }),
      source('b', ['x'], { priority: 1, live: false }),
      source('c', ['x'], { priority: 2 })
    ], NAMING)
    assert.deepEqual(names(catalog), ['c__x'])
  })

  it('passes definitions through untouched except for the name', () => {
    const definition: UpstreamTool = {
      name: 'create_issue',
      title: 'Create an issue',
      description: 'Opens a new issue',
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { title: { type: 'string' }, labels: { type: 'array', items: { $ref: '#/$defs/label' } } },
        required: ['title'],
        additionalProperties: false,
        $defs: { label: { type: 'string', enum: ['bug', 'feature'] } }
      },
      outputSchema: { type: 'object', properties: { number: { type: 'integer' } }, required: ['number'] },
      annotations: { title: 'Create issue', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      icons: [{ src: 'https://example.com/icon.png', mimeType: 'image/png', sizes: ['48x48'] }],
      _meta: { 'example.com/owner': 'team-a', nested: { deep: [1, 2, { three: null }] } },
      'x-vendor-extension': { keep: true }
    }
    const original = structuredClone(definition)
    const catalog = buildCatalog([{ config: upstreamConfig('gh'), priority: 0, live: true, lists: lists([definition]) }], NAMING)
    const served = catalog.page(undefined, 10).items[0]
    assert.ok(served)
    assert.deepEqual(served, { ...original, name: 'gh__create_issue' })
    assert.deepEqual(catalog.resolve('gh__create_issue')?.definition, served)
    assert.deepEqual(definition, original, 'the upstream\'s own definition is not modified')
  })

  it('uses the per-tool timeout override, else the upstream timeout, else the default', () => {
    const catalog = buildCatalog([
      source('slow', ['build', 'lint'], { config: { timeoutMs: 5000, tools: { timeoutMs: { build: 120_000 } } } }),
      source('plain', ['ping'], { priority: 1 })
    ], NAMING)
    assert.equal(catalog.resolve('slow__build')?.timeoutMs, 120_000)
    assert.equal(catalog.resolve('slow__lint')?.timeoutMs, 5000)
    assert.equal(catalog.resolve('plain__ping')?.timeoutMs, 30_000)
  })

  it('keys timeout overrides by the upstream tool name, not the renamed one', () => {
    const catalog = buildCatalog([source('ci', ['build'], {
      config: { tools: { rename: { build: 'compile' }, timeoutMs: { build: 99_000, compile: 1 } } }
    })], NAMING)
    assert.equal(catalog.resolve('ci__compile')?.timeoutMs, 99_000)
  })

  it('has the same digest for the same definitions and a different one when a definition changes', () => {
    const a = buildCatalog([source('gh', ['a', 'b'])], NAMING)
    const b = buildCatalog([source('gh', ['b', 'a'])], NAMING)
    assert.equal(a.digest, b.digest)
    const changed = source('gh', ['a', 'b'])
    changed.lists = lists([...changed.lists.tools.slice(0, 1), { name: 'b', description: 'changed' }])
    assert.notEqual(buildCatalog([changed], NAMING).digest, a.digest)
  })

  it('handles tools whose names are Object.prototype keys', () => {
    const prefixed = buildCatalog([source('u', ['constructor', 'toString'])], NAMING)
    assert.deepEqual(names(prefixed), ['u__constructor', 'u__toString'])
    assert.equal(prefixed.resolve('u__constructor')?.timeoutMs, 30_000)
    const bare = buildCatalog([source('u', ['constructor'], { config: { prefix: '' } })], NAMING)
    assert.deepEqual(names(bare), ['constructor'])
  })
})

describe('Catalog.page', () => {
  const many = Array.from({ length: 23 }, (_, i) => `tool_${String(i).padStart(2, '0')}`)

  it('returns pageSize tools and a cursor when there are more', () => {
    const catalog = buildCatalog([source('u', many)], NAMING)
    const first = catalog.page(undefined, 10)
    assert.equal(first.items.length, 10)
    assert.equal(typeof first.nextCursor, 'string')
    assert.deepEqual(first.items.map(t => t.name), names(catalog).slice(0, 10))
    const second = catalog.page(first.nextCursor, 10)
    assert.deepEqual(second.items.map(t => t.name), names(catalog).slice(10, 20))
    const last = catalog.page(second.nextCursor, 10)
    assert.deepEqual(last.items.map(t => t.name), names(catalog).slice(20))
    assert.equal(last.nextCursor, undefined)
    assert.ok(!('nextCursor' in last), 'the last page has no nextCursor key at all')
  })

  it('omits nextCursor when the tools exactly fill the page', () => {
    const catalog = buildCatalog([source('u', ['a', 'b', 'c', 'd'])], NAMING)
    const page = catalog.page(undefined, 4)
    assert.equal(page.items.length, 4)
    assert.equal(page.nextCursor, undefined)
  })

  it('yields every tool exactly once when walking all pages', () => {
    const catalog = buildCatalog([
      source('u', many),
      source('v', ['search', 'files.read', 'x'.repeat(90)], { priority: 1, config: { prefix: '' } }),
      source('w', ['search'], { priority: 2, config: { prefix: '' } })
    ], NAMING)
    for (const size of [1, 2, 3, 7, 10, 26, 27, 500]) {
      const seen = walk(catalog, size)
      assert.deepEqual(seen, names(catalog), `pageSize ${size}`)
      assert.equal(new Set(seen).size, catalog.size)
    }
  })

  it('continues after a cursor name that is no longer in the catalog', () => {
    const catalog = buildCatalog([source('u', ['a', 'c', 'e'])], NAMING)
    assert.deepEqual(catalog.page(encodeCursor('u__b'), 10).items.map(t => t.name), ['u__c', 'u__e'])
    assert.deepEqual(catalog.page(encodeCursor('u__z'), 10), { items: [] })
  })

  it('never repeats a tool and keeps the cursor valid when tools are added and removed between pages', () => {
    const before = buildCatalog([
      source('alpha', ['a1', 'a2', 'a3', 'a4']),
      source('beta', ['b1', 'b2', 'b3', 'b4'], { priority: 1 })
    ], NAMING)
    const first = before.page(undefined, 3)
    assert.deepEqual(first.items.map(t => t.name), ['alpha__a1', 'alpha__a2', 'alpha__a3'])
    assert.ok(first.nextCursor)

    // alpha__a3 (the cursor's own name) and beta__b2 are removed; tools appear before and after the cursor.
    const after = buildCatalog([
      source('alpha', ['a0', 'a1', 'a2', 'a4', 'a5']),
      source('beta', ['b1', 'b3', 'b4', 'b5'], { priority: 1 }),
      source('aaa', ['new'], { priority: 2 }),
      source('gamma', ['g1'], { priority: 3 })
    ], NAMING)
    const served = first.items.map(t => t.name as string)
    let cursor: string | undefined = first.nextCursor
    while (cursor !== undefined) {
      const page = after.page(cursor, 3)
      served.push(...page.items.map(t => t.name as string))
      cursor = page.nextCursor
    }
    assert.equal(new Set(served).size, served.length, `a tool was repeated: ${served.join(', ')}`)
    const expectedRest = names(after).filter(n => n > 'alpha__a3')
    assert.deepEqual(served.slice(3), expectedRest)
    for (const kept of ['alpha__a4', 'beta__b1', 'beta__b3', 'beta__b4']) assert.ok(served.includes(kept), `${kept} was skipped`)
    assert.ok(!served.includes('beta__b2'), 'a removed tool is not served')
  })

  it('rejects an invalid cursor with invalid params', () => {
    const catalog = buildCatalog([source('u', ['a'])], NAMING)
    assert.throws(() => catalog.page('garbage', 10), (err: unknown) => err instanceof RpcError && err.code === RPC.INVALID_PARAMS)
    assert.throws(() => catalog.page('', 10), (err: unknown) => err instanceof RpcError && err.code === -32602)
  })

  it('pages only the tools a session may see', () => {
    const catalog = buildCatalog([source('u', many)], NAMING)
    const visible = (exposed: string): boolean => Number(exposed.slice(exposed.lastIndexOf('_') + 1)) % 2 === 0
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = catalog.page(cursor, 4, visible)
      assert.ok(page.items.length <= 4)
      if (page.nextCursor !== undefined) assert.equal(page.items.length, 4, 'only the last page is short')
      seen.push(...page.items.map(t => t.name as string))
      cursor = page.nextCursor
    } while (cursor !== undefined)
    assert.deepEqual(seen, names(catalog).filter((_, i) => i % 2 === 0))
  })

  it('omits nextCursor when nothing visible remains after the page', () => {
    const catalog = buildCatalog([source('u', ['a', 'b', 'c', 'd'])], NAMING)
    const page = catalog.page(undefined, 2, exposed => exposed === 'u__a' || exposed === 'u__b')
    assert.deepEqual(page.items.map(t => t.name), ['u__a', 'u__b'])
    assert.equal(page.nextCursor, undefined)
    assert.deepEqual(catalog.page(undefined, 2, () => false), { items: [] })
  })
})
