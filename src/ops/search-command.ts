import { parseArgs } from 'node:util'
import { DEFAULT_REGISTRY_URL, RegistryError, createRegistryClient } from '../registry/registry-client.ts'
import { defaultKind, pickRemote, type ServerDetail } from '../registry/server-json.ts'
import { isRegistryUrl } from './add-command.ts'
import type { CommandResult } from './command-result.ts'

export const SEARCH_USAGE = `  switchboard search <words> [--registry <url>] [--limit <n>]
                                         servers of an MCP Registry whose name (official registry: or description)
                                         contains the words: name, version, what switchboard add would make of it
                                         (npm, pypi, oci, remote), description (exit 1: none; 3: registry down)`

const DEFAULT_LIMIT = 20
const MAX_LIMIT = 100
const MAX_DESCRIPTION = 80

function usage (message: string): CommandResult {
  return { code: 2, stdout: '', stderr: `switchboard search: ${message}\nusage:\n${SEARCH_USAGE}\n` }
}

/** What `add` would make: the package type, or the remote's transport; `-` when nothing can be run. */
function kindOf (server: ServerDetail): string {
  const kind = defaultKind(server)
  if (kind === undefined) return '-'
  if (kind === 'streamable-http' || kind === 'sse') return `remote (${kind})`
  return pickRemote(server) === undefined ? kind : `${kind} (+remote)`
}

function oneLine (text: string | undefined): string {
  // A description is the publisher's text: no control characters reach the terminal.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  const flat = (text ?? '').replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]+/g, ' ').replace(/\s+/g, ' ').trim()
  return flat.length > MAX_DESCRIPTION ? `${flat.slice(0, MAX_DESCRIPTION - 1)}…` : flat
}

/** `switchboard search`: one page of the registry's matches as a table. Never touches process.* itself. */
export async function searchCommand (argv: string[], _env: NodeJS.ProcessEnv): Promise<CommandResult> {
  let values: { registry?: string, limit?: string }
  let positionals: string[]
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: { registry: { type: 'string' }, limit: { type: 'string' } }, allowPositionals: true }))
  } catch (err: unknown) {
    return usage((err as Error).message)
  }
  const words = positionals.join(' ').trim()
  if (words === '') return usage('give the words to look for')
  const registry = values.registry ?? DEFAULT_REGISTRY_URL
  if (!isRegistryUrl(registry)) return usage(`--registry must be an http(s) URL without credentials, got ${registry}`)
  const limit = values.limit === undefined ? DEFAULT_LIMIT : Number(values.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return usage(`--limit must be a whole number from 1 to ${MAX_LIMIT}, got ${values.limit ?? ''}`)
  let page
  try {
    page = await createRegistryClient(registry).search(words, limit)
  } catch (err: unknown) {
    if (!(err instanceof RegistryError)) throw err
    return { code: 3, stdout: '', stderr: `switchboard search: ${err.message}\n` }
  }
  const servers = page.servers.slice(0, limit)
  if (servers.length === 0) return { code: 1, stdout: '', stderr: `switchboard search: no server in the registry matches "${words}"\n` }
  const rows = servers.map(s => [oneLine(s.name), oneLine(s.version ?? '-'), kindOf(s), oneLine(s.description)])
  const widths = [0, 1, 2].map(i => Math.max(...rows.map(r => (r[i] ?? '').length), ['NAME', 'VERSION', 'ADD MAKES'][i]?.length ?? 0))
  const line = (cells: string[]): string => cells.map((c, i) => i < 3 ? c.padEnd(widths[i] ?? 0) : c).join('  ').trimEnd()
  const more = page.nextCursor === undefined ? '' : `more servers match: narrow the words or raise --limit (at most ${MAX_LIMIT})\n`
  return { code: 0, stdout: [line(['NAME', 'VERSION', 'ADD MAKES', 'DESCRIPTION']), ...rows.map(line)].join('\n') + '\n', stderr: more }
}
