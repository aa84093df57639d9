import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { limitMechanisms, spawnLimits } from '../../../src/upstream/process-limits.ts'

test('CPU time, open files and processes are rlimits set by prlimit before the server is exec\'d; its arguments are kept as they are', (t) => {
  if (!existsSync('/usr/bin/prlimit')) { t.skip('no /usr/bin/prlimit'); return }
  const limits = spawnLimits('cpu', { cpuSeconds: 5, openFiles: 64, processes: 32 })
  assert.deepEqual(limits.applied, { cpuSeconds: 'rlimit-cpu', openFiles: 'rlimit-nofile', processes: 'rlimit-nproc' })
  assert.deepEqual(limits.wrap('node', ['server.js', '--flag', 'a b']), { command: '/usr/bin/prlimit', args: ['--cpu=5:6', '--nofile=64', '--nproc=32', '--', 'node', 'server.js', '--flag', 'a b'] })
  assert.equal(limits.exitError(null, 'SIGXCPU')?.code, 'SB_ERR_UPSTREAM_LIMIT')
  assert.equal(limits.exitError(0, null), undefined, 'an ordinary exit is not a limit')
  assert.equal(limits.exitError(null, 'SIGTERM'), undefined)
})

test('memory goes to a cgroup where the host allows one (the server joins it before exec), else RLIMIT_DATA, never RLIMIT_AS', () => {
  const found = limitMechanisms()
  const limits = spawnLimits('mem', { memoryMb: 64 })
  const wrapped = limits.wrap('node', ['server.js'])
  assert.equal(limits.applied.memoryMb, found.memory === 'none' ? 'not applied (no cgroup and no prlimit)' : found.memory)
  assert.ok(!wrapped.args.some(a => a.startsWith('--as')), 'RLIMIT_AS breaks V8')
  if (found.memory === 'cgroup1' || found.memory === 'cgroup2') {
    assert.equal(wrapped.command, '/bin/sh')
    assert.match(wrapped.args[2] ?? '', /\/switchboard\/mem-\d+-\d+\/cgroup\.procs$/)
    assert.deepEqual(wrapped.args.slice(3), ['node', 'server.js'])
  } else if (found.memory === 'rlimit-data') {
    assert.deepEqual(wrapped.args.slice(0, 2), [`--data=${64 * 1024 * 1024}`, '--'])
  }
  limits.release()
})
