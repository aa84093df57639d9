import type { Logger } from 'pino'
import type { ScanningConfig } from '../../config/guardrails-schema.ts'
import type { Metrics } from '../../observability/metrics.ts'
import { SCAN_RULES, type Finding } from './finding.ts'
import { createHostMatcher, type HostMatcher } from './foreign-hosts.ts'
import { definitionStrings, type DefinitionString } from './definition-strings.ts'
import { scanOwnText, scanShadowing } from './scan-tool.ts'
import { otherTools } from './shadowing.ts'

/** A tool of the catalog as the shadowing rule sees it. */
export interface CatalogName { readonly upstream: string, readonly exposed: string, readonly original: string }

export interface ToolScannerDeps {
  log: Logger
  metrics: Pick<Metrics, 'toolScanFindings'>
  /** The upstream's own host (its configured URL), allowed in its own definitions; undefined for stdio. */
  ownHost?: (upstream: string) => string | undefined
}

/** The findings of one list: tool (upstream's own name) → its findings; tools without any are absent. */
export type ScanResults = ReadonlyMap<string, readonly Finding[]>

const NONE: ScanResults = new Map()

/** What a definition's scan keeps between reviews: all but shadowing is fixed for a definition and a config. */
interface Scanned { fingerprint: string, config: ScanningConfig, own: string | undefined, strings: DefinitionString[], findings: Finding[] }

/** At most this many findings of one definition are logged one by one; the rest are summed up. */
const MAX_LOGGED_FINDINGS = 20

/**
 * The running side of the definition scan: scans each upstream's tool list as it enters the
 * catalog (and again on every change, an approval, a reload), logs each finding once per tool
 * definition and counts it in switchboard_tool_scan_findings_total. Whether a tool with findings is
 * held is the pin book's decision (ToolPins), so it shares pinning's quarantine and approval.
 */
export class ToolScanner {
  private config: ScanningConfig
  private allowedHost: HostMatcher
  private readonly deps: ToolScannerDeps
  private readonly reported = new Set<string>()
  private readonly seenUpstreams = new Set<string>()
  /** upstream → tool → its last scan; a catalog change re-runs only the shadowing rule. */
  private readonly cache = new Map<string, Map<string, Scanned>>()

  constructor (config: ScanningConfig, deps: ToolScannerDeps) {
    this.config = config
    this.allowedHost = createHostMatcher(config.allowedHosts)
    this.deps = deps
  }

  get mode (): ScanningConfig['mode'] { return this.config.mode }

  /** A reload: the new mode, hosts and limit apply from the next scan. */
  reconfigure (config: ScanningConfig): void {
    this.config = config
    this.allowedHost = createHostMatcher(config.allowedHosts)
  }

  /**
   * Scans the tools of `upstream`. `catalog` is the rest of the catalog (for shadowing); `fingerprint`
   * names each definition, so a finding is logged and counted once per definition however often
   * the list is reviewed.
   */
  scan (upstream: string, tools: ReadonlyArray<Readonly<Record<string, unknown>>>, catalog: Iterable<CatalogName>, fingerprint: (tool: Readonly<Record<string, unknown>>) => string): ScanResults {
    if (this.config.mode === 'off') return NONE
    this.zeroSeries(upstream)
    const own = this.deps.ownHost?.(upstream)
    const allowedHost: HostMatcher = own === undefined ? this.allowedHost : (host) => host.toLowerCase() === own || this.allowedHost(host)
    const context = { allowedHost, maxDescriptionChars: this.config.maxDescriptionChars }
    const others = otherTools(upstream, catalog)
    const previous = this.cache.get(upstream)
    const current = new Map<string, Scanned>()
    const results = new Map<string, readonly Finding[]>()
    for (const tool of tools) {
      const name = tool.name
      if (typeof name !== 'string') continue
      const print = fingerprint(tool)
      let scanned = previous?.get(name)
      if (scanned === undefined || scanned.fingerprint !== print || scanned.config !== this.config || scanned.own !== own) {
        const strings = definitionStrings(tool)
        scanned = { fingerprint: print, config: this.config, own, strings, findings: scanOwnText(strings, context) }
      }
      current.set(name, scanned)
      const findings = [...scanned.findings, ...scanShadowing(scanned.strings, others)]
      if (findings.length === 0) continue
      results.set(name, findings)
      this.report(upstream, name, print, findings)
    }
    this.cache.set(upstream, current)
    return results
  }

  private zeroSeries (upstream: string): void {
    if (this.seenUpstreams.has(upstream)) return
    this.seenUpstreams.add(upstream)
    for (const rule of SCAN_RULES) this.deps.metrics.toolScanFindings.inc({ upstream, rule }, 0)
  }

  private report (upstream: string, tool: string, fingerprint: string, findings: readonly Finding[]): void {
    let logged = 0
    let unlogged = 0
    for (const finding of findings) {
      const key = `${upstream}\0${tool}\0${fingerprint}\0${finding.rule}\0${finding.path}\0${finding.reason}`
      if (this.reported.has(key)) continue
      this.reported.add(key)
      this.deps.metrics.toolScanFindings.inc({ upstream, rule: finding.rule })
      if (logged >= MAX_LOGGED_FINDINGS) { unlogged++; continue }
      logged++
      const effect = this.config.mode === 'quarantine' ? 'quarantined until approved' : 'still served (scanning.mode: warn)'
      this.deps.log.warn({ upstream, tool, rule: finding.rule, path: finding.path, reason: finding.reason, mode: this.config.mode }, `tool definition scan: ${finding.rule}; ${effect}`)
    }
    if (unlogged > 0) this.deps.log.warn({ upstream, tool, more: unlogged }, 'tool definition scan: more findings in this definition, counted but not logged one by one')
  }
}
