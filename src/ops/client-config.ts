// What each agent host needs in its own config to reach one endpoint of the gateway: pure text,
// no secret ever (a credential is always an environment variable or a prompt the host fills in).

export const CLIENTS = ['cursor', 'vscode', 'claude-code', 'claude-desktop', 'codex'] as const
export type ClientKind = typeof CLIENTS[number]

export const DEFAULT_TOKEN_ENV = 'SWITCHBOARD_TOKEN'

/** Tools a host takes before it drops some or refuses the list (shared/reference/what-users-need.md §3.2). */
export const TOOL_LIMITS: Readonly<Record<ClientKind, { limit: number, why: string } | undefined>> = {
  cursor: { limit: 40, why: 'Cursor has sent only the first 40 tools to the model (newer versions warn from 80)' },
  vscode: { limit: 128, why: 'VS Code Copilot refuses more than 128 tools per request' },
  'claude-code': undefined,
  'claude-desktop': undefined,
  codex: undefined
}

export const CLIENT_NAMES: Readonly<Record<ClientKind, string>> = {
  cursor: 'Cursor',
  vscode: 'VS Code',
  'claude-code': 'Claude Code',
  'claude-desktop': 'Claude Desktop',
  codex: 'Codex'
}

export interface SnippetInput {
  client: ClientKind
  /** The name the host shows for the server. */
  server: string
  url: string
  /** The environment variable holding the API key or token; undefined when the gateway has no auth. */
  tokenEnv: string | undefined
}

export interface Snippet {
  /** Where it goes, in a few words. */
  where: string
  /** The snippet alone, ready to paste (or pipe into a file). */
  text: string
}

export function clientSnippet ({ client, server, url, tokenEnv }: SnippetInput): Snippet {
  switch (client) {
    case 'cursor':
      return {
        where: 'in ~/.cursor/mcp.json (or .cursor/mcp.json in a project)',
        text: json({
          mcpServers: { [server]: { url, ...(tokenEnv === undefined ? {} : { headers: { Authorization: `Bearer \${env:${tokenEnv}}` } }) } }
        })
      }
    case 'vscode':
      return {
        where: `in .vscode/mcp.json${tokenEnv === undefined ? '' : ' (VS Code asks for the key once and keeps it in its secret storage)'}`,
        text: json({
          servers: { [server]: { type: 'http', url, ...(tokenEnv === undefined ? {} : { headers: { Authorization: `Bearer \${input:${server}-token}` } }) } },
          ...(tokenEnv === undefined ? {} : { inputs: [{ type: 'promptString', id: `${server}-token`, description: `API key or token for ${server}`, password: true }] })
        })
      }
    case 'claude-code':
      return {
        where: `run once in a shell${tokenEnv === undefined ? '' : ` where $${tokenEnv} holds the key`}`,
        text: `claude mcp add --transport http ${server} ${url}${tokenEnv === undefined ? '' : ` --header "Authorization: Bearer $${tokenEnv}"`}\n`
      }
    case 'claude-desktop':
      return {
        where: `in claude_desktop_config.json: Claude Desktop starts local servers only, so mcp-remote bridges to the gateway${tokenEnv === undefined ? '' : '; put the key in AUTH_HEADER'}`,
        text: json({ mcpServers: { [server]: mcpRemote(url, tokenEnv) } })
      }
    case 'codex':
      return {
        where: `in ~/.codex/config.toml${tokenEnv === undefined ? '' : ` (Codex reads the key from $${tokenEnv})`}`,
        text: `[mcp_servers.${server}]\nurl = ${JSON.stringify(url)}\n${tokenEnv === undefined ? '' : `bearer_token_env_var = ${JSON.stringify(tokenEnv)}\n`}`
      }
  }
}

/**
 * The header rides in an env variable, not in `args`: some hosts pass args to npx unquoted, which
 * splits "Authorization: Bearer …" at the space. mcp-remote refuses plain http beyond localhost.
 */
function mcpRemote (url: string, tokenEnv: string | undefined): Record<string, unknown> {
  const insecure = url.startsWith('http://') && !/^http:\/\/(localhost|127\.0\.0\.1)[:/]/.test(url)
  // eslint-disable-next-line no-template-curly-in-string -- mcp-remote expands ${AUTH_HEADER} from its env itself
  const args = ['-y', 'mcp-remote', url, ...(insecure ? ['--allow-http'] : []), ...(tokenEnv === undefined ? [] : ['--header', 'Authorization:${AUTH_HEADER}'])]
  return { command: 'npx', args, ...(tokenEnv === undefined ? {} : { env: { AUTH_HEADER: `Bearer <the key in $${tokenEnv}>` } }) }
}

function json (value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`
}

/** The line that says how many tools the host will see and whether that is too many for it; undefined for a search endpoint. */
export function toolCountWarning (client: ClientKind, tools: number): string | undefined {
  const known = TOOL_LIMITS[client]
  if (known === undefined || tools <= known.limit) return undefined
  return `warning: ${CLIENT_NAMES[client]} will be offered ${tools} tools, more than its limit of ${known.limit} (${known.why}); narrow the endpoint (tools.include, upstreams, annotations) or set discovery: search`
}

export function limitNote (client: ClientKind): string {
  const known = TOOL_LIMITS[client]
  return known === undefined ? `no tool limit is known for ${CLIENT_NAMES[client]}` : `${CLIENT_NAMES[client]} takes at most ${known.limit}`
}
