import { parseArgs } from 'node:util'
import type { GatewayConfig } from '../config/schema.ts'
import { isLoopbackHost } from '../net/loopback.ts'
import { isCommandResult, loadCommandConfig, type CommandResult } from './command-result.ts'
import { CLIENTS, CLIENT_NAMES, DEFAULT_TOKEN_ENV, clientSnippet, limitNote, toolCountWarning } from './client-config.ts'
import { countEndpointTools, type ToolCount } from './count-endpoint-tools.ts'

export const CLIENT_CONFIG_USAGE = `  switchboard client-config --config <file> --client ${CLIENTS.join('|')} [--endpoint <name>]
                            [--url <base URL>] [--token-env <VAR>]
                                         the snippet that host needs for /mcp/<name> (/mcp without --endpoint);
                                         connects to the upstreams to count the endpoint's tools and warns
                                         on stderr when the host takes fewer`

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]'])

function usage (message: string): CommandResult {
  return { code: 2, stdout: '', stderr: `switchboard client-config: ${message}\nusage:\n${CLIENT_CONFIG_USAGE}\n` }
}

/** The address clients use: --url, else the listen address (a wildcard bind is reached on loopback here). */
function baseUrl (config: GatewayConfig, given: string | undefined): { base: string, note?: string } {
  if (given !== undefined) return { base: given.replace(/\/+$/, '') }
  const { host, port } = config.listen
  if (WILDCARD_HOSTS.has(host)) return { base: `http://127.0.0.1:${port}`, note: `note: listen.host is ${host}; the URL uses 127.0.0.1, pass --url with the address clients reach` }
  const shown = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
  return { base: `http://${shown}:${port}`, ...(isLoopbackHost(host) ? {} : { note: 'note: behind a load balancer or TLS proxy, pass --url with the address clients reach' }) }
}

function describeCount (count: ToolCount, endpoint: string | undefined): string {
  const where = endpoint === undefined ? '/mcp' : `endpoint ${endpoint}`
  const total = count.listed.length + count.unreachable.length
  const missing = count.unreachable.map(u => `${u.name}${u.error === undefined ? '' : `: ${u.error}`}`)
  return `${where}: ${count.tools} tool(s), counted from the lists of ${count.listed.length} of ${total} upstream(s) just now, before any policy (a principal may see fewer)` +
    (missing.length === 0 ? '' : `; not reached: ${missing.join('; ')}`)
}

/**
 * `switchboard client-config`: prints the host's snippet on stdout; on stderr how many tools the
 * endpoint has and, when the host is known to take fewer, a warning. Never touches process.* itself.
 */
export async function clientConfigCommand (argv: string[], env: NodeJS.ProcessEnv): Promise<CommandResult> {
  let values: { config?: string, client?: string, endpoint?: string, url?: string, 'token-env'?: string }
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { config: { type: 'string', short: 'c' }, client: { type: 'string' }, endpoint: { type: 'string' }, url: { type: 'string' }, 'token-env': { type: 'string' } }
    }))
  } catch (err: unknown) {
    return usage((err as Error).message)
  }
  const client = CLIENTS.find(c => c === values.client)
  if (client === undefined) return usage(values.client === undefined ? '--client is required' : `unknown client ${values.client} (one of ${CLIENTS.join(', ')})`)
  const file = values.config ?? env.SWITCHBOARD_CONFIG
  if (file === undefined) return usage('--config <file> is required')
  if (values.url !== undefined && !/^https?:\/\/[^/]/.test(values.url)) return usage(`--url must be an http(s) URL, got ${values.url}`)
  const tokenEnv = values['token-env'] ?? DEFAULT_TOKEN_ENV
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(tokenEnv)) return usage(`--token-env must be an environment variable name, got ${tokenEnv}`)
  const config = await loadCommandConfig(file, env)
  if (isCommandResult(config)) return config
  const { endpoint } = values
  const target = endpoint === undefined ? config.endpoints.find(e => e.default) : config.endpoints.find(e => e.name === endpoint)
  if (endpoint !== undefined && target === undefined) {
    const known = config.endpoints.map(e => e.name)
    return { code: 2, stdout: '', stderr: `switchboard client-config: no endpoint named ${endpoint} in ${file} (endpoints: ${known.length === 0 ? 'none' : known.join(', ')})\n` }
  }
  const { base, note } = baseUrl(config, values.url)
  const url = endpoint === undefined ? `${base}/mcp` : `${base}/mcp/${endpoint}`
  const snippet = clientSnippet({ client, server: endpoint === undefined ? 'switchboard' : `switchboard-${endpoint}`, url, tokenEnv: config.auth === undefined ? undefined : tokenEnv })
  const lines = [`${CLIENT_NAMES[client]}: put this ${snippet.where}`, ...(note === undefined ? [] : [note])]
  if (target?.discovery === 'search') {
    lines.push(`endpoint ${target.name}: 2 tools (search_tools and call_tool, discovery: search); ${limitNote(client)}`)
  } else {
    const counted = await countEndpointTools(config, endpoint, env)
    lines.push(`${describeCount(counted, endpoint)}; ${limitNote(client)}`)
    const warning = toolCountWarning(client, counted.tools)
    if (warning !== undefined) lines.push(warning)
  }
  return { code: 0, stdout: snippet.text, stderr: lines.map(l => `${l}\n`).join('') }
}
