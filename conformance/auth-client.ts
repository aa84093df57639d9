// The client the official conformance suite's authorization scenarios drive (`conformance client
// --command "<node> --import tsx conformance/auth-client.ts" --suite auth`): the gateway is the OAuth
// client under test. Given the scenario's MCP server (the last argument) it writes a gateway config
// with that server as upstream `scenario` (auth oauth, or client_credentials for the client-credentials
// scenarios, with what MCP_CONFORMANCE_CONTEXT gives), starts the gateway, calls the scenario's tool
// through it with the official SDK client, and when the gateway answers -32042 (connect your account)
// follows the connect link as a browser would: gateway → authorization server (which approves at
// once) → the gateway's /oauth/callback. Exit 0 once the tool answered; non-zero with the reason
// otherwise. The gateway is always stopped. See conformance/README.md.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { stringify as stringifyYaml } from 'yaml'
import { isLoopbackHost } from '../src/net/loopback.ts'
import { GatewayBrowser } from '../test/helpers/gateway-browser.ts'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const GATEWAY_MAIN = path.join(ROOT, 'src', 'main.ts')
const UPSTREAM = 'scenario'
/**
 * The scenario's tool as the gateway exposes it. A prefix, not "": on a fresh gateway nobody has
 * listed the upstream yet, and the first call of `<prefix>__<tool>` is what opens the caller's
 * connection (asking them to connect first), so that the catalog learns it.
 */
const TOOL = `${UPSTREAM}__test-tool`
/** A user who is asked to connect more often than this gives up (scope-retry-limit counts authorizations). */
const MAX_CONNECTS = 3
const MAX_REDIRECTS = 10
const START_TIMEOUT_MS = 30_000
const STOP_GRACE_MS = 5_000
/** Below the runner's per-scenario --timeout, so the gateway is stopped by us, never orphaned. */
const OVERALL_TIMEOUT_MS = 75_000
const REQUEST_TIMEOUT_MS = 15_000
const LISTED_WAIT_MS = 5_000
/** basic-cimd accepts this one client id URL (its authorization server never fetches the document). */
const SCENARIO_CIMD_URL = 'https://conformance-test.local/client-metadata.json'
const API_KEY_ENV = 'SB_CONFORMANCE_AUTH_KEY'

class DriverError extends Error {}

interface ScenarioContext { client_id?: string, client_secret?: string, issuer?: string }

function contextOf (): ScenarioContext {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT
  if (raw === undefined || raw === '') return {}
  const value: unknown = JSON.parse(raw)
  return typeof value === 'object' && value !== null ? value as ScenarioContext : {}
}

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new DriverError('could not pick a free port')
  return address.port
}

/**
 * The client-credentials config needs its issuer or token endpoint, and the scenario's context names
 * neither: the operator would look it up once, as here, from the upstream's 401 and RFC 9728 metadata.
 */
async function issuerOf (serverUrl: string): Promise<string> {
  const probe = await fetch(serverUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
  })
  await probe.body?.cancel()
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(probe.headers.get('www-authenticate') ?? '')?.[1]
  if (metadataUrl === undefined) throw new DriverError(`the scenario server answered ${probe.status} without a resource_metadata challenge`)
  const metadata = await fetch(metadataUrl, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }).then(async (r) => await r.json() as { authorization_servers?: string[] })
  const issuer = metadata.authorization_servers?.[0]
  if (issuer === undefined) throw new DriverError('the protected-resource metadata names no authorization server')
  return issuer
}

/** The upstream's `auth` block for this scenario. */
async function authFor (scenario: string, context: ScenarioContext, serverUrl: string): Promise<Record<string, unknown>> {
  if (scenario.startsWith('auth/client-credentials-')) {
    if (context.client_id === undefined || context.client_secret === undefined) throw new DriverError(`${scenario} gave no client credentials in MCP_CONFORMANCE_CONTEXT`)
    return { type: 'client_credentials', issuer: context.issuer ?? await issuerOf(serverUrl), clientId: context.client_id, clientSecret: context.client_secret }
  }
  const auth: Record<string, unknown> = { type: 'oauth' }
  // A Client ID Metadata Document URL the operator hosts is configured as the client id, like a
  // pre-registered one: the gateway's own (<publicUrl>/oauth/client/<upstream>) cannot be this URL.
  if (scenario === 'auth/basic-cimd') auth.clientId = SCENARIO_CIMD_URL
  if (context.client_id !== undefined) auth.clientId = context.client_id
  if (context.client_secret !== undefined) auth.clientSecret = context.client_secret
  return auth
}

