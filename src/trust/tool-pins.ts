import type { Logger } from 'pino'
import type { PinningConfig } from '../config/pinning-schema.ts'
import type { Metrics } from '../observability/metrics.ts'
import { canonicalJson, shortFingerprint, toolFingerprint } from './tool-fingerprint.ts'
import { decidePin, getOwn, pendingPin, setOwn, type PinData, type PinRecord } from './pin-book.ts'
import { createPinStore, type PinStore } from './pin-store.ts'

export interface ToolPinsDeps {
  log: Logger
  metrics: Pick<Metrics, 'toolQuarantined' | 'toolDefinitionChanges'>
  /** Defaults to the config's store. */
  store?: PinStore
  now?: () => Date
}

const NOTHING_HELD: ReadonlySet<string> = new Set()

/**
 * The running side of tool pinning: reviews each upstream's tool list against the pins as it
 * enters the catalog, takes pins on first sight, records changed definitions as pending, logs and
 * counts them, and tells the catalog which tools to hide (quarantine mode). Reloads the pins when
 * the store changes (an approval) and calls `onReload` so the catalog reviews its lists again.
 *
 * Store failures never stop the gateway: the pins held in memory keep deciding, one warning is
 * logged per outage, and until the pins were read once nothing is decided (every tool is served).
 */
export class ToolPins {
  readonly mode: PinningConfig['mode']
  private readonly config: PinningConfig
  private upstreams: readonly string[]
  private readonly store: PinStore
  private readonly log: Logger
  private readonly metrics: ToolPinsDeps['metrics']
  private readonly now: () => Date
  private readonly reported = new Set<string>()
  private book: PinData = {}
  private loaded = false
  private saving = 0
  private failing = false
  private closed = false
  private reloading: Promise<void> | undefined
  private onReload: (() => void) | undefined

  constructor (config: PinningConfig, upstreams: readonly string[], deps: ToolPinsDeps) {
    this.config = config
    this.mode = config.mode
    this.upstreams = upstreams
    this.store = deps.store ?? createPinStore(config)
    this.log = deps.log
    this.metrics = deps.metrics
    this.now = deps.now ?? (() => new Date())
    for (const upstream of upstreams) {
      this.metrics.toolQuarantined.set({ upstream }, 0)
      this.metrics.toolDefinitionChanges.inc({ upstream }, 0)
    }
  }

  /** A reload changed the upstreams: the pins of the current ones are read from now on. */
  setUpstreams (upstreams: readonly string[]): void {
    for (const upstream of upstreams) {
      if (this.upstreams.includes(upstream)) continue
      this.metrics.toolQuarantined.set({ upstream }, 0)
      this.metrics.toolDefinitionChanges.inc({ upstream }, 0)
    }
    this.upstreams = upstreams
  }

  /** Reads the pins (bounded by the store's timeouts) and starts watching for approvals. Never rejects. */
  async start (onReload: () => void): Promise<void> {
    this.onReload = onReload
    await this.reload()
    if (!this.closed) this.store.watch(() => { void this.reload() }, this.config.reloadIntervalMs)
  }

  /** The tools of this list to hide from the catalog: held or changed ones, in quarantine mode only. */
  review (upstream: string, tools: ReadonlyArray<Readonly<Record<string, unknown>>>): ReadonlySet<string> {
    if (!this.loaded || this.closed) return NOTHING_HELD
    const records = getOwn(this.book, upstream) ?? {}
    // Trust on first use: every tool of an upstream without pins is pinned as it is now.
    const known = Object.keys(records).length > 0
    const now = this.now()
    const hidden = new Set<string>()
    let held = 0
    for (const tool of tools) {
      const name = tool.name
      if (typeof name !== 'string') continue
      const fingerprint = toolFingerprint(tool)
      const record = getOwn(records, name)
      const decision = decidePin(record, fingerprint, known, this.config.newTools)
      if (decision === 'pinned') continue
      if (decision === 'pin' || decision === 'reverted') {
        this.put(upstream, records, name, { fingerprint, pinnedAt: record?.pinnedAt ?? now.toISOString() })
        continue
      }
      if (record?.pending?.fingerprint !== fingerprint) {
        this.put(upstream, records, name, { fingerprint: record?.fingerprint ?? null, pinnedAt: record?.pinnedAt ?? null, pending: pendingPin(fingerprint, tool.description, now) })
      }
      held++
      this.report(upstream, name, decision, record?.fingerprint ?? null, fingerprint)
      if (this.mode === 'quarantine') hidden.add(name)
    }
    this.metrics.toolQuarantined.set({ upstream }, held)
    return hidden
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.reloading
    await this.store.close()
  }

