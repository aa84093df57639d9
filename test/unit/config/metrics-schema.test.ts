import { test } from 'node:test'
import assert from 'node:assert/strict'
import { configIssues, envRef as ref } from '../../helpers/config-issues.ts'
import { diffConfig, effectiveConfig } from '../../../src/config/config-diff.ts'
import { parseConfig } from '../../../src/config/load-config.ts'
import { redactConfig, REDACTED } from '../../../src/config/redact.ts'

const TOKEN = 'a-long-metrics-token-from-the-env'
const ENV = { SWITCHBOARD_METRICS_TOKEN: TOKEN, OTHER: 'another-metrics-token-0123' }

function issues (yaml: string, env: NodeJS.ProcessEnv = ENV): string[] {
  return configIssues(yaml, env)
}

test('no metrics block, or one without a token: /metrics is public', () => {
  assert.equal(parseConfig('{}', {}).metrics, undefined)
  assert.deepEqual(parseConfig('metrics: {}', {}).metrics, {})
})

test('a metrics token comes from the environment, is at least 16 characters and is redacted in /admin/config', () => {
  const config = parseConfig(`metrics: { token: "${ref('SWITCHBOARD_METRICS_TOKEN')}" }`, ENV)
  assert.equal(config.metrics?.token, TOKEN)
  assert.deepEqual((redactConfig(config) as { metrics: unknown }).metrics, { token: REDACTED })
  const short = issues(`metrics: { token: "${ref('SHORT')}" }`, { SHORT: 'abc' })
  assert.equal(short.length, 1)
  assert.match(short[0] ?? '', /^metrics\.token: must be at least 16 characters.*SWITCHBOARD_METRICS_TOKEN/)
})

test('a metrics token written into the file is refused without being echoed; unknown keys too', () => {
  const literal = 'literal-metrics-token-in-the-file'
  const found = issues(`metrics: { token: "${literal}" }`)
  assert.deepEqual(found, [`metrics.token: must come from the environment, e.g. "${ref('SWITCHBOARD_METRICS_TOKEN')}": a secret never sits in the config file`])
  assert.ok(!found.join('\n').includes(literal))
  assert.match(issues('metrics: { public: false }').join('\n'), /^metrics: Unrecognized key/m)
})

test('a reload applies a changed metrics token at once', () => {
  const before = parseConfig(`metrics: { token: "${ref('SWITCHBOARD_METRICS_TOKEN')}" }`, ENV)
  const after = parseConfig(`metrics: { token: "${ref('OTHER')}" }`, ENV)
  const diff = diffConfig(before, after)
  assert.deepEqual([diff.applied, diff.restartRequired], [['metrics'], []])
  assert.equal(effectiveConfig(before, after).metrics?.token, ENV.OTHER)
  assert.deepEqual(diffConfig(before, parseConfig('{}', {})).applied, ['metrics'])
})
