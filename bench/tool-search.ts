// search_tools through the gateway over a big catalog: a `discovery: search` endpoint of the same
// gateway the catalog section started, the lean driver, sequential calls after warm-up. The queries
// mix a word every tool has (every posting is scored) with a number that names one tool.
import { isAborted } from './abort.ts'
import { LeanClient } from './lean-client.ts'
import { onCleanup } from './lifecycle.ts'
import { processCpuUs } from './proc.ts'
import { percentile } from './stats.ts'

/** The endpoint the catalog section's gateway config declares for this measurement. */
export const SEARCH_ENDPOINT = 'finder'
export const SEARCH_ENDPOINT_CONFIG = `endpoints: [{ name: ${SEARCH_ENDPOINT}, discovery: search }]`
const SEARCH_TIMEOUT_MS = 30_000
const LIMIT = 10

export interface SearchResult {
  calls: number
  ok: number
  failures: number
  p50Ms: number
  p99Ms: number
  gatewayCpuUsPerSearch?: number
}

interface Found { structuredContent?: { tools?: Array<{ name?: unknown }> } }

/** A query that names tool `i` among words every tool has, and the name it must find first. */
function queryFor (i: number, tools: number): { query: string, first: string } {
  const n = (i * 7919) % tools
  return { query: `echo the message back, tool ${n}`, first: `many__tool_${String(n).padStart(String(tools - 1).length, '0')}` }
}

export async function measureSearch (url: URL, gatewayPid: number, tools: number, warmup: number, calls: number): Promise<SearchResult> {
  const client = await LeanClient.connect(new URL(`${url.href}/${SEARCH_ENDPOINT}`), { connections: 1, timeoutMs: SEARCH_TIMEOUT_MS })
  onCleanup(`search ${tools} driver`, async () => { await client.close() })
  let failures = 0
  const once = async (i: number): Promise<number | undefined> => {
    const { query, first } = queryFor(i, tools)
    const started = performance.now()
    try {
      const result = await client.request('tools/call', { name: 'search_tools', arguments: { query, limit: LIMIT } }) as Found
      const elapsed = performance.now() - started
      const found = result.structuredContent?.tools
      if (Array.isArray(found) && found.length === LIMIT && found[0]?.name === first) return elapsed
    } catch {}
    failures++
    return undefined
  }
  try {
    for (let i = 0; i < warmup && !isAborted(); i++) await once(i)
    const latencies: number[] = []
    const cpuBefore = processCpuUs(gatewayPid)
    for (let i = warmup; i < warmup + calls && !isAborted(); i++) {
      const ms = await once(i)
      if (ms !== undefined) latencies.push(ms)
    }
    const cpuAfter = processCpuUs(gatewayPid)
    const sorted = Float64Array.from(latencies).sort()
    return {
      calls: warmup + calls,
      ok: latencies.length,
      failures,
      p50Ms: percentile(sorted, 0.5),
      p99Ms: percentile(sorted, 0.99),
      ...(cpuBefore === undefined || cpuAfter === undefined || latencies.length === 0 ? {} : { gatewayCpuUsPerSearch: (cpuAfter - cpuBefore) / latencies.length })
    }
  } finally {
    await client.close()
  }
}
