import { test } from 'node:test'
import assert from 'node:assert/strict'
import { configIssues } from '../../helpers/config-issues.ts'
import { diffConfig } from '../../../src/config/config-diff.ts'
import { parseConfig } from '../../../src/config/load-config.ts'

test('limits has its defaults without a limits block, and a partial block keeps the others', () => {
  assert.deepEqual(parseConfig('{}', {}).limits, { sessionsPerPrincipal: 100, streamsPerSession: 8, listenStreamsPerPrincipal: 16, inFlightPerPrincipal: 64, sessionConnectionsPerPrincipal: 4 })
  assert.deepEqual(parseConfig('limits: { inFlightPerPrincipal: 8 }', {}).limits, { sessionsPerPrincipal: 100, streamsPerSession: 8, listenStreamsPerPrincipal: 16, inFlightPerPrincipal: 8, sessionConnectionsPerPrincipal: 4 })
})

test('each cap is a positive integer, and an unknown key is refused', () => {
  const found = configIssues('limits: { sessionsPerPrincipal: 0, streamsPerSession: 1.5, perTool: 3 }', {}).join('\n')
  assert.match(found, /limits\.sessionsPerPrincipal/)
  assert.match(found, /limits\.streamsPerSession/)
  assert.match(found, /perTool/)
})

test('a reload applies new caps live', () => {
  assert.deepEqual(diffConfig(parseConfig('{}', {}), parseConfig('limits: { sessionsPerPrincipal: 5 }', {})).applied, ['limits'])
})
