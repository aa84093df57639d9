import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseConfig } from '../../../src/config/load-config.ts'
import { createLogger } from '../../../src/observability/logger.ts'
import { createMetrics } from '../../../src/observability/metrics.ts'
import { MemoryPinStore } from '../../../src/trust/pin-store.ts'
import { ToolPins } from '../../../src/trust/tool-pins.ts'
import { recordedDefinition } from '../../../src/trust/tool-definition.ts'
import { toolFingerprint } from '../../../src/trust/tool-fingerprint.ts'

// ToolPins fills in the definitions of records written before definitions were kept, and only
// what it can know: a pinned definition when the listed tool is that pin, a pending one when the
// listed tool is the pending one.

const INPUT = { type: 'object', properties: { text: { type: 'string' } } }
const OLD = { name: 'echo', description: 'Returns the text.', inputSchema: INPUT }
const NEW = { name: 'echo', description: 'Returns the text, and more.', inputSchema: INPUT }
const ADD = { name: 'add', description: 'Adds.', inputSchema: INPUT }

async function pinsOver (store: MemoryPinStore): Promise<ToolPins> {
  const config = parseConfig('upstreams: [{ name: web, transport: stdio, command: node }]\npinning: { mode: quarantine }\n', {}, 'test-config')
  const pins = new ToolPins(config.pinning, ['web'], { log: createLogger('silent'), metrics: createMetrics(), store })
  await pins.start(() => {})
  return pins
}

test('records without definitions get the listed definition where it is the pinned or the pending one, keeping when it was seen', async (t) => {
  const store = new MemoryPinStore()
  await store.save('web', 'add', { fingerprint: toolFingerprint(ADD), pinnedAt: 'then' })
  await store.save('web', 'echo', { fingerprint: toolFingerprint(OLD), pinnedAt: 'then', pending: { fingerprint: toolFingerprint(NEW), seenAt: 'earlier', description: 'x' } })
  const pins = await pinsOver(store)
  t.after(() => pins.close())

  const hidden = pins.review('web', [ADD, NEW])
  assert.deepEqual([...hidden.keys()], ['echo'], 'the old-format pending change still quarantines')
  const data = await pins.listing()
  assert.deepEqual(data.web?.add, { fingerprint: toolFingerprint(ADD), pinnedAt: 'then', definition: recordedDefinition(ADD) })
  assert.deepEqual(data.web?.echo, {
    fingerprint: toolFingerprint(OLD),
    pinnedAt: 'then',
    pending: { fingerprint: toolFingerprint(NEW), seenAt: 'earlier', description: 'x', definition: recordedDefinition(NEW) }
  }, 'the pinned definition of a changed tool cannot be known: left unrecorded')

  // The upstream goes back to the pin: now its definition is known too.
  pins.review('web', [ADD, OLD])
  const reverted = (await pins.listing()).web?.echo
  assert.deepEqual(reverted, { fingerprint: toolFingerprint(OLD), pinnedAt: 'then', definition: recordedDefinition(OLD) })
})
