// The catalog section: tools/list through the gateway over big catalogs (1k/10k/50k tools from
// bench/many-tools-server.ts). One gateway per size, started, measured and stopped in turn: the
// first page's latency (p50/p99, sequential, after warm-up) and the gateway's CPU per listing, then a
// few whole listings (every page, following nextCursor).
import path from 'node:path'
import { isAborted, waitFor } from './abort.ts'
import { ROOT, START_TIMEOUT_MS, log } from './common.ts'
import { TSX_LOADER, startGatewayProcess } from './gateway.ts'
import { LeanClient } from './lean-client.ts'
import { onCleanup } from './lifecycle.ts'
import { processCpuUs, statusKb } from './proc.ts'
import type { Settings } from './settings.ts'
import { percentile } from './stats.ts'
import { SEARCH_ENDPOINT_CONFIG, measureSearch, type SearchResult } from './tool-search.ts'

const FIXTURE = path.join(ROOT, 'bench', 'many-tools-server.ts')
/** The gateway's default catalog.pageSize. */
export const GATEWAY_PAGE_SIZE = 500
const LIST_TIMEOUT_MS = 30_000

export interface CatalogResult {
  tools: number
  /** Time from starting the gateway until its whole catalog is listed. */
  readyMs: number
  /** failures: warm-up and measured first pages, and whole listings, that were wrong or failed. */
  firstPage: { calls: number, ok: number, failures: number, p50Ms: number, p99Ms: number, listsPerSec: number, gatewayCpuUsPerList?: number, upstreamCpuUsPerList?: number }
  fullListing: { listings: number, pages: number, p50Ms: number }
  /** search_tools on a `discovery: search` endpoint over the same catalog. */
  search?: SearchResult
  gatewayPeakRssMb?: number
}

interface Page { tools: Array<{ name?: unknown }>, nextCursor?: string }

async function listPage (client: LeanClient, cursor?: string): Promise<Page> {
  const page = await client.request('tools/list', cursor === undefined ? {} : { cursor }) as Partial<Page>
  if (!Array.isArray(page.tools)) throw new Error('tools/list answered without a tools array')
  return { tools: page.tools, nextCursor: typeof page.nextCursor === 'string' ? page.nextCursor : undefined }
}

/** Every page, bounded by the number of pages the catalog can have; returns the tool count. */
async function listAll (client: LeanClient, expected: number): Promise<{ count: number, pages: number }> {
  let count = 0
  let cursor: string | undefined
  const maxPages = Math.ceil(expected / GATEWAY_PAGE_SIZE) + 2
  for (let pages = 1; pages <= maxPages && !isAborted(); pages++) {
    const page = await listPage(client, cursor)
    count += page.tools.length
    cursor = page.nextCursor
    if (cursor === undefined) return { count, pages }
  }
  throw new Error(`tools/list did not end within ${maxPages} pages`)
}

/** The first page as it must be: a full page (or the whole catalog), in order, with a cursor iff more. */
function checkFirstPage (page: Page, tools: number): string | undefined {
  const want = Math.min(GATEWAY_PAGE_SIZE, tools)
  if (page.tools.length !== want) return `first page has ${page.tools.length} tools, expected ${want}`
  if ((page.nextCursor !== undefined) !== (tools > GATEWAY_PAGE_SIZE)) return `first page nextCursor ${page.nextCursor === undefined ? 'missing' : 'unexpected'}`
  const first = page.tools[0]?.name
  if (typeof first !== 'string' || !/^many__tool_0+$/.test(first)) return `first tool is ${String(first)}, expected many__tool_0…`
  return undefined
}

