import type { UpstreamConnection } from './upstream-connection.ts'

/** What the cap needs to know of the stdio upstreams it counts. */
export interface CapView {
  /** Every stdio upstream's own connection it manages. */
  connections: () => Iterable<UpstreamConnection>
  /** May be stopped to make room: running, no call in flight, no subscription, no session's own connection, not just started for a call. */
  stoppable: (connection: UpstreamConnection) => boolean
  /** When it last ended a call (or started), for the least recently used. */
  lastUsed: (connection: UpstreamConnection) => number
  /** Processes it does not start or stop that take slots all the same: sessions' own (session-slots.ts). */
  others: () => number
}

/**
 * upstreamDefaults.maxRunning: starts wait here in order. A start goes ahead while fewer than the
 * cap run (connecting or ready); otherwise the least recently used stoppable one is stopped to
 * make room, and with none stoppable the start waits until a call ends or a process stops.
 */
export class RunningCap {
  private readonly queue: UpstreamConnection[] = []
  /** Asked to stop, and not gone yet: they still count as running, so the cap holds for processes, not states. */
  private readonly stopping = new Set<UpstreamConnection>()
  private pumping = false

  constructor (private readonly view: CapView, private readonly cap: () => number | undefined, private readonly launch: (connection: UpstreamConnection) => void) {}

  /** Asks for a start; a second ask for one already waiting changes nothing. */
  request (connection: UpstreamConnection): void {
    if (!this.queue.includes(connection)) this.queue.push(connection)
    this.pump()
  }

  has (connection: UpstreamConnection): boolean {
    return this.queue.includes(connection)
  }

  forget (connection: UpstreamConnection): void {
    const at = this.queue.indexOf(connection)
    if (at >= 0) this.queue.splice(at, 1)
  }

  /** Something changed (a call ended, a process stopped): waiting starts may go ahead. */
  pump (): void {
    if (this.pumping) return
    this.pumping = true
    // After the current turn: a connection that just became ready gets its waiting calls sent first.
    setImmediate(() => {
      this.pumping = false
      this.drain()
    })
  }

  private drain (): void {
    while (this.queue.length > 0) {
      const next = this.queue[0]
      if (next === undefined) return
      if (next.ended || next.state !== 'stopped') {
        this.queue.shift()
        continue
      }
      const cap = this.cap()
      if (cap === undefined || this.running() < cap) {
        this.queue.shift()
        this.launch(next)
        continue
      }
      // Room is being made: the start goes ahead once that process is gone.
      if (this.stopping.size > 0) return
      const victim = this.leastRecentlyUsed()
      if (victim === undefined) {
        next.lastError = `waiting to start: upstreamDefaults.maxRunning (${cap}) stdio processes are running, none of them an idle upstream's`
        return
      }
      this.stop(victim)
      return
    }
  }

  /** Stops one in order; it counts as running until its process group is gone. */
  stop (connection: UpstreamConnection): void {
    if (this.stopping.has(connection)) return
    this.stopping.add(connection)
    void connection.stop().finally(() => {
      this.stopping.delete(connection)
      this.pump()
    })
  }

  running (): number {
    return this.own() + this.view.others()
  }

  /** The processes of the connections it manages: running, starting, or not gone yet. */
  own (): number {
    let count = this.stopping.size
    for (const c of this.view.connections()) if (c.state === 'ready' || c.state === 'connecting') count++
    return count
  }

  private leastRecentlyUsed (): UpstreamConnection | undefined {
    let found: UpstreamConnection | undefined
    let since = Infinity
    for (const c of this.view.connections()) {
      if (!this.view.stoppable(c)) continue
      const used = this.view.lastUsed(c)
      if (used < since) { found = c; since = used }
    }
    return found
  }
}
