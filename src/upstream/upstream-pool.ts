import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/schema.ts'
import { UpstreamConnection, type UpstreamListener } from './upstream-connection.ts'

export interface UpstreamStatus { name: string, transport: string, state: string, lastError?: string, server?: unknown }

export const DEFAULT_HEALTH_CHECK_MS = 30_000

/** Every upstream's managed connection. Starting never blocks on a slow or dead upstream. */
export class UpstreamPool {
  private readonly connections = new Map<string, UpstreamConnection>()

  constructor (config: GatewayConfig, log: Logger, listener: UpstreamListener, clientInfo: { name: string, version: string }, baseEnv: Readonly<Record<string, string | undefined>>) {
    for (const upstream of config.upstreams) {
      this.connections.set(upstream.name, new UpstreamConnection({
        config: upstream,
        log: log.child({ upstream: upstream.name }),
        listener,
        killAfterMs: config.shutdown.killAfterMs,
        baseEnv,
        clientInfo,
        healthCheckMs: DEFAULT_HEALTH_CHECK_MS
      }))
    }
  }

  start (): void {
    for (const connection of this.connections.values()) connection.start()
  }

  /** Resolves once every upstream's first connection attempt has succeeded or failed. */
  async settled (): Promise<void> {
    await Promise.all([...this.connections.values()].map(c => c.settled))
  }

  get (name: string): UpstreamConnection | undefined {
    return this.connections.get(name)
  }

  status (): UpstreamStatus[] {
    return [...this.connections.values()].map(c => ({
      name: c.name,
      transport: c.config.transport,
      state: c.state,
      ...(c.lastError === undefined ? {} : { lastError: c.lastError }),
      ...(c.serverInfo === undefined ? {} : { server: c.serverInfo })
    }))
  }

  async close (): Promise<void> {
    await Promise.all([...this.connections.values()].map(c => c.close()))
  }
}
