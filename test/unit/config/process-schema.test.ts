import { test } from 'node:test'
import assert from 'node:assert/strict'
import { configIssues } from '../../helpers/config-issues.ts'
import { diffConfig } from '../../../src/config/config-diff.ts'
import { parseConfig } from '../../../src/config/load-config.ts'
import { processSettings } from '../../../src/config/process-schema.ts'

const stdio = (extra: string): string => `upstreams: [{ name: fs, transport: stdio, command: node${extra} }]`

test('a stdio upstream takes start, idleStopMs and limits of its own, else upstreamDefaults, else eager, never stopped, unlimited', () => {
  const bare = parseConfig(stdio(''), {})
  assert.deepEqual(processSettings(bare.upstreams[0] ?? { transport: 'stdio' }, bare.upstreamDefaults), { start: 'eager', idleStopMs: undefined, limits: undefined })
  const withDefaults = parseConfig(`${stdio('')}\nupstreamDefaults: { start: lazy, idleStopMs: 60000, limits: { memoryMb: 256 }, maxRunning: 4 }`, {})
  assert.deepEqual(processSettings(withDefaults.upstreams[0] ?? { transport: 'stdio' }, withDefaults.upstreamDefaults), { start: 'lazy', idleStopMs: 60000, limits: { memoryMb: 256 } })
  const own = parseConfig(`${stdio(', start: eager, idleStopMs: 5000, limits: { cpuSeconds: 30 }')}\nupstreamDefaults: { start: lazy, idleStopMs: 60000, limits: { memoryMb: 256 } }`, {})
  assert.deepEqual(processSettings(own.upstreams[0] ?? { transport: 'stdio' }, own.upstreamDefaults), { start: 'eager', idleStopMs: 5000, limits: { cpuSeconds: 30 } })
})

test('upstreamDefaults never applies to a non-stdio upstream, and one that sets these keys itself is refused by path', () => {
  const config = parseConfig('upstreams: [{ name: web, transport: streamable-http, url: "http://127.0.0.1:1/mcp" }]\nupstreamDefaults: { start: lazy, limits: { memoryMb: 64 } }', {})
  assert.deepEqual(processSettings(config.upstreams[0] ?? { transport: 'sse' }, config.upstreamDefaults), { start: 'eager', idleStopMs: undefined, limits: undefined })
  const found = configIssues('upstreams: [{ name: web, transport: sse, url: "http://127.0.0.1:1/sse", start: lazy, idleStopMs: 1000, limits: { memoryMb: 64 } }]', {}).join('\n')
  for (const key of ['start', 'idleStopMs', 'limits']) assert.match(found, new RegExp(`upstreams\\[0\\]\\.${key}.*only for transport stdio`))
})

test('bad values name their paths: an unknown start, a zero idleStopMs, a tiny memory limit, an unknown limit, maxRunning 0', () => {
  const found = configIssues(`${stdio(', start: sometimes, idleStopMs: 0, limits: { memoryMb: 1, disk: 5 }')}\nupstreamDefaults: { maxRunning: 0 }`, {}).join('\n')
  assert.match(found, /upstreams\[0\]\.start/)
  assert.match(found, /upstreams\[0\]\.idleStopMs/)
  assert.match(found, /upstreams\[0\]\.limits\.memoryMb/)
  assert.match(found, /disk/)
  assert.match(found, /upstreamDefaults\.maxRunning/)
})

test('a reload with new process defaults reconnects the stdio upstreams only; a new maxRunning alone reconnects none', () => {
  const two = 'upstreams: [{ name: fs, transport: stdio, command: node }, { name: web, transport: sse, url: "http://127.0.0.1:1/sse" }]'
  const before = parseConfig(`${two}\nupstreamDefaults: { start: lazy, maxRunning: 2 }`, {})
  assert.deepEqual(diffConfig(before, parseConfig(`${two}\nupstreamDefaults: { start: eager, maxRunning: 2 }`, {})).upstreams.changed, ['fs'])
  assert.deepEqual(diffConfig(before, parseConfig(`${two}\nupstreamDefaults: { start: lazy, maxRunning: 3 }`, {})).upstreams.changed, [])
})
