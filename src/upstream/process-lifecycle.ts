import type { Logger } from 'pino'
import { type ProcessSettings, type UpstreamDefaults, processSettings } from '../config/process-schema.ts'
import type { UpstreamConfig } from '../config/schema.ts'
import { isSwitchboardError } from '../errors.ts'
import type { ListingStore } from './listing-store.ts'
import { RunningCap } from './running-cap.ts'
import type { UpstreamLists } from './upstream-lists.ts'
import type { UpstreamConnection, UpstreamListener, UpstreamState } from './upstream-connection.ts'

/** Why a stdio upstream's process was started (switchboard_upstream_spawns_total). Starts with the gateway are not counted. */
export type SpawnReason = 'first_call' | 'restart' | 'crash' | 'limit'

export interface LifecycleDeps {
  defaults: () => UpstreamDefaults | undefined
  store: ListingStore
  log: Logger
  /** Something besides calls holds it: a resource subscription, a session's or principal's own connection. */
  held: (connection: UpstreamConnection) => boolean
  /** Processes of sessions' own connections: they count toward maxRunning too. */
  sessionProcesses: () => number
  onSpawn?: (upstream: string, reason: SpawnReason) => void
  /** Seconds from a start asked for by a call to the first answer. */
  onLazyStart?: (seconds: number) => void
  onProcesses?: (counts: Record<'running' | 'starting' | 'stopped', number>) => void
}

interface Tracked {
  settings: ProcessSettings
  lastUsed: number
  timer?: NodeJS.Timeout
  /** Started at the gateway's start only to learn its catalog: stopped once idle. */
  learning: boolean
  /** A call asked for its start: when (for the histogram), and it is not stopped to make room before that call ran. */
  demandedAt?: number
  /** It answered a call since the gateway started. */
  served: boolean
  /** Why its last connection ended, for the count of the restart that follows. */
  lost?: 'crash' | 'limit'
}

const BUSY_RECHECK_MS = 1_000

/**
 * The processes of stdio upstreams (their own, shared connections): lazy start from the listing
 * last seen, stop after idleStopMs, restart on the next call, and upstreamDefaults.maxRunning.
 */
export class ProcessLifecycle {
  private readonly tracked = new Map<UpstreamConnection, Tracked>()
  private readonly cap: RunningCap
  private readonly deps: LifecycleDeps

  constructor (deps: LifecycleDeps) {
    this.deps = deps
    this.cap = new RunningCap({
      connections: () => this.tracked.keys(),
      stoppable: (c) => this.stoppable(c),
      lastUsed: (c) => this.tracked.get(c)?.lastUsed ?? 0,
      others: () => deps.sessionProcesses()
    }, () => deps.defaults()?.maxRunning, (c) => { this.launch(c) })
  }

  settingsOf (config: UpstreamConfig): ProcessSettings {
    return processSettings(config, this.deps.defaults())
  }

  /** The listener of a stdio upstream's own connection: what it hears besides the gateway's. */
  listenerFor (base: UpstreamListener, self: () => UpstreamConnection): UpstreamListener {
    return {
      ...base,
      state: (upstream, state) => {
        base.state(upstream, state)
        this.stateChanged(self(), state)
      },
      lists: (upstream, lists) => {
        base.lists(upstream, lists)
        const tracked = this.tracked.get(self())
        if (lists === undefined || tracked?.settings.start !== 'lazy') return
        this.deps.store.save(upstream, lists).catch((err: unknown) => {
          this.deps.log.warn({ upstream, store: this.deps.store.where, err: describe(err) }, 'could not keep the listing of a lazy upstream; after a restart it is started once to list it')
        })
      },
      reconnect: (upstream) => {
        base.reconnect(upstream)
        const tracked = this.tracked.get(self())
        if (tracked !== undefined) this.deps.onSpawn?.(upstream, tracked.lost ?? 'crash')
      }
    }
  }

  /** Its first start: now (eager), or not before a call (lazy), listed meanwhile from the store. */
  begin (connection: UpstreamConnection, catalog: (lists: UpstreamLists) => void): void {
    const settings = this.settingsOf(connection.config)
    const tracked: Tracked = { settings, lastUsed: Date.now(), learning: false, served: false }
    this.tracked.set(connection, tracked)
    const capped = this.deps.defaults()?.maxRunning !== undefined
    if (settings.start === 'eager' && !capped) {
      connection.start()
      return
    }
    connection.rest()
    if (settings.start === 'eager') {
      this.cap.request(connection)
      return
    }
    this.deps.store.load(connection.name).catch((err: unknown) => {
      this.deps.log.warn({ upstream: connection.name, store: this.deps.store.where, err: describe(err) }, 'could not read the listing of a lazy upstream; starting it once to list it')
      return undefined
    }).then((lists) => {
      if (connection.ended || connection.state !== 'stopped' || this.cap.has(connection)) return
      if (lists !== undefined) {
        connection.rest(lists)
        catalog(lists)
        this.deps.log.info({ upstream: connection.name, tools: lists.tools.length }, 'lazy upstream listed from its last listing; started on its first call')
        return
      }
      tracked.learning = true
      this.deps.log.info({ upstream: connection.name }, 'lazy upstream never listed: starting it once to learn its catalog')
      this.cap.request(connection)
    }, () => {})
  }

