// The two load drivers behind one interface: the SDK client (what a real MCP host runs) and the
// lean undici client (a load generator that leaves the CPU to the proxy being measured).
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { START_TIMEOUT_MS } from './common.ts'
import { LeanClient } from './lean-client.ts'
import { LeanSseClient } from './lean-sse-client.ts'
import { firstText, type Driver } from './target.ts'

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

export function leanDriver (client: LeanClient | LeanSseClient): Driver {
  return {
    kind: 'lean',
    callTool: async (name, args) => {
      // The per-request bound is the pool's headers/body timeout, set when the client was made.
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
export async function connectLean (url: URL, tool: string, what: string, options: { connections: number, timeoutMs: number, headers?: Record<string, string>, sse?: boolean }): Promise<Driver> {
  const client = options.sse === true ? await LeanSseClient.connect(url, options) : await LeanClient.connect(url, options)
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
