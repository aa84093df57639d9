import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCli, tempConfig } from '../../helpers/cli.ts'

describe('switchboard validate', () => {
  it('exits 0 and reports OK for a valid config', async (t) => {
    const file = await tempConfig(t, `upstreams:
  - name: local
    transport: stdio
    command: node
  - name: remote
    transport: streamable-http
    url: https://example.com/mcp
`)
    const result = await runCli(['validate', '--config', file])
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /OK/)
    assert.ok(result.stdout.includes(file))
    assert.match(result.stdout, /2 upstream/)
  })

  it('exits non-zero and lists every bad path for an invalid config', async (t) => {
    const file = await tempConfig(t, `upstreams:
  - name: Bad_Name
    transport: stdio
    command: node
  - name: web
    transport: streamable-http
  - name: local
    transport: stdio
  - name: web
    transport: sse
    url: https://example.com/sse
  - name: sock
    transport: websocket
    url: http://example.com/ws
catalog:
  maxNameLength: 4
`)
    const result = await runCli(['validate', '--config', file])
    assert.notEqual(result.code, 0)
    assert.notEqual(result.code, null)
    assert.doesNotMatch(result.stdout, /OK/)
    for (const path of ['upstreams[0].name', 'upstreams[1].url', 'upstreams[2].command', 'upstreams[3].name', 'upstreams[4].url', 'catalog.maxNameLength']) {
      assert.ok(result.stderr.includes(path), `stderr does not mention ${path}:\n${result.stderr}`)
    }
  })

  it('exits non-zero for invalid YAML', async (t) => {
    const file = await tempConfig(t, 'listen: [\n')
    const result = await runCli(['validate', '--config', file])
    assert.notEqual(result.code, 0)
    assert.match(result.stderr, /not valid YAML/)
  })

  it('exits non-zero and names the file when it cannot be read', async () => {
    const file = join(tmpdir(), `switchboard-cli-missing-${process.pid}-${Date.now()}.yaml`)
    const result = await runCli(['validate', '--config', file])
    assert.notEqual(result.code, 0)
    assert.ok(result.stderr.includes(file))
  })

  it('exits 2 with usage when --config is missing', async () => {
    const result = await runCli(['validate'])
    assert.equal(result.code, 2)
    assert.match(result.stderr, /--config/)
    assert.match(result.stderr, /usage/)
  })
})
