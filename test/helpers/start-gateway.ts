import type { TestContext } from 'node:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { buildApp, type App, type BuildOptions } from '../../src/app.ts'
import { parseConfig } from '../../src/config/load-config.ts'
import type { GatewayConfig } from '../../src/config/schema.ts'
import { createLogger } from '../../src/observability/logger.ts'

export interface LogLine { level: number, msg: string, [key: string]: unknown }

export interface RunningGateway extends App {
  /** http://127.0.0.1:PORT */
  baseUrl: string
  /** the MCP endpoint */
  url: string
  config: GatewayConfig
  logs: LogLine[]
  close: () => Promise<void>
}

/**
 * Starts the gateway in-process on a free port from YAML text; closed when the test ends.
 * `configFile`: where a reload reads the config (the test writes it); without it a reload is refused.
 * `build`: what else buildApp is given (the connect flow of per-user OAuth upstreams).
 */
export async function startGateway (t: TestContext, yaml: string, env: NodeJS.ProcessEnv = process.env, configFile?: string, build: Omit<BuildOptions, 'configFile'> = {}): Promise<RunningGateway> {
  const config = parseConfig(yaml, env, 'test-config')
  const logs: LogLine[] = []
  const log = createLogger('debug', {
    write (line: string) { logs.push(JSON.parse(line) as LogLine) }
  }, { maxStringChars: config.logging.maxStringChars })
  // A config naming its public URL (OAuth redirect URIs, connect links) listens where that URL says.
  const listenPort = config.http.publicUrl === undefined ? 0 : config.listen.port
  const built = await buildApp({ ...config, listen: { ...config.listen, port: listenPort } }, log, env, configFile === undefined ? build : { ...build, configFile })
  const { app } = built
  await app.listen({ host: '127.0.0.1', port: listenPort })
  const port = (app.server.address() as { port: number }).port
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    await app.close()
  }
  t.after(close)
  const baseUrl = `http://127.0.0.1:${port}`
  return { ...built, baseUrl, url: `${baseUrl}/mcp`, config, logs, close }
}

/** Waits until every upstream's first connection attempt has settled. */
export async function waitReady (gw: RunningGateway): Promise<void> {
  await gw.gateway.pool.settled()
}

/** An SDK client over Streamable HTTP; `headers` go on every request (e.g. Authorization). */
export async function connectClient (t: TestContext, url: string, capabilities: Record<string, unknown> = {}, headers?: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), headers === undefined ? undefined : { requestInit: { headers } }))
  t.after(async () => { await client.close().catch(() => {}) })
  return client
}

/** Polls until `check` returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T> (check: () => T | undefined | false | Promise<T | undefined | false>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

/** A raw POST to the MCP endpoint with the headers a well-behaved client sends. */
export async function rawPost (url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body)
  })
}

export async function rawInitialize (url: string, protocolVersion = '2025-11-25', headers: Record<string, string> = {}): Promise<{ sessionId: string, result: Record<string, unknown> }> {
  const res = await rawPost(url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, headers)
  const sessionId = res.headers.get('mcp-session-id')
  if (res.status !== 200 || sessionId === null) throw new Error(`initialize failed: ${res.status} ${await res.text()}`)
  const body = await res.json() as { result: Record<string, unknown> }
  return { sessionId, result: body.result }
}

export async function scrapeMetrics (baseUrl: string): Promise<string> {
  return await (await fetch(`${baseUrl}/metrics`)).text()
}

/** The value of one sample line of a Prometheus text exposition, or undefined. */
export function metricValue (text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue
    const rest = line.slice(name.length)
    if (rest[0] !== '{' && rest[0] !== ' ') continue
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue
    return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return undefined
}
