import type { Logger } from 'pino'
import type { GatewayConfig } from '../../config/schema.ts'
import type { ToolScanner } from './tool-scanner.ts'

/** The host of an upstream's configured URL (allowed in its own definitions); undefined for stdio. */
export function upstreamHost (config: GatewayConfig, upstream: string): string | undefined {
  const url = config.upstreams.find(u => u.name === upstream)?.url
  if (url === undefined) return undefined
  try {
    return new URL(url).hostname.toLowerCase()
  } catch { return undefined }
}

/**
 * A reload changed `scanning`: the new mode, hosts and limit apply at once, and every listed
 * tool is reviewed again (a host now allowed releases a tool the scan held; a new quarantine holds).
 * Without a pin book (pinning and scanning both off at start) there is nowhere to hold or record
 * a tool: turning scanning on then takes a restart, which the log says.
 */
export function applyScanning (next: GatewayConfig, scanner: ToolScanner, pins: object | undefined, catalogs: { recheck: () => void }, log: Logger): void {
  scanner.reconfigure(next.scanning)
  if (pins === undefined) {
    if (next.scanning.mode !== 'off') log.warn({ mode: next.scanning.mode }, 'scanning was off with pinning off at start; turning it on takes a restart')
    return
  }
  catalogs.recheck()
}
