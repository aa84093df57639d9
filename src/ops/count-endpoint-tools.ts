import pino from 'pino'
import { CatalogStore } from '../catalog/catalog-store.ts'
import { EndpointSelection } from '../catalog/endpoint-selection.ts'
import type { GatewayConfig } from '../config/schema.ts'
import { UpstreamPool } from '../upstream/upstream-pool.ts'
import { VERSION } from '../version.ts'

export interface ToolCount {
  /** Tools of the endpoint's selection (the full catalog without one), before any policy. */
  tools: number
  /** Upstreams that listed their tools, and those that could not be reached (with why). */
  listed: string[]
  unreachable: Array<{ name: string, error?: string }>
}

/**
 * Counts an endpoint's tools the way the gateway would serve them: connects to every configured
 * upstream (stdio ones are started), builds the catalog with the config's names and filters, applies
 * the endpoint's selection, and closes everything. Each upstream gets its connectTimeoutMs.
 */
export async function countEndpointTools (config: GatewayConfig, endpoint: string | undefined, env: Readonly<Record<string, string | undefined>>): Promise<ToolCount> {
  const log = pino({ level: 'silent' })
  const catalogs = new CatalogStore(config, log)
  const pool = new UpstreamPool(config, log, {
    lists: (upstream, lists) => { catalogs.update(upstream, lists) },
    state: () => {},
    reconnect: () => {}
  }, { name: 'switchboard-client-config', version: VERSION }, env)
  try {
    pool.start()
    await pool.settled()
    const target = endpoint === undefined ? config.endpoints.find(e => e.default) : config.endpoints.find(e => e.name === endpoint)
    const selection = target === undefined ? undefined : new EndpointSelection(target, catalogs)
    const tools = catalogs.tools.entries.filter(e => selection === undefined || selection.selects('tools', e.exposed)).length
    const status = pool.status()
    return {
      tools,
      listed: status.filter(s => s.state === 'ready').map(s => s.name),
      unreachable: status.filter(s => s.state !== 'ready').map(s => ({ name: s.name, ...(s.lastError === undefined ? {} : { error: s.lastError }) }))
    }
  } finally {
    await pool.close()
  }
}
