import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { pinningSchema, resolvePinFile } from '../../../src/config/pinning-schema.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { pendingPin, type PinRecord } from '../../../src/trust/pin-book.ts'
import { FilePinStore } from '../../../src/trust/pin-store.ts'
import { RedisPinStore } from '../../../src/trust/redis-pin-store.ts'
import { MAX_DEFINITION_BYTES, recordedDefinition } from '../../../src/trust/tool-definition.ts'
import { redisOrSkip, startRedisServer } from '../../helpers/redis-server.ts'

const A = 'a'.repeat(64)
const B = 'b'.repeat(64)
const INPUT = { type: 'object', properties: { text: { type: 'string' } } }
/** A pinned definition and a pending one (oversized: stored capped), as the gateway records them. */
const WITH_DEFINITIONS: PinRecord = {
  fingerprint: A,
  pinnedAt: 'then',
  definition: recordedDefinition({ name: 'echo', title: 'Echo', description: 'Returns the text.', inputSchema: INPUT, annotations: { readOnlyHint: true } }),
  pending: pendingPin(B, { name: 'echo', description: 'x'.repeat(MAX_DEFINITION_BYTES), inputSchema: INPUT }, new Date(0))
}
const OLD_FORMAT = { fingerprint: A, pinnedAt: 'then', pending: { fingerprint: B, seenAt: 'now', description: 'new' } }

async function tempDir (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-pin-store-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

describe('FilePinStore', () => {
  it('starts empty, then writes readable versioned JSON with no temporary file left behind', async (t) => {
    const dir = await tempDir(t)
    const store = new FilePinStore(join(dir, 'nested', 'pins.json'))
    t.after(() => store.close())
    assert.deepEqual(await store.load(), {})
    await store.save('web', 'echo', { fingerprint: A, pinnedAt: 'then' })
    const doc = JSON.parse(await readFile(join(dir, 'nested', 'pins.json'), 'utf8')) as unknown
    assert.deepEqual(doc, { version: 1, upstreams: { web: { echo: { fingerprint: A, pinnedAt: 'then' } } } })
    assert.deepEqual(await readdir(join(dir, 'nested')), ['pins.json'])
  })

  it('replaces one record and keeps the rest, including records another process wrote', async (t) => {
    const dir = await tempDir(t)
    const file = join(dir, 'pins.json')
    const store = new FilePinStore(file)
    t.after(() => store.close())
    await Promise.all([
      store.save('web', 'echo', { fingerprint: A, pinnedAt: '1' }),
      store.save('web', 'add', { fingerprint: A, pinnedAt: '2' })
    ])
    const doc = JSON.parse(await readFile(file, 'utf8')) as { upstreams: Record<string, Record<string, unknown>> }
    doc.upstreams.files = { read: { fingerprint: A, pinnedAt: '3' } }
    await writeFile(file, JSON.stringify(doc))
    await store.save('web', 'echo', { fingerprint: null, pinnedAt: null, pending: { fingerprint: A, seenAt: '4' } })
    const data = await store.load()
    assert.deepEqual(Object.keys(data).sort(), ['files', 'web'])
    assert.deepEqual(data.web?.add, { fingerprint: A, pinnedAt: '2' })
    assert.equal(data.web?.echo?.pending?.seenAt, '4')
  })

  it('round-trips the pinned and the pending definition, and loads records written without them', async (t) => {
    const dir = await tempDir(t)
    const file = join(dir, 'pins.json')
    const store = new FilePinStore(file)
    t.after(() => store.close())
    await store.save('web', 'echo', WITH_DEFINITIONS)
    assert.deepEqual((await store.load()).web?.echo, WITH_DEFINITIONS)
    assert.deepEqual(WITH_DEFINITIONS.pending?.definition, { truncated: true, bytes: MAX_DEFINITION_BYTES + 104 })
    assert.ok((await readFile(file, 'utf8')).length < 2000, 'the oversized definition is not in the file')
    await writeFile(file, JSON.stringify({ version: 1, upstreams: { web: { echo: OLD_FORMAT } } }))
    assert.deepEqual((await store.load()).web?.echo, OLD_FORMAT)
  })

  it('stores a tool named __proto__ as data', async (t) => {
    const dir = await tempDir(t)
    const store = new FilePinStore(join(dir, 'pins.json'))
    t.after(() => store.close())
    await store.save('web', '__proto__', { fingerprint: A, pinnedAt: 'x' })
    const data = await store.load()
    assert.ok(Object.hasOwn(data.web ?? {}, '__proto__'))
    assert.equal(Object.getPrototypeOf(data.web), Object.prototype)
  })

  it('refuses a file that is not a version 1 pin file with SB_ERR_PIN_STORE', async (t) => {
    const dir = await tempDir(t)
    const file = join(dir, 'pins.json')
    await writeFile(file, '{ not json')
    await assert.rejects(new FilePinStore(file).load(), err => isSwitchboardError(err, 'SB_ERR_PIN_STORE'))
    await writeFile(file, JSON.stringify({ version: 2, upstreams: {} }))
    await assert.rejects(new FilePinStore(file).load(), /unsupported version 2/)
  })
})

describe('resolvePinFile', () => {
  it('defaults to <config name>.pins.json next to the config and resolves relative paths against its directory', () => {
    assert.equal(resolvePinFile(undefined, '/etc/switchboard/gateway.yaml'), '/etc/switchboard/gateway.pins.json')
    assert.equal(resolvePinFile('state/pins.json', '/etc/switchboard/gateway.yaml'), '/etc/switchboard/state/pins.json')
    assert.equal(resolvePinFile('/var/lib/pins.json', '/etc/switchboard/gateway.yaml'), '/var/lib/pins.json')
  })
})

describe('RedisPinStore', () => {
  it('round-trips the pinned and the pending definition, and loads records written without them', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const store = new RedisPinStore(pinningSchema.parse({ store: 'redis', redisUrl: redis.url, keyPrefix: 'unit:pins' }))
    t.after(() => store.close())
    await store.save('web', 'echo', WITH_DEFINITIONS)
    assert.deepEqual((await store.load(['web'])).web?.echo, WITH_DEFINITIONS)
    const raw = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 })
    t.after(() => { raw.disconnect() })
    await raw.connect()
    await raw.hset('unit:pins:web', 'old', JSON.stringify(OLD_FORMAT))
    const data = await store.load(['web'])
    assert.deepEqual(data.web?.old, OLD_FORMAT)
  })
})
