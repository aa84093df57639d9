import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { ConfigError, loadConfig, parseConfig, type ConfigIssue } from '../../../src/config/load-config.ts'
import { runCli, tempConfig } from '../../helpers/cli.ts'

function issuesOf (doc: unknown): readonly ConfigIssue[] {
  try {
    parseConfig(JSON.stringify(doc), {})
  } catch (err: unknown) {
    if (err instanceof ConfigError) return err.issues
    throw err
  }
  assert.fail('config was accepted')
}

describe('pinning config', () => {
  it('defaults to warn, pin new tools, file store; parsed from text without a path there is no pin file', () => {
    const { pinning } = parseConfig('{}', {})
    assert.deepEqual(pinning, { mode: 'warn', newTools: 'pin', store: 'file', keyPrefix: 'switchboard:pins', redisTimeoutMs: 500, reloadIntervalMs: 1000 })
  })

  it('puts the pin file next to the config file it was loaded from', async (t) => {
    const file = await tempConfig(t, 'pinning: { mode: quarantine }\n')
    const config = await loadConfig(file, {})
    assert.equal(config.pinning.file, join(file, '..', 'gateway.pins.json'))
    const relative = await tempConfig(t, 'pinning: { file: state/pins.json }\n')
    assert.equal((await loadConfig(relative, {})).pinning.file, join(relative, '..', 'state', 'pins.json'))
  })

  it('names the path of every mistake', () => {
    assert.deepEqual(issuesOf({ pinning: { store: 'redis' } }).map(i => [i.path, i.message]), [['pinning.redisUrl', 'required for store redis (or set the redis block)']])
    assert.deepEqual(issuesOf({ pinning: { store: 'redis', redisUrl: 'http://x' } }).map(i => i.path), ['pinning.redisUrl'])
    assert.deepEqual(issuesOf({ pinning: { redisUrl: 'redis://x' } }).map(i => [i.path, i.message]), [['pinning.redisUrl', 'only used with store redis']])
    assert.deepEqual(issuesOf({ pinning: { mode: 'strict', newTools: 'drop' } }).map(i => i.path), ['pinning.mode', 'pinning.newTools'])
  })
})

describe('switchboard pins', () => {
  it('lists an empty pin store', async (t) => {
    const file = await tempConfig(t, 'upstreams: [{ name: web, transport: streamable-http, url: "http://127.0.0.1:1/mcp" }]\n')
    const { code, stdout } = await runCli(['pins', 'list', '--config', file])
    assert.equal(code, 0)
    assert.match(stdout, /^pins: .*gateway\.pins\.json \(mode warn, newTools pin, scanning warn\)$/m)
    assert.match(stdout, /^web: no pins yet$/m)
  })

  it('refuses an approval that names no tool (exit 2) and an unknown upstream (exit 1)', async (t) => {
    const file = await tempConfig(t, 'upstreams: [{ name: web, transport: streamable-http, url: "http://127.0.0.1:1/mcp" }]\n')
    const bare = await runCli(['pins', 'approve', '--config', file, '--upstream', 'web'])
    assert.equal(bare.code, 2)
    assert.match(bare.stderr, /approve needs --tool <name> \(one or more\) or --all/)
    const unknown = await runCli(['pins', 'approve', '--config', file, '--upstream', 'nope', '--tool', 'x'])
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /no upstream named nope/)
    const all = await runCli(['pins', 'approve', '--config', file, '--all'])
    assert.equal(all.code, 0)
    assert.match(all.stdout, /nothing pending to approve/)
  })
})