  /** A request found it stopped. */
  demand (connection: UpstreamConnection): void {
    const tracked = this.tracked.get(connection)
    if (tracked === undefined || this.cap.has(connection)) return
    tracked.demandedAt ??= Date.now()
    this.cap.request(connection)
  }

  /** The cap lets it start. */
  private launch (connection: UpstreamConnection): void {
    const tracked = this.tracked.get(connection)
    if (tracked === undefined) return
    if (tracked.demandedAt !== undefined) this.deps.onSpawn?.(connection.name, tracked.served ? 'restart' : 'first_call')
    connection.start()
  }

  callEnded (connection: UpstreamConnection): void {
    const tracked = this.tracked.get(connection)
    if (tracked === undefined) return
    tracked.lastUsed = Date.now()
    tracked.served = true
    if (tracked.demandedAt !== undefined) {
      this.deps.onLazyStart?.((Date.now() - tracked.demandedAt) / 1000)
      tracked.demandedAt = undefined
    }
    tracked.timer?.refresh()
    this.cap.pump()
  }

  /** Its connection ended or failed to open; `cause`: why. */
  lost (connection: UpstreamConnection, cause: unknown): void {
    const tracked = this.tracked.get(connection)
    if (tracked !== undefined) tracked.lost = isSwitchboardError(cause) && cause.code === 'SB_ERR_UPSTREAM_LIMIT' ? 'limit' : 'crash'
  }

  private stateChanged (connection: UpstreamConnection, state: UpstreamState): void {
    const tracked = this.tracked.get(connection)
    if (tracked === undefined) return
    clearTimeout(tracked.timer)
    tracked.timer = undefined
    // However it was stopped (idle, or making room), its catalog is learned: the next start is for calls.
    if (state === 'stopped') tracked.learning = false
    if (state === 'ready') {
      tracked.lost = undefined
      tracked.lastUsed = Date.now()
      const idleMs = tracked.settings.idleStopMs ?? (tracked.learning ? 0 : undefined)
      if (idleMs !== undefined) {
        tracked.timer = setTimeout(() => { this.idle(connection, idleMs) }, idleMs)
        tracked.timer.unref()
      }
    }
    this.count()
    this.cap.pump()
  }

  private stoppable (connection: UpstreamConnection): boolean {
    const tracked = this.tracked.get(connection)
    return tracked !== undefined && connection.state === 'ready' && tracked.demandedAt === undefined && connection.activeCalls.size === 0 && !this.deps.held(connection)
  }

  private idle (connection: UpstreamConnection, idleMs: number): void {
    const tracked = this.tracked.get(connection)
    if (tracked === undefined || connection.state !== 'ready') return
    // Started for a call that never came (its request gave up): idle all the same.
    if (tracked.demandedAt !== undefined && !tracked.learning && connection.activeCalls.size === 0) tracked.demandedAt = undefined
    if (!this.stoppable(connection)) {
      tracked.timer = setTimeout(() => { this.idle(connection, idleMs) }, Math.max(idleMs, BUSY_RECHECK_MS))
      tracked.timer.unref()
      return
    }
    tracked.learning = false
    this.deps.log.info({ upstream: connection.name, idleMs }, 'upstream idle: stopping its process; the next call starts it again')
    this.cap.stop(connection)
  }

  private count (): void {
    const counts = { running: 0, starting: 0, stopped: 0 }
    for (const c of this.tracked.keys()) {
      if (c.state === 'ready') counts.running++
      else if (c.state === 'connecting') counts.starting++
      else if (c.state === 'stopped' || c.state === 'backoff') counts.stopped++
    }
    this.deps.onProcesses?.(counts)
  }

  /** How many of its stdio upstreams run now (connecting or ready). */
  get running (): number {
    return this.cap.own()
  }

  /** Of those, how many the cap may not stop to make room while sessions hold connections: held, or a session-isolated upstream's own. */
  get pinned (): number {
    let count = 0
    for (const c of this.tracked.keys()) if ((c.state === 'ready' || c.state === 'connecting') && (c.config.isolation !== 'shared' || this.deps.held(c))) count++
    return count
  }

  /** Whether some shared stdio upstream may need a process: sessions leave it a slot. */
  get keepsSlot (): boolean {
    for (const c of this.tracked.keys()) if (c.config.isolation === 'shared') return true
    return false
  }

  /** A session's process ended (or was never started): waiting starts may take its slot. */
  slotFreed (): void {
    this.cap.pump()
  }

  forget (connection: UpstreamConnection): void {
    const tracked = this.tracked.get(connection)
    clearTimeout(tracked?.timer)
    this.tracked.delete(connection)
    this.cap.forget(connection)
    this.count()
  }

  async close (): Promise<void> {
    for (const connection of [...this.tracked.keys()]) this.forget(connection)
    await this.deps.store.close().catch(() => {})
  }
}

function describe (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