async function writeConfig (dir: string, port: number, serverUrl: string, auth: Record<string, unknown>): Promise<string> {
  const base = `http://127.0.0.1:${port}`
  const modern = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION === '2026-07-28'
  const config = {
    listen: { host: '127.0.0.1', port },
    catalog: { separator: '__' },
    logLevel: 'info',
    auth: { apiKeys: [{ id: 'conformance-user', key: `\${${API_KEY_ENV}}` }] },
    http: { publicUrl: base },
    tokens: { encryptionKey: randomBytes(32).toString('base64'), store: 'memory' },
    upstreams: [{
      name: UPSTREAM,
      transport: 'streamable-http',
      url: serverUrl,
      prefix: UPSTREAM,
      protocol: modern ? '2026-07-28' : '2025-11-25',
      isolation: auth.type === 'oauth' ? 'principal' : 'shared',
      auth,
      timeoutMs: 20_000,
      connectTimeoutMs: 20_000
    }],
    shutdown: { graceMs: 1000 }
  }
  const file = path.join(dir, 'gateway.yaml')
  await writeFile(file, stringifyYaml(config))
  return file
}

interface Gateway { process: ChildProcess, stop: () => Promise<void>, exited: () => boolean }

function startGateway (config: string, logFile: string, apiKey: string): Gateway {
  const child = spawn(process.execPath, ['--import', 'tsx', GATEWAY_MAIN, '--config', config], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, [API_KEY_ENV]: apiKey }
  })
  const log = createWriteStream(logFile)
  child.stdout.pipe(log, { end: false })
  child.stderr.pipe(log, { end: false })
  let done = false
  const exited = new Promise<void>((resolve) => child.once('exit', () => { done = true; resolve() }))
  const signal = (name: NodeJS.Signals): void => {
    if (done || child.pid === undefined) return
    try { process.kill(-child.pid, name) } catch { child.kill(name) }
  }
  return {
    process: child,
    exited: () => done,
    stop: async () => {
      signal('SIGTERM')
      const timer = setTimeout(() => signal('SIGKILL'), STOP_GRACE_MS)
      await exited
      clearTimeout(timer)
      log.end()
    }
  }
}

async function waitReady (gateway: Gateway, base: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS
  let last = 'no answer'
  while (Date.now() < deadline) {
    if (gateway.exited()) throw new DriverError('the gateway exited during startup')
    try {
      const response = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2_000) })
      last = `${response.status} ${await response.text()}`
      if (response.status === 200) return
    } catch (err: unknown) {
      last = err instanceof Error ? err.message : String(err)
    }
    await sleep(100)
  }
  throw new DriverError(`the gateway was not ready within ${START_TIMEOUT_MS} ms (last /readyz: ${last})`)
}

/**
 * What a user does with a connect link: the gateway's pages first (the user proves who they are by
 * typing their API key, then presses the button that sends the browser to the authorization server:
 * the scripted browser of test/helpers/gateway-browser.ts), then each Location of the scenario's
 * authorization server (loopback only), until it sends the browser back to the gateway's callback,
 * which is loaded in the same browser (its proof cookie must come along).
 */
async function connect (link: string, gatewayOrigin: string, apiKey: string): Promise<void> {
  const browser = new GatewayBrowser()
  let url = await browser.startConnect(link, { apiKey })
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    if (!isLoopbackHost(url.hostname)) throw new DriverError(`the connect flow led off this machine, to ${url.origin}`)
    if (url.origin === gatewayOrigin) {
      const page = await browser.get(url)
      const text = page.body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 500)
      if (page.status !== 200) throw new DriverError(`the connect flow ended at ${url.origin}${url.pathname} with HTTP ${page.status}: ${text}`)
      process.stderr.write(`connect flow ended at ${url.origin}${url.pathname}: ${text}\n`)
      return
    }
    const response = await fetch(url, { redirect: 'manual', headers: { accept: 'text/html' }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    const location = response.headers.get('location')
    await response.body?.cancel()
    if (response.status < 300 || response.status >= 400 || location === null) throw new DriverError(`the authorization server answered ${response.status} at ${url.origin}${url.pathname} without sending the browser back`)
    url = new URL(location, url)
  }
  throw new DriverError(`more than ${MAX_REDIRECTS} redirects from ${link}`)
}

function connectUrlOf (err: unknown): string | undefined {
  if (!(err instanceof ProtocolError) || err.code !== -32042) return undefined
  const data = err.data as { elicitations?: Array<{ url?: unknown }> } | undefined
  const url = data?.elicitations?.[0]?.url
  return typeof url === 'string' ? url : undefined
}

