import type { Logger } from 'pino'
import type { PinningConfig } from '../config/pinning-schema.ts'
import type { Metrics } from '../observability/metrics.ts'
import { shortFingerprint, toolFingerprint } from './tool-fingerprint.ts'
import { copyPins, decidePin, getOwn, pendingPin, pinsSummary, setOwn, type PendingPin, type PinData, type PinDecision, type PinRecord } from './pin-book.ts'
import { recordedDefinition, type StoredDefinition } from './tool-definition.ts'
import { createPinStore, type PinStore } from './pin-store.ts'
import type { RedisBlock } from '../net/redis-client.ts'
import type { CatalogName, ToolScanner } from '../guardrails/scanning/tool-scanner.ts'
import type { HeldBy } from '../catalog/catalog.ts'
import type { Finding } from '../guardrails/scanning/finding.ts'
import { approvePins, type PinSelection, type ApproveOutcome } from './pin-approval.ts'

export interface ToolPinsDeps {
  log: Logger
  metrics: Pick<Metrics, 'toolQuarantined' | 'toolDefinitionChanges'>
  /** Defaults to the config's store. */
  store?: PinStore
  /** The shared `redis` block, for a Redis pin store that names no redisUrl of its own. */
  redis?: RedisBlock | undefined
  now?: () => Date
  /**
   * The definition scan. In scanning.mode quarantine a tool with findings is held here like a
   * changed pinned tool, whatever pinning.mode says (off included), until approved.
   */
  scanner?: ToolScanner
}

