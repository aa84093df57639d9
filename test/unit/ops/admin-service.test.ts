import { it } from 'node:test'
import assert from 'node:assert/strict'
import { parseConfig } from '../../../src/config/load-config.ts'
import { createAdminService } from '../../../src/ops/admin-service.ts'
import type { ReloadResult } from '../../../src/ops/reload-result.ts'
import type { UpstreamStatus } from '../../../src/upstream/upstream-pool.ts'

it('the admin service reads the pool and the sessions as they are now, reloads with trigger "admin" and reconnects by name', async () => {
  const config = parseConfig('upstreams: []', {})
  const status: UpstreamStatus[] = [{ name: 'fs', transport: 'stdio', isolation: 'shared', state: 'ready', circuit: 'closed', sessionConnections: 0, principalConnections: 0, tools: 2, inFlight: 0, reconnects: 0, protocolVersion: '2025-11-25', stateSince: 1, pid: 4242 }]
  const triggers: string[] = []
  const reconnects: string[] = []
  const result: ReloadResult = { outcome: 'invalid', errors: [] }
  let total = 0
  const service = createAdminService({
    config: () => config,
    pool: { status: () => status, reconnect: (name) => { reconnects.push(name); return name === 'fs' } },
    sessions: { counts: () => ({ total, byTransport: {}, byPrincipal: {} }) },
    reload: async (trigger) => { triggers.push(trigger); return result }
  })
  assert.equal(service.config(), config)
  assert.deepEqual(service.upstreams(), status)
  assert.equal(service.sessions().total, 0)
  total = 2
  assert.equal(service.sessions().total, 2)
  assert.equal(await service.reload(), result)
  assert.deepEqual(triggers, ['admin'])
  assert.equal(service.reconnect('fs'), true)
  assert.equal(service.reconnect('nope'), false)
  assert.deepEqual(reconnects, ['fs', 'nope'])
})