async function measureSize (settings: Settings, tmpDir: string, tools: number): Promise<CatalogResult> {
  const t0 = performance.now()
  const gw = await startGatewayProcess(settings, tmpDir, {
    file: `switchboard-bench-catalog-${tools}.yaml`,
    upstreams: [{ name: 'many', args: ['--import', TSX_LOADER, FIXTURE, '--count', String(tools)], marker: FIXTURE }],
    // Pinning off: on first sight the file store rewrites the whole pin file once per tool (n writes
    // of a growing file), which keeps the gateway busy for minutes at 10k tools and would be measured
    // here as tools/list cost. This section measures listing; pinning is its own cost.
    extra: ['pinning: { mode: off }', SEARCH_ENDPOINT_CONFIG]
  })
  onCleanup(`switchboard catalog ${tools}`, gw.stop)
  try {
    const client = await LeanClient.connect(gw.url, { connections: 1, timeoutMs: LIST_TIMEOUT_MS })
    onCleanup(`catalog ${tools} driver`, async () => { await client.close() })
    // /readyz may answer before every page of a big upstream catalog is in: wait until it all lists.
    await waitFor(`the ${tools}-tool catalog`, START_TIMEOUT_MS, async () => (await listAll(client, tools)).count === tools ? true : undefined)
    const readyMs = performance.now() - t0
    const failures: string[] = []
    const once = async (): Promise<number | undefined> => {
      const started = performance.now()
      try {
        const page = await listPage(client)
        const elapsed = performance.now() - started
        const problem = checkFirstPage(page, tools)
        if (problem === undefined) return elapsed
        failures.push(problem)
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err))
      }
      return undefined
    }
    for (let i = 0; i < settings.catalogWarmup && !isAborted(); i++) await once()
    const latencies: number[] = []
    const cpuBefore = [processCpuUs(gw.pid), processCpuUs(gw.upstreamPid())]
    const start = performance.now()
    for (let i = 0; i < settings.catalogCalls && !isAborted(); i++) {
      const ms = await once()
      if (ms !== undefined) latencies.push(ms)
    }
    const elapsed = performance.now() - start
    const cpuAfter = [processCpuUs(gw.pid), processCpuUs(gw.upstreamPid())]
    const perList = (i: number): number | undefined => {
      const a = cpuBefore[i]
      const b = cpuAfter[i]
      return a === undefined || b === undefined || latencies.length === 0 ? undefined : (b - a) / latencies.length
    }
    const full: number[] = []
    let pages = 0
    for (let i = 0; i < settings.catalogFullListings && !isAborted(); i++) {
      const started = performance.now()
      const all = await listAll(client, tools)
      if (all.count !== tools) failures.push(`whole listing gave ${all.count} tools, expected ${tools}`)
      else full.push(performance.now() - started)
      pages = all.pages
    }
    const search = isAborted() ? undefined : await measureSearch(gw.url, gw.pid, tools, settings.catalogWarmup, settings.catalogCalls)
    const sorted = Float64Array.from(latencies).sort()
    const hwm = statusKb(gw.pid, 'VmHWM')
    for (const f of failures.slice(0, 3)) log(`catalog ${tools}: ${f}`)
    return {
      tools,
      readyMs,
      firstPage: {
        calls: settings.catalogCalls + settings.catalogWarmup,
        ok: latencies.length,
        failures: failures.length,
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
        listsPerSec: latencies.length / (elapsed / 1000),
        gatewayCpuUsPerList: perList(0),
        upstreamCpuUsPerList: perList(1)
      },
      fullListing: { listings: full.length, pages, p50Ms: percentile(Float64Array.from(full).sort(), 0.5) },
      ...(search === undefined ? {} : { search }),
      gatewayPeakRssMb: hwm === undefined ? undefined : hwm / 1024
    }
  } finally {
    await gw.stop()
  }
}

/** Each catalog size in turn; a size that cannot be measured is reported, and counts as a failure. */
export async function runCatalog (settings: Settings, tmpDir: string): Promise<{ results: CatalogResult[], problems: string[] }> {
  const results: CatalogResult[] = []
  const problems: string[] = []
  for (const tools of settings.catalogSizes) {
    if (isAborted()) break
    try {
      const r = await measureSize(settings, tmpDir, tools)
      results.push(r)
      log(`catalog ${tools} tools: ready ${(r.readyMs / 1000).toFixed(1)} s, first page p50 ${r.firstPage.p50Ms.toFixed(2)} ms, gateway CPU ${r.firstPage.gatewayCpuUsPerList?.toFixed(0) ?? '-'} µs/list, whole listing p50 ${r.fullListing.p50Ms.toFixed(1)} ms (${r.fullListing.pages} pages), search_tools p50 ${r.search?.p50Ms.toFixed(2) ?? '-'} ms`)
    } catch (err) {
      const message = `catalog ${tools} tools NOT measured: ${err instanceof Error ? err.message : String(err)}`
      problems.push(message)
      log(message)
    }
  }
  return { results, problems }
}
