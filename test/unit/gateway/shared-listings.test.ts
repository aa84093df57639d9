import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseConfig } from '../../../src/config/load-config.ts'
import { listingVersion, type RememberedListing } from '../../../src/credentials/create-identity.ts'
import { createSharedListings, type ListingBus, type ListingMessage, type ListingOutcome, NO_BUS, parseListingMessage, type SharedListings } from '../../../src/gateway/shared-listings.ts'
import { createLogger } from '../../../src/observability/logger.ts'
import { EMPTY_LISTS, type UpstreamLists } from '../../../src/upstream/upstream-lists.ts'

const exchange = { type: 'token_exchange', issuer: 'https://as.test', clientId: 'c', clientSecret: 's', resource: 'https://up.test/mcp' }
const CONFIG = parseConfig(JSON.stringify({
  upstreams: [
    { name: 'obo', transport: 'streamable-http', url: 'https://up.test/mcp', auth: exchange },
    { name: 'plain', transport: 'streamable-http', url: 'https://plain.test/mcp' }
  ]
}), {}, 'test-config')

const listsOf = (...tools: string[]): UpstreamLists => ({ ...EMPTY_LISTS, tools: tools.map(name => ({ name })) })

test('parseListingMessage takes an announcement with an upstream name and a digest version, and nothing else', () => {
  assert.deepEqual(parseListingMessage({ kind: 'listing', upstream: 'obo', version: listingVersion('{}'), lists: { tools: [] } }), { kind: 'listing', upstream: 'obo', version: listingVersion('{}') })
  const refused: unknown[] = [
    null,
    'listing',
    [],
    { kind: 'log', upstream: 'obo', version: 'v1' },
    { kind: 'listing', version: 'v1' },
    { kind: 'listing', upstream: 42, version: 'v1' },
    { kind: 'listing', upstream: '', version: 'v1' },
    { kind: 'listing', upstream: 'x'.repeat(257), version: 'v1' },
    { kind: 'listing', upstream: 'obo' },
    { kind: 'listing', upstream: 'obo', version: '' },
    { kind: 'listing', upstream: 'obo', version: 'a b' },
    { kind: 'listing', upstream: 'obo', version: 'v'.repeat(65) },
    { kind: 'listing', upstream: 'obo', version: { v: 1 } }
  ]
  for (const message of refused) assert.equal(parseListingMessage(message), undefined, JSON.stringify(message))
})

test('listingVersion is the same for the same text and differs for another', () => {
  assert.equal(listingVersion('{"tools":[]}'), listingVersion('{"tools":[]}'))
  assert.notEqual(listingVersion('{"tools":[]}'), listingVersion('{"tools":[{"name":"a"}]}'))
  assert.match(listingVersion('x'), /^[\w-]{22}$/)
})

/** The vault's records as several replicas share them (one Map); `gate` holds reads until opened. */
function sharedStore (shared = true): { records: Map<string, string>, store: Parameters<typeof createSharedListings>[0]['store'], hold: () => () => void } {
  const records = new Map<string, string>()
  let gate: Promise<void> | undefined
  return {
    records,
    hold: () => {
      let open = (): void => {}
      gate = new Promise<void>(resolve => { open = resolve })
      return () => { gate = undefined; open() }
    },
    store: {
      listingsShared: shared,
      rememberListing: async (upstream, lists) => {
        const text = JSON.stringify(lists)
        records.set(upstream, text)
        return listingVersion(text)
      },
      rememberedListing: async (upstream): Promise<RememberedListing | undefined> => {
        await gate
        const text = records.get(upstream)
        return text === undefined ? undefined : { lists: JSON.parse(text) as UpstreamLists, version: listingVersion(text) }
      },
      rememberedListings: async () => []
    }
  }
}

/** Pub/sub between in-process replicas: every other one hears a message, the sender does not. */
function busBetween (count: number): { buses: ListingBus[], sent: ListingMessage[], inject: (message: unknown) => void } {
  const listeners: Array<Array<(message: unknown) => void>> = Array.from({ length: count }, () => [])
  const sent: ListingMessage[] = []
  const buses = listeners.map((own): ListingBus => ({
    shared: true,
    publish: (message) => {
      sent.push(message)
      queueMicrotask(() => { for (const other of listeners) if (other !== own) for (const l of other) l(JSON.parse(JSON.stringify(message))) })
    },
    onMessage: (listener) => { own.push(listener) }
  }))
  return { buses, sent, inject: (message) => { for (const own of listeners) for (const l of own) l(message) } }
}

interface Replica { listings: SharedListings, applied: Array<{ upstream: string, tools: string[] }>, outcomes: ListingOutcome[], logs: Array<Record<string, unknown>> }

function replica (bus: ListingBus, store: Parameters<typeof createSharedListings>[0]['store']): Replica {
  const applied: Replica['applied'] = []
  const outcomes: ListingOutcome[] = []
  const logs: Array<Record<string, unknown>> = []
  const log = createLogger('debug', { write (line: string) { logs.push(JSON.parse(line) as Record<string, unknown>) } })
  const listings = createSharedListings({
    bus,
    store,
    config: () => CONFIG,
    has: upstream => applied.some(a => a.upstream === upstream),
    apply: (upstream, lists) => { applied.push({ upstream, tools: lists.tools.map(t => t.name) }) },
    log,
    onMessage: (outcome) => { outcomes.push(outcome) }
  })
  return { listings, applied, outcomes, logs }
}