async function toolNames (client: Client): Promise<string[]> {
  const names: string[] = []
  let cursor: string | undefined
  for (let page = 0; page < 20; page++) {
    const listed = await client.listTools(cursor === undefined ? {} : { cursor })
    names.push(...listed.tools.map((t) => t.name))
    cursor = listed.nextCursor
    if (cursor === undefined) break
  }
  return names
}

/** Whether the tool is listed within `waitMs`: a connect opens the user's upstream connection, which then lists. */
async function listed (client: Client, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs
  for (;;) {
    if ((await toolNames(client)).includes(TOOL)) return true
    if (Date.now() >= deadline) return false
    await sleep(200)
  }
}

/** Lists, calls the tool, connects when asked (at most MAX_CONNECTS times), calls again. */
async function play (base: string, apiKey: string): Promise<void> {
  const authorization = `Bearer ${apiKey}`
  const client = new Client({ name: 'switchboard-conformance-auth', version: '1.0.0' }, { capabilities: {} })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization } } }))
  try {
    process.stderr.write(`tools listed before any connect: ${JSON.stringify(await toolNames(client))}\n`)
    let connects = 0
    for (;;) {
      // The catalog may not know the upstream's tools before anyone connected: the call goes
      // first. Only if the tool is still unknown after a connect does the user try the gateway's
      // own connect page (authenticated as for /mcp).
      if (connects > 0 && !(await listed(client, LISTED_WAIT_MS))) {
        if (connects >= MAX_CONNECTS) throw new DriverError(`${TOOL} is not listed after ${connects} connects`)
        connects++
        process.stderr.write(`${TOOL} not listed; connecting at ${base}/connect/${UPSTREAM}\n`)
        await connect(`${base}/connect/${UPSTREAM}`, base, apiKey)
        continue
      }
      let url: string | undefined
      try {
        const result = await client.callTool({ name: TOOL, arguments: {} })
        if (result.isError === true) throw new DriverError(`${TOOL} answered isError: ${JSON.stringify(result.content)}`)
        process.stderr.write(`${TOOL} answered: ${JSON.stringify(result.content)}\n`)
        return
      } catch (err: unknown) {
        url = connectUrlOf(err)
        if (url === undefined) throw err
      }
      if (connects >= MAX_CONNECTS) throw new DriverError(`still asked to connect after ${connects} connects (the user gives up)`)
      connects++
      process.stderr.write(`-32042: connect required; following the connect link (${connects})\n`)
      await connect(url, base, apiKey)
    }
  } finally {
    await client.close().catch(() => {})
  }
}

async function main (): Promise<number> {
  const serverUrl = process.argv.at(-1)
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ''
  if (serverUrl === undefined || !URL.canParse(serverUrl)) throw new DriverError('usage: auth-client.ts <scenario server URL> (run by the conformance CLI)')
  const dir = await mkdtemp(path.join(os.tmpdir(), 'switchboard-auth-driver-'))
  const logFile = path.join(dir, 'gateway.log')
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const apiKey = randomBytes(24).toString('base64url')
  const config = await writeConfig(dir, port, serverUrl, await authFor(scenario, contextOf(), serverUrl))
  process.stderr.write(`scenario ${scenario} (${process.env.MCP_CONFORMANCE_PROTOCOL_VERSION ?? 'default'}): gateway ${base}, upstream ${serverUrl}, config ${config}\n`)
  const gateway = startGateway(config, logFile, apiKey)
  const stop = (): void => { void gateway.stop().finally(() => process.exit(1)) }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  let failure: unknown
  try {
    await waitReady(gateway, base)
    await Promise.race([
      play(base, apiKey),
      sleep(OVERALL_TIMEOUT_MS, undefined, { ref: false }).then(() => { throw new DriverError(`no answer within ${OVERALL_TIMEOUT_MS} ms`) })
    ])
  } catch (err: unknown) {
    failure = err
  } finally {
    await gateway.stop()
  }
  if (failure === undefined) return 0
  const log = await readFile(logFile, 'utf8').catch(() => '')
  process.stderr.write(`gateway log (${logFile}), last lines:\n${log.split('\n').slice(-40).join('\n')}\n`)
  process.stderr.write(`FAILED: ${failure instanceof Error ? failure.message : String(failure)}\n`)
  return 1
}

main().then((code) => process.exit(code), (err: unknown) => {
  process.stderr.write(`auth-client: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(2)
})
