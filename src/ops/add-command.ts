import { readFile, writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { Document, isMap, isSeq, parseDocument, type Node, type YAMLMap } from 'yaml'
import { ConfigError, parseConfig } from '../config/load-config.ts'
import { envReferences } from '../config/expand-env.ts'
import { DEFAULT_REGISTRY_URL, RegistryError, createRegistryClient } from '../registry/registry-client.ts'
import { buildUpstreamEntry, type BuiltEntry } from '../registry/upstream-entry.ts'
import { isUpstreamName } from '../registry/upstream-name.ts'
import type { CommandResult } from './command-result.ts'

export const ADD_USAGE = `  switchboard add <server name> [--registry <url>] [--config <file> [--write]] [--as <name>] [--package | --remote]
                                         an upstream entry made from the server.json an MCP Registry publishes
                                         (default ${DEFAULT_REGISTRY_URL}): a package (npm → npx, PyPI → uvx,
                                         OCI → docker) when there is one, else its remote (--package/--remote pick);
                                         what you must supply becomes \${VAR} references. Prints it as YAML, or with
                                         --write appends it to the config's upstreams; checked as validate checks
                                         (exit 1: no such server, nothing runnable, name taken, invalid; 3: registry down)`

/**
 * Stands in, while checking, for a variable the environment does not have yet: `add` checks the
 * config's shape, and the variables are set where the gateway runs, not in this shell. Long enough
 * for the fields with a minimum length (admin.token).
 */
const UNSET_PLACEHOLDER = 'set-before-the-gateway-starts'

interface AddArgs { registry?: string, config?: string, write?: boolean, as?: string, package?: boolean, remote?: boolean }

function usage (message: string): CommandResult {
  return { code: 2, stdout: '', stderr: `switchboard add: ${message}\nusage:\n${ADD_USAGE}\n` }
}

const failed = (message: string, code = 1): CommandResult => ({ code, stdout: '', stderr: `switchboard add: ${message}\n` })

export function isRegistryUrl (url: string): boolean {
  try {
    const parsed = new URL(url)
    return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.username === '' && parsed.password === ''
  } catch {
    return false
  }
}

/** The entry as a YAML node, its comments attached where they belong. */
function entryNode (doc: Document, built: BuiltEntry): YAMLMap {
  const node = doc.createNode(built.entry) as YAMLMap
  node.commentBefore = built.header.map(line => ` ${line}`).join('\n')
  for (const { path, text } of built.comments) {
    const target = node.getIn(path, true) as Node | undefined
    if (target !== undefined) target.comment = target.comment === undefined || target.comment === null ? ` ${text}` : `${target.comment}; ${text}`
  }
  return node
}

/** Every ${VAR} the entry needs that the environment does not have (and no default covers). */
function unsetReferences (entry: unknown, env: NodeJS.ProcessEnv, out = new Set<string>()): Set<string> {
  if (typeof entry === 'string') {
    for (const ref of envReferences(entry)) if (ref.fallback === undefined && env[ref.name] === undefined) out.add(ref.name)
  } else if (Array.isArray(entry)) {
    for (const item of entry) unsetReferences(item, env, out)
  } else if (typeof entry === 'object' && entry !== null) {
    for (const value of Object.values(entry)) unsetReferences(value, env, out)
  }
  return out
}

/** Runs the validate command's own check on `text`; the variables in `unset` count as set. */
function check (text: string, env: NodeJS.ProcessEnv, unset: Set<string>, source: string, file?: string): string | undefined {
  const withPlaceholders: NodeJS.ProcessEnv = { ...env }
  for (const name of unset) withPlaceholders[name] = UNSET_PLACEHOLDER
  try {
    parseConfig(text, withPlaceholders, source, file)
    return undefined
  } catch (err: unknown) {
    if (err instanceof ConfigError) return err.message
    throw err
  }
}

function existingNames (doc: Document): string[] {
  const upstreams = doc.get('upstreams')
  if (!isSeq(upstreams)) return []
  return upstreams.items.flatMap(item => {
    const name = isMap(item) ? item.get('name') : undefined
    return typeof name === 'string' ? [name] : []
  })
}

/**
 * `switchboard add`: asks the registry for the server's latest server.json and makes an upstream of it.
 * Never touches process.* itself; never writes a value for a secret, only references to the environment.
 */
export async function addCommand (argv: string[], env: NodeJS.ProcessEnv): Promise<CommandResult> {
  let values: AddArgs
  let positionals: string[]
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { registry: { type: 'string' }, config: { type: 'string', short: 'c' }, write: { type: 'boolean' }, as: { type: 'string' }, package: { type: 'boolean' }, remote: { type: 'boolean' } },
      allowPositionals: true
    }))
  } catch (err: unknown) {
    return usage((err as Error).message)
  }
  if (positionals.length !== 1) return usage('give exactly one server name, as the registry spells it (e.g. io.github.upstash/context7; find it with switchboard search)')
  const serverName = positionals[0] ?? ''
  const registry = values.registry ?? DEFAULT_REGISTRY_URL
  if (!isRegistryUrl(registry)) return usage(`--registry must be an http(s) URL without credentials, got ${registry}`)
  if (values.package === true && values.remote === true) return usage('--package and --remote exclude each other')
  if (values.as !== undefined && !isUpstreamName(values.as)) return usage(`--as must be an upstream name (^[a-z][a-z0-9-]*$), got ${values.as}`)
  const file = values.config ?? (values.write === true ? env.SWITCHBOARD_CONFIG : undefined)
  if (values.write === true && file === undefined) return usage('--write needs --config <file>')

  let latest
  try {
    latest = await createRegistryClient(registry).latest(serverName)
  } catch (err: unknown) {
    if (!(err instanceof RegistryError)) throw err
    if (err.failure === 'not-found') return failed(`no server named ${serverName} in the registry at ${registry.replace(/\/+$/, '')} (names look like io.github.owner/name; find one with switchboard search <words>)`)
    return failed(err.message, 3)
  }
  const { server } = latest
  // The registry still serves a deprecated server; the operator should know before adding it.
  const status = latest.status === undefined ? '' : `warning: the registry marks ${serverName} ${latest.status}${latest.statusMessage === undefined ? '' : `: ${latest.statusMessage.replace(/\s+/g, ' ').slice(0, 200)}`}\n`
  const source = values.package === true ? 'package' : values.remote === true ? 'remote' : undefined
  const built = buildUpstreamEntry(server, { ...(values.as === undefined ? {} : { name: values.as }), ...(source === undefined ? {} : { source }) })
  if ('error' in built) return failed(built.error)
  const unset = unsetReferences(built.entry, env)
  const notes = unset.size === 0 ? '' : `before the gateway starts, set in its environment: ${[...unset].sort().join(', ')}\n`

  if (file === undefined) {
    const doc = new Document()
    const seq = doc.createNode([]) as ReturnType<typeof doc.createNode> & { items: unknown[] }
    seq.items.push(entryNode(doc, built))
    doc.contents = seq
    const problem = check(new Document({ upstreams: [built.entry] }).toString(), env, unset, `the entry for ${serverName}`)
    if (problem !== undefined) return failed(`the entry made for ${serverName} does not validate (please report it):\n${problem}`)
    return { code: 0, stdout: `# under upstreams: in your config\n${doc.toString()}`, stderr: `${status}${built.name}: ${built.kind}, from ${serverName}\n${notes}` }
  }

  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err: unknown) {
    return failed(`cannot read config ${file}: ${(err as Error).message}`)
  }
  const doc = parseDocument(text)
  if (doc.errors.length > 0) return failed(`${file} is not valid YAML: ${doc.errors[0]?.message ?? ''}`)
  if (existingNames(doc).includes(built.name)) return failed(`${file} already has an upstream named ${built.name}; nothing written (choose another name with --as <name>)`)
  const node = entryNode(doc, built)
  const upstreams = doc.get('upstreams')
  if (isSeq(upstreams)) {
    // A flow sequence ([…]) cannot hold the entry's comments: the list becomes a block one.
    upstreams.flow = false
    upstreams.items.push(node)
  } else if (upstreams === undefined || upstreams === null) {
    const seq = doc.createNode([]) as ReturnType<typeof doc.createNode> & { items: unknown[] }
    seq.items.push(node)
    doc.set('upstreams', seq)
  } else {
    return failed(`${file}: upstreams is not a list; nothing written`)
  }
  const updated = doc.toString()
  const problem = check(updated, env, unsetReferences(doc.toJS(), env), file, file)
  if (problem !== undefined) return failed(`with the new entry, the config would not validate; nothing written:\n${problem}`)
  if (values.write !== true) {
    return { code: 0, stdout: `# under upstreams: in ${file}\n${new Document([node]).toString()}`, stderr: `${status}${built.name}: ${built.kind}, from ${serverName}; checked against ${file} (--write appends it)\n${notes}` }
  }
  await writeFile(file, updated)
  return { code: 0, stdout: '', stderr: `${status}added upstream ${built.name} (${built.kind}, from ${serverName}) to ${file}\n${notes}` }
}
