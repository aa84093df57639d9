// The two load drivers behind one interface: the SDK client (what a real MCP host runs) and the
// lean clients (undici over HTTP, raw newline-delimited JSON over stdio: load generators that leave
// the CPU to the proxy being measured).
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { START_TIMEOUT_MS } from './common.ts'
import { LeanClient } from './lean-client.ts'
import { LeanSseClient } from './lean-sse-client.ts'
import { LeanStdioClient, type LeanStdioOptions } from './lean-stdio-client.ts'
import { firstText, type Driver, type DriverKind } from './target.ts'

const clientInfo = { name: 'switchboard-bench', version: '0.0.0' }

export type SdkTransport = StdioClientTransport | StreamableHTTPClientTransport | SSEClientTransport

export function sdkDriver (client: Client): Driver {
  return {
    kind: 'sdk',
    callTool: async (name, args, timeoutMs) => {
      const result = await client.callTool({ name, arguments: args }, { timeout: timeoutMs })
      return { text: firstText(result), isError: result.isError === true, raw: result }
    },
    close: async () => { await client.close().catch(() => {}) }
  }
}

/** What every lean client offers: one JSON-RPC request at a time per call, and close. */
interface LeanRpc {
  request: (method: string, params?: Record<string, unknown>) => Promise<unknown>
  close: () => Promise<void>
}

export function leanDriver (client: LeanRpc): Driver {
  return {
    kind: 'lean',
    callTool: async (name, args) => {
      // The per-request bound is the client's own (undici's headers/body timeouts, or the sweep of
      // pending requests), set when the client was made.
      const result = await client.request('tools/call', { name, arguments: args })
      return { text: firstText(result), isError: (result as { isError?: unknown }).isError === true, raw: result }
    },
    close: async () => { await client.close() }
  }
}

/** An SDK client connected over `transport`, checked to list `tool`. */
export async function connectSdk (transport: SdkTransport, tool: string, what: string): Promise<Driver> {
  const client = new Client(clientInfo)
  const driver = sdkDriver(client)
  try {
    await client.connect(transport, { timeout: START_TIMEOUT_MS })
    const { tools } = await client.listTools(undefined, { timeout: START_TIMEOUT_MS })
    if (!tools.some(t => t.name === tool)) throw new Error(`${what} does not list tool ${tool}`)
  } catch (err) {
    await driver.close()
    throw err
  }
  return driver
}

/** A lean session on a Streamable HTTP endpoint (or a legacy SSE one), checked to list `tool`. */
export async function connectLean (url: URL, tool: string, what: string, options: HttpDriverOptions): Promise<Driver> {
  return await checkedLean(options.sse === true ? await LeanSseClient.connect(url, options) : await LeanClient.connect(url, options), tool, what)
}

export interface HttpDriverOptions {
  /** Lean driver: connections kept open at most (the highest in-flight level it is asked for). */
  connections: number
  /** Lean driver: the bound on each request (the SDK client is given its timeout per call). */
  timeoutMs: number
  headers?: Record<string, string>
  /** A legacy HTTP+SSE endpoint rather than Streamable HTTP. */
  sse?: boolean
}

/** A driver of either kind on an HTTP endpoint, checked to list `tool`. */
export async function connectHttpDriver (kind: DriverKind, url: URL, tool: string, what: string, options: HttpDriverOptions): Promise<Driver> {
  if (kind === 'lean') return await connectLean(url, tool, what, options)
  const init = options.headers === undefined ? undefined : { requestInit: { headers: options.headers } }
  return await connectSdk(options.sse === true ? new SSEClientTransport(url, init) : new StreamableHTTPClientTransport(url, init), tool, what)
}

/** A lean stdio session on a server it spawns (`command args`), checked to list `tool`; pid: the server. */
export async function connectLeanStdio (command: string, args: string[], tool: string, what: string, options: LeanStdioOptions): Promise<{ driver: Driver, pid: number | undefined }> {
  const client = await LeanStdioClient.connect(command, args, options)
  return { driver: await checkedLean(client, tool, what), pid: client.pid }
}

async function checkedLean (client: LeanRpc, tool: string, what: string): Promise<Driver> {
  const driver = leanDriver(client)
  try {
    const listed = await client.request('tools/list', {}) as { tools?: Array<{ name?: unknown }> }
    if (!(listed.tools ?? []).some(t => t.name === tool)) throw new Error(`${what} does not list tool ${tool} (lean driver)`)
  } catch (err) {
    await driver.close()
    throw err
  }
  return driver
}

export { SSEClientTransport, StreamableHTTPClientTransport }
