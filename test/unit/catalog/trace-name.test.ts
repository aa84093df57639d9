import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { parseConfig } from '../../../src/config/load-config.ts'
import { traceName } from '../../../src/catalog/trace-name.ts'

const CONFIG = parseConfig(`
catalog: { separator: "__", maxNameLength: 32 }
upstreams:
  - name: files
    transport: stdio
    command: node
    tools: { include: ["read*", "list*"], exclude: ["*_raw"], rename: { read_file: read, list_dir: ls } }
    prompts: { exclude: [draft_*] }
  - name: gh
    prefix: github
    transport: stdio
    command: node
  - name: misc
    prefix: ""
    transport: stdio
    command: node
    tools: { include: [ping] }
    resources: { include: ["mem://*"], exclude: ["mem://private/*"] }
`, {})

function trace (kind: 'tools' | 'prompts' | 'resources', name: string): ReturnType<typeof traceName> {
  return traceName(CONFIG.upstreams, CONFIG.catalog, kind, name)
}

describe('traceName', () => {
  it('strips the prefix (the name, or the one configured) and undoes the rename', () => {
    assert.deepEqual(trace('tools', 'files__read').exposers, [{ upstream: 'files', own: 'read_file' }, { upstream: 'files', own: 'read' }])
    assert.deepEqual(trace('tools', 'files__ls').exposers, [{ upstream: 'files', own: 'list_dir' }])
    assert.deepEqual(trace('tools', 'github__create_issue').exposers, [{ upstream: 'gh', own: 'create_issue' }])
    assert.deepEqual(trace('tools', 'gh__create_issue').exposers, [])
  })

  it('lets an upstream with an empty prefix claim bare names its filters let through', () => {
    assert.deepEqual(trace('tools', 'ping').exposers, [{ upstream: 'misc', own: 'ping' }])
    assert.deepEqual(trace('tools', 'pong').hidden, [{ upstream: 'misc', own: 'pong', reason: 'tools.include [ping] does not match pong' }])
  })

  it('reports the filter that hides a name, exclude before include', () => {
    const t = trace('tools', 'files__read_raw')
    assert.deepEqual(t.exposers, [])
    assert.deepEqual(t.hidden.find(h => h.upstream === 'files'), { upstream: 'files', own: 'read_raw', reason: 'tools.exclude "*_raw" matches read_raw' })
    assert.deepEqual(trace('prompts', 'files__draft_x').hidden.find(h => h.upstream === 'files')?.reason, 'prompts.exclude "draft_*" matches draft_x')
  })

  it('reports an own name that is renamed away, with the name it has instead', () => {
    const t = trace('tools', 'files__list_dir')
    assert.deepEqual(t.exposers, [])
    assert.deepEqual(t.renamed, [{ upstream: 'files', own: 'list_dir', exposed: 'files__ls' }])
  })

  it('refuses names no tool can have: invalid characters, longer than maxNameLength', () => {
    assert.match(trace('tools', 'files__a.b').invalid ?? '', /matches \^\[A-Za-z\]/)
    assert.match(trace('tools', `files__${'x'.repeat(30)}`).invalid ?? '', /maxNameLength \(32\)/)
    assert.equal(trace('resources', 'mem://a.b').invalid, undefined)
  })

  it('traces resources by their URIs through each upstream\'s filters, unprefixed', () => {
    assert.deepEqual(trace('resources', 'mem://notes').exposers.map(o => o.upstream), ['files', 'gh', 'misc'])
    assert.deepEqual(trace('resources', 'mem://private/x').exposers.map(o => o.upstream), ['files', 'gh'])
    assert.equal(trace('resources', 'mem://private/x').hidden[0]?.reason, 'resources.exclude "mem://private/*" matches mem://private/x')
  })

  it('does not take Object.prototype members for renames', () => {
    assert.deepEqual(trace('tools', 'github__constructor').exposers, [{ upstream: 'gh', own: 'constructor' }])
  })
})