const settle = async (): Promise<void> => { for (let i = 0; i < 20; i++) await new Promise(resolve => setImmediate(resolve)) }

test('a listing learned on one replica is kept, announced once, and applied by the other; the same listing again is not announced', async () => {
  const { store } = sharedStore()
  const { buses, sent } = busBetween(2)
  const a = replica(buses[0] ?? NO_BUS, store)
  const b = replica(buses[1] ?? NO_BUS, store)
  a.listings.learned('obo', listsOf('whoami'))
  await settle()
  assert.deepEqual(b.applied, [{ upstream: 'obo', tools: ['whoami'] }])
  assert.deepEqual(a.outcomes, ['published'])
  assert.deepEqual(b.outcomes, ['delivered'])
  assert.deepEqual(a.applied, [], 'the sender applies nothing: its catalog has the lists already')
  a.listings.learned('obo', listsOf('whoami'))
  await settle()
  assert.equal(sent.length, 1, 'an unchanged listing is not announced again')
  // B's own user lists the same: B holds that version, nothing is announced.
  b.listings.learned('obo', listsOf('whoami'))
  await settle()
  assert.equal(sent.length, 1)
  b.listings.learned('obo', listsOf('whoami', 'shout'))
  await settle()
  assert.deepEqual(a.applied, [{ upstream: 'obo', tools: ['whoami', 'shout'] }])
  assert.equal(sent.length, 2)
})

test('announcements for an upstream not configured here, or one with its own listing, are ignored; malformed ones are logged once', async () => {
  const { store, records } = sharedStore()
  const { buses, inject } = busBetween(1)
  const b = replica(buses[0] ?? NO_BUS, store)
  records.set('drifted', JSON.stringify(listsOf('x')))
  records.set('plain', JSON.stringify(listsOf('x')))
  inject({ kind: 'listing', upstream: 'drifted', version: 'v1' })
  inject({ kind: 'listing', upstream: 'plain', version: 'v1' })
  inject({ kind: 'listing', upstream: 42, version: 'v1' })
  inject({ kind: 'listing', upstream: 'obo', version: 'no spaces allowed' })
  await settle()
  assert.deepEqual(b.applied, [])
  assert.deepEqual(b.outcomes, ['ignored', 'ignored', 'ignored', 'ignored'])
  assert.equal(b.logs.filter(l => String(l.msg).startsWith('malformed listing announcement')).length, 1)
  assert.ok(b.logs.filter(l => l.level === 20).length >= 2, 'each ignored announcement is logged at debug')
})

test('a listing a user here taught while an announced one was being read wins here, and is announced even if held before', async () => {
  const { store, hold } = sharedStore()
  const { buses } = busBetween(2)
  const a = replica(buses[0] ?? NO_BUS, store)
  const b = replica(buses[1] ?? NO_BUS, store)
  b.listings.learned('obo', listsOf('one'))
  await settle()
  assert.deepEqual(a.applied, [{ upstream: 'obo', tools: ['one'] }])
  const open = hold()
  a.listings.learned('obo', listsOf('two'))
  await settle()
  // B is reading A's "two" when B's own user lists "one" again (the vault gets it after the read).
  b.listings.learned('obo', listsOf('one'))
  open()
  await settle()
  assert.deepEqual(b.applied, [], 'B keeps what its own user listed, the later listing')
  assert.deepEqual(a.applied.map(x => x.tools), [['one'], ['one']], 'and announces it, so A holds it too')
})

test('without a shared bus, or with a vault other replicas cannot read, listings are kept and nothing is announced', async () => {
  const local = sharedStore()
  const alone = replica(NO_BUS, local.store)
  alone.listings.learned('obo', listsOf('whoami'))
  await settle()
  assert.ok(local.records.has('obo'))
  assert.deepEqual(alone.outcomes, [])
  const unshared = sharedStore(false)
  const { buses, sent } = busBetween(2)
  const a = replica(buses[0] ?? NO_BUS, unshared.store)
  replica(buses[1] ?? NO_BUS, unshared.store)
  a.listings.learned('obo', listsOf('whoami'))
  await settle()
  assert.equal(sent.length, 0)
  assert.ok(a.logs.some(l => String(l.msg).includes('do not cross replicas')))
})

test('an announcement of the version held is read again when the catalog no longer has the upstream (a reload took it out and put it back)', async () => {
  const { store } = sharedStore()
  const { buses, sent, inject } = busBetween(2)
  const a = replica(buses[0] ?? NO_BUS, store)
  const b = replica(buses[1] ?? NO_BUS, store)
  a.listings.learned('obo', listsOf('whoami'))
  await settle()
  assert.equal(b.applied.length, 1)
  inject(sent[0])
  await settle()
  assert.equal(b.applied.length, 1, 'held: not read again')
  b.applied.length = 0
  inject(sent[0])
  await settle()
  assert.deepEqual(b.applied, [{ upstream: 'obo', tools: ['whoami'] }])
})
