import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolvePinFile } from '../../../src/config/pinning-schema.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { FilePinStore } from '../../../src/trust/pin-store.ts'

const A = 'a'.repeat(64)

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
