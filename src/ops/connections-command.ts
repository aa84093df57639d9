import { parseArgs } from 'node:util'
import type { GatewayConfig } from '../config/schema.ts'
import type { AdminConnectionsView } from './admin-service.ts'
import { visibleText } from '../protocol/visible-text.ts'
import { isCommandResult, loadCommandConfig, type CommandResult } from './command-result.ts'

export const CONNECTIONS_USAGE = `  switchboard connections list --config <file> [--admin-url <url>] [--principals]
                                         the grants users hold at upstreams, counted per upstream and auth type
                                         (--principals: their principal keys too; never a token); asks the running
                                         gateway's admin API (admin.listen and admin.token of the config, or --admin-url)
  switchboard connections revoke --config <file> [--admin-url <url>] <upstream> <principal>
                                         revokes the principal's grant at the authorization server (where it offers
                                         revocation) and forgets it; <principal> is its key as list shows it (jwt:alice,
                                         api-key:ci-bot); exit 1 when there was none`

/** An admin request answers within this, or the command fails (the gateway is not running there). */
const ADMIN_TIMEOUT_MS = 10_000
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]'])

interface ConnectionsArgs { config?: string, 'admin-url'?: string, principals?: boolean }

function usage (message: string): CommandResult {
  return { code: 2, stdout: '', stderr: `switchboard connections: ${message}\nusage:\n${CONNECTIONS_USAGE}\n` }
}

const failed = (message: string): CommandResult => ({ code: 1, stdout: '', stderr: `switchboard connections: ${message}\n` })

/** The admin API's base: --admin-url, else admin.listen (a wildcard bind is reached on loopback). */
function adminBase (admin: NonNullable<GatewayConfig['admin']>, given: string | undefined): string {
  if (given !== undefined) return given.replace(/\/+$/, '').replace(/\/admin$/, '')
  const { host, port } = admin.listen
  const shown = WILDCARD_HOSTS.has(host) ? '127.0.0.1' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
  return `http://${shown}:${port}`
}

/**
 * `switchboard connections list|revoke`: through the running gateway's admin API, which alone can
 * revoke at the authorization server. Never touches process.* itself; never prints a token.
 */
export async function connectionsCommand (argv: string[], env: NodeJS.ProcessEnv): Promise<CommandResult> {
  let values: ConnectionsArgs
  let positionals: string[]
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { config: { type: 'string', short: 'c' }, 'admin-url': { type: 'string' }, principals: { type: 'boolean' } },
      allowPositionals: true
    }))
  } catch (err: unknown) {
    return usage((err as Error).message)
  }
  const [action, ...rest] = positionals
  if (action !== 'list' && action !== 'revoke') return usage('expected list or revoke')
  if (action === 'list' && rest.length > 0) return usage('list takes no arguments')
  if (action === 'revoke' && rest.length !== 2) return usage('revoke needs <upstream> <principal>')
  const adminUrl = values['admin-url']
  if (adminUrl !== undefined && !/^https?:\/\/[^/]/.test(adminUrl)) return usage(`--admin-url must be an http(s) URL, got ${adminUrl}`)
  const file = values.config ?? env.SWITCHBOARD_CONFIG
  if (file === undefined) return usage('--config <file> is required')
  const config = await loadCommandConfig(file, env)
  if (isCommandResult(config)) return config
  if (config.admin === undefined) return failed(`${file} has no admin section: the admin API is off, so connections cannot be listed or revoked`)
  const base = adminBase(config.admin, adminUrl)
  const headers = { authorization: `Bearer ${config.admin.token}` }
  try {
    if (action === 'list') {
      const res = await fetch(`${base}/admin/connections${values.principals === true ? '?principals=1' : ''}`, { headers, signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS) })
      if (!res.ok) return failed(`the admin API answered HTTP ${res.status}: ${await res.text()}`)
      return { code: 0, stdout: listText(await res.json() as AdminConnectionsView), stderr: '' }
    }
    const [upstream, principal] = rest as [string, string]
    const res = await fetch(`${base}/admin/connections/${encodeURIComponent(upstream)}/${encodeURIComponent(principal)}`, { method: 'DELETE', headers, signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS) })
    if (res.status === 404) return failed(`principal ${principal} has no connection at upstream ${upstream}`)
    if (!res.ok) return failed(`the admin API answered HTTP ${res.status}: ${await res.text()}`)
    return { code: 0, stdout: `revoked ${visibleText(`${upstream}/${principal}`)}\n`, stderr: '' }
  } catch (err: unknown) {
    return failed(`cannot reach the admin API at ${base}: ${err instanceof Error ? err.message : String(err)}`)
  }
}

function listText (view: AdminConnectionsView): string {
  if (view.upstreams.length === 0) return 'no connections\n'
  // Principals are token subjects: a U+202E in one must not reorder what the operator reads.
  const width = Math.max(...view.upstreams.map(u => visibleText(u.upstream).length))
  const lines: string[] = []
  for (const u of view.upstreams) {
    lines.push(`${visibleText(u.upstream).padEnd(width)}  ${u.type.padEnd(18)}  ${u.connections} connection(s)`)
    for (const principal of u.principals ?? []) lines.push(`  ${visibleText(principal)}`)
  }
  return lines.join('\n') + '\n'
}