const NOTHING_HELD: ReadonlyMap<string, HeldBy> = new Map()

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
  private readonly scanner: ToolScanner | undefined
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
    this.store = deps.store ?? createPinStore(config, deps.redis)
    this.log = deps.log
    this.metrics = deps.metrics
    this.now = deps.now ?? (() => new Date())
    this.scanner = deps.scanner
    for (const upstream of upstreams) {
      this.metrics.toolQuarantined.set({ upstream }, 0)
      this.metrics.toolDefinitionChanges.inc({ upstream }, 0)
    }
  }

  /** For the admin API: the file, the Redis key prefix, or "memory". */
  get where (): string { return this.store.where }

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

  /**
   * The tools of this list to hide from the catalog: changed or held ones (pinning.mode
   * quarantine) and ones with unapproved scan findings (scanning.mode quarantine). `catalog`: the
   * tools of the catalog, which the scan's shadowing rule reads.
   */
  review (upstream: string, tools: ReadonlyArray<Readonly<Record<string, unknown>>>, catalog: Iterable<CatalogName> = []): ReadonlyMap<string, HeldBy> {
    if (!this.loaded || this.closed) return NOTHING_HELD
    const records = getOwn(this.book, upstream) ?? {}
    // Trust on first use: every tool of an upstream without pins is pinned as it is now (a record
    // the scan alone wrote is no pin).
    const known = Object.values(records).some(r => r.pending?.heldBy !== 'scan' || r.fingerprint !== null)
    const now = this.now()
    const found = this.scanner?.scan(upstream, tools, catalog, toolFingerprint)
    const holdFindings = this.scanner?.mode === 'quarantine'
    const hidden = new Map<string, HeldBy>()
    let held = 0
    for (const tool of tools) {
      const name = tool.name
      if (typeof name !== 'string') continue
      const fingerprint = toolFingerprint(tool)
      const record = getOwn(records, name)
      const findings = found?.get(name)
      const scanOnly = record?.pending?.heldBy === 'scan'
      // A tool the scan held at first sight, now without findings (a reload allowed its host), is seen for the first time.
      const decision: PinDecision = this.mode === 'off' ? 'pinned' : scanOnly && record?.fingerprint === null ? 'pin' : decidePin(record, fingerprint, known, this.config.newTools)
      if (holdFindings && findings !== undefined && record?.scanApproved !== fingerprint) {
        this.holdForScan(upstream, records, tool, fingerprint, findings, decision, now)
        held++
        hidden.set(name, 'scan')
        continue
      }
      if (decision === 'pinned') {
        // Pinning off, or the pin matches: a scan hold no longer needed is settled.
        const pin = record?.fingerprint ?? fingerprint
        if (scanOnly) this.put(upstream, records, name, { fingerprint: pin, pinnedAt: record?.pinnedAt ?? now.toISOString(), ...keptDefinition(record, pin, fingerprint, tool), ...approvedScan(record) })
        // A pin recorded before definitions were kept gets its definition now that it is listed again.
        else if (record !== undefined && record.fingerprint === fingerprint && record.definition === undefined) this.put(upstream, records, name, { ...record, definition: recordedDefinition(tool) })
        continue
      }
      if (decision === 'pin' || decision === 'reverted') {
        this.put(upstream, records, name, { fingerprint, pinnedAt: record?.pinnedAt ?? now.toISOString(), definition: recordedDefinition(tool), ...approvedScan(record) })
        continue
      }
      if (record?.pending?.fingerprint !== fingerprint || scanOnly) {
        this.put(upstream, records, name, { ...pinOf(record, fingerprint, tool), pending: pendingPin(fingerprint, tool, now, findings) })
      } else if (record.pending.definition === undefined) {
        this.put(upstream, records, name, withPendingDefinition(record, record.pending, tool))
      }
      held++
      this.report(upstream, name, decision, record?.fingerprint ?? null, fingerprint)
      if (this.mode === 'quarantine') hidden.set(name, 'pinning')
    }
    this.metrics.toolQuarantined.set({ upstream }, held)
    return hidden
  }

  /** The stored pins of the configured upstreams (the admin API's listing), read from the store. */
  async listing (): Promise<PinData> {
    return await this.store.load(this.upstreams)
  }

  /** Approves pending definitions (the admin API), then reads the pins again so the catalog serves them at once. */
  async approve (selection: PinSelection): Promise<ApproveOutcome> {
    const outcome = await approvePins(this.store, await this.store.load(this.upstreams), selection, this.now())
    await this.reload()
    return outcome
  }

  /**
   * A definition with findings the operator has not approved: pending until `pins approve`. The
   * record keeps its pin (the last approved definition, if any); `decision` is what pinning alone
   * would do, so a hold that is pinning's too stays pinning's once the findings go.
   */
  private holdForScan (upstream: string, records: Record<string, PinRecord>, tool: Readonly<Record<string, unknown>>, fingerprint: string, findings: readonly Finding[], decision: PinDecision, now: Date): void {
    const name = tool.name as string
    const record = getOwn(records, name)
    const scanOnly = decision === 'pinned' || decision === 'pin' || decision === 'reverted'
    if (record?.pending?.fingerprint !== fingerprint || record.pending.findings === undefined || (record.pending.heldBy === 'scan') !== scanOnly) {
      const pending = pendingPin(fingerprint, tool, now, findings, scanOnly ? 'scan' : undefined)
      this.put(upstream, records, name, { ...pinOf(record, fingerprint, tool), pending })
    } else if (record.pending.definition === undefined) {
      this.put(upstream, records, name, withPendingDefinition(record, record.pending, tool))
    }
    if (decision === 'changed' || decision === 'held') this.report(upstream, name, decision, record?.fingerprint ?? null, fingerprint)
    const key = `scan\0${upstream}\0${name}\0${fingerprint}`
    if (this.reported.has(key)) return
    this.reported.add(key)
    this.log.warn({ upstream, tool: name, findings: findings.length, rules: [...new Set(findings.map(f => f.rule))], approve: `switchboard pins approve --config <file> --upstream ${upstream} --tool ${name}` }, 'tool quarantined by the definition scan (scanning.mode: quarantine) until approved')
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
    const merged: PinData = copyPins(this.book)
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
    if (pinsSummary(merged) === pinsSummary(this.book)) return
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

/** The pin part of a record that gets a new pending definition: the pin, its definition and its scan approval carried on. */
function pinOf (record: PinRecord | undefined, fingerprint: string, tool: Readonly<Record<string, unknown>>): PinRecord {
  const pin = record?.fingerprint ?? null
  return { fingerprint: pin, pinnedAt: record?.pinnedAt ?? null, ...keptDefinition(record, pin, fingerprint, tool), ...approvedScan(record) }
}

/**
 * The definition of the pin `pin`: the recorded one, or, when the record has none (written before
 * definitions were kept) and the listed tool is that pin, the listed one.
 */
function keptDefinition (record: PinRecord | undefined, pin: string | null, fingerprint: string, tool: Readonly<Record<string, unknown>>): { definition?: StoredDefinition } {
  if (record?.definition !== undefined) return { definition: record.definition }
  return pin !== null && pin === fingerprint ? { definition: recordedDefinition(tool) } : {}
}

/** A pending definition recorded before definitions were kept, given the listed one (its fingerprint matched) and nothing else changed. */
function withPendingDefinition (record: PinRecord, pending: PendingPin, tool: Readonly<Record<string, unknown>>): PinRecord {
  return { ...record, pending: { ...pending, definition: recordedDefinition(tool) } }
}

/** The scan approval a record carries on, if any. */
function approvedScan (record: PinRecord | undefined): { scanApproved?: string } {
  return record?.scanApproved === undefined ? {} : { scanApproved: record.scanApproved }
}