  private put (upstream: string, records: Record<string, PinRecord>, tool: string, record: PinRecord): void {
    setOwn(records, tool, record)
    if (getOwn(this.book, upstream) !== records) setOwn(this.book, upstream, records)
    this.save(upstream, tool, record)
  }

  private save (upstream: string, tool: string, record: PinRecord): void {
    this.saving++
    this.store.save(upstream, tool, record).then(() => { this.storeRecovered() }, (err: unknown) => { this.storeFailed(err) })
      .finally(() => { this.saving-- })
  }

  private report (upstream: string, tool: string, decision: 'changed' | 'held', pinned: string | null, seen: string): void {
    const key = `${upstream}\0${tool}\0${seen}`
    if (this.reported.has(key)) return
    this.reported.add(key)
    this.metrics.toolDefinitionChanges.inc({ upstream })
    const what = decision === 'changed' ? 'upstream changed a pinned tool definition' : 'new tool held until approved (pinning.newTools: hold)'
    const effect = this.mode === 'quarantine' ? 'quarantined' : 'still served (pinning.mode: warn)'
    this.log.warn({ upstream, tool, pinned: shortFingerprint(pinned), seen: shortFingerprint(seen), mode: this.mode, approve: `switchboard pins approve --config <file> --upstream ${upstream} --tool ${tool}` }, `${what}; ${effect}`)
  }

  private async reload (): Promise<void> {
    if (this.closed) return
    if (this.reloading !== undefined) return await this.reloading
    this.reloading = this.readStore().finally(() => { this.reloading = undefined })
    return await this.reloading
  }

  private async readStore (): Promise<void> {
    let data: PinData
    try {
      data = await this.store.load(this.upstreams)
    } catch (err: unknown) {
      this.storeFailed(err)
      return
    }
    this.storeRecovered()
    if (this.closed) return
    if (!this.loaded) {
      this.loaded = true
      this.book = data
      this.onReload?.()
      return
    }
    // A store read while our own writes are under way shows half of them; the next look sees the rest.
    if (this.saving > 0) return
    // The store wins for every record it holds (an approval, another replica's pin); records only we
    // hold (taken while it was down, or not yet written by a replica) are kept and written again.
    const merged: PinData = structuredClone(this.book)
    const missing: Array<[string, string, PinRecord]> = []
    for (const [upstream, records] of Object.entries(merged)) {
      for (const [tool, record] of Object.entries(records)) {
        if (getOwn(getOwn(data, upstream), tool) === undefined) missing.push([upstream, tool, record])
      }
    }
    for (const [upstream, records] of Object.entries(data)) {
      const target = getOwn(merged, upstream) ?? {}
      for (const [tool, record] of Object.entries(records)) setOwn(target, tool, record)
      setOwn(merged, upstream, target)
    }
    for (const [upstream, tool, record] of missing) this.save(upstream, tool, record)
    // Our own writes come back here too: only a real difference counts.
    if (canonicalJson(merged) === canonicalJson(this.book)) return
    this.book = merged
    this.onReload?.()
  }

  private storeFailed (err: unknown): void {
    if (this.failing || this.closed) return
    this.failing = true
    this.log.warn({ store: this.store.where, err }, this.loaded
      ? 'pin store unavailable; deciding from the pins held in memory until it is back'
      : 'pin store unavailable before the pins were read; serving every tool unchecked until it is back')
  }

  private storeRecovered (): void {
    if (!this.failing) return
    this.failing = false
    this.log.info({ store: this.store.where }, 'pin store available again')
  }
}
