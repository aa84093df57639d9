import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError, parseConfig, type ConfigIssue } from '../../../src/config/load-config.ts'
import { diffConfig } from '../../../src/config/config-diff.ts'

const UPSTREAMS = [{ name: 'files', transport: 'stdio', command: 'x' }, { name: 'memory', transport: 'stdio', command: 'y' }]
const AUTH = { apiKeys: [{ id: 'ci', key: 'ci-key-0123456789abcdef', roles: ['ops'] }] }

function issuesOf (doc: unknown): Array<[string, string]> {
  try {
    parseConfig(JSON.stringify(doc), {})
  } catch (err: unknown) {
    if (err instanceof ConfigError) return err.issues.map((i: ConfigIssue) => [i.path, i.message])
    throw err
  }
  assert.fail('config was accepted')
}

describe('endpoints config', () => {
  it('fills in the defaults: every tool, every upstream, anyone, listed', () => {
    const { endpoints } = parseConfig(JSON.stringify({ upstreams: UPSTREAMS, endpoints: [{ name: 'all' }] }), {})
    assert.deepEqual(endpoints, [{ name: 'all', tools: { include: ['*'], exclude: [] }, discovery: 'list', default: false }])
    assert.deepEqual(parseConfig('{}', {}).endpoints, [])
  })

  it('lists every mistake at its path, with the upstream probably meant, and applies nothing', () => {
    const issues = issuesOf({
      upstreams: UPSTREAMS,
      endpoints: [
        { name: 'dev', upstreams: ['files', 'memroy'] },
        { name: 'dev', discovery: 'lazy' },
        { name: 'Ops/admin', roles: ['ops'] },
        { name: 'x', default: true, annotations: { readOnlyHnit: true } },
        { name: 'y', default: true, tools: { include: ['*'], rename: {} } }
      ]
    })
    assert.deepEqual(issues, [
      ['endpoints[1].discovery', 'Invalid option: expected one of "list"|"search"'],
      ['endpoints[2].name', 'must be a path segment matching ^[a-z][a-z0-9-]*$'],
      ['endpoints[3].annotations', 'Unrecognized key: "readOnlyHnit" (did you mean "readOnlyHint"?)'],
      ['endpoints[4].tools', 'Unrecognized key: "rename"'],
      ['endpoints[0].upstreams[1]', 'no upstream named "memroy" (did you mean "memory"?); upstreams: files, memory'],
      ['endpoints[1].name', 'duplicate endpoint name "dev" (also endpoints[0])'],
      ['endpoints[2].roles', 'needs an auth section: without one every caller is "anonymous" with no roles, so nobody could open this endpoint'],
      ['endpoints[4].default', 'only one endpoint may be the default (also endpoints[3])']
    ])
  })

  it('takes roles when auth is configured, and refuses an endpoint name that is not one path segment', () => {
    const config = parseConfig(JSON.stringify({ upstreams: UPSTREAMS, auth: AUTH, endpoints: [{ name: 'ops', roles: ['ops'], discovery: 'search' }] }), {})
    assert.deepEqual(config.endpoints[0]?.roles, ['ops'])
    for (const name of ['', '..', 'a b', 'a/b', '-x', 'x'.repeat(65), 'café']) {
      assert.equal(issuesOf({ endpoints: [{ name }] })[0]?.[0], 'endpoints[0].name', JSON.stringify(name))
    }
  })

  it('is applied live by a reload', () => {
    const before = parseConfig(JSON.stringify({ upstreams: UPSTREAMS }), {})
    const after = parseConfig(JSON.stringify({ upstreams: UPSTREAMS, endpoints: [{ name: 'dev' }] }), {})
    const diff = diffConfig(before, after)
    assert.deepEqual([diff.applied, diff.restartRequired], [['endpoints'], []])
  })
})
