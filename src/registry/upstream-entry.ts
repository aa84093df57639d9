import { envName, upstreamNameFor } from './upstream-name.ts'
import { pickPackage, pickRemote, type RegistryArgument, type RegistryInput, type RegistryKeyValue, type RegistryPackage, type RunnableRegistryType, type ServerDetail } from './server-json.ts'

// server.json → one upstream entry of our config. Every value a person must supply becomes a ${VAR}
// reference (expanded when the config loads), never a literal: a declared environment variable keeps
// its own name; a value this module has to name (a header, an argument, a {variable}) is called
// <UPSTREAM>_<LABEL>, so two servers' "Authorization" or "token" never share one variable.

export type EntrySource = 'package' | 'remote'

/** A YAML comment for the node at `path` inside the entry (['env', 'API_KEY'], ['args', 3]). */
export interface EntryComment { path: Array<string | number>, text: string }

export interface BuiltEntry {
  name: string
  kind: RunnableRegistryType | 'streamable-http' | 'sse'
  entry: Record<string, unknown>
  comments: EntryComment[]
  /** Lines for the comment above the entry: where it comes from, what was left out. */
  header: string[]
  /** Variables the entry references without a default: the gateway will not start until they are set. */
  required: string[]
}

export type BuildResult = BuiltEntry | { error: string }

const MAX_DESCRIPTION_IN_COMMENT = 70

function short (text: string | undefined): string {
  if (text === undefined || text.trim() === '') return ''
  // The publisher's text goes into a YAML comment: one line, no control characters.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  const one = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim()
  return one.length > MAX_DESCRIPTION_IN_COMMENT ? `${one.slice(0, MAX_DESCRIPTION_IN_COMMENT - 1)}…` : one
}

/** Literal text as our config reads it: a `${` in it is not a reference. */
function literal (text: string): string {
  return text.replaceAll('${', () => '$${')
}

class EntryBuilder {
  readonly comments: EntryComment[] = []
  readonly header: string[] = []
  readonly required = new Set<string>()
  constructor (readonly upstream: string) {}

  /** A reference for a value the operator supplies: ${VAR} when there is no default, ${VAR:-default} else. */
  reference (variable: string, input: RegistryInput): string {
    if (input.default !== undefined && input.isSecret !== true) return `\${${variable}:-${input.default.replaceAll('}', '')}}`
    if (input.isRequired === true) {
      this.required.add(variable)
      return `\${${variable}}`
    }
    return `\${${variable}:-}`
  }

  note (variable: string, input: RegistryInput): string {
    const what = input.isSecret === true ? `secret: set ${variable} in the environment` : input.isRequired === true ? `required: set ${variable} in the environment` : `optional: ${variable}`
    const description = short(input.description)
    return description === '' ? what : `${what} (${description})`
  }

  /**
   * A value with {variables}: fixed text kept (escaped), each variable a reference named <UPSTREAM>_<VARIABLE>.
   * `undeclared`: what a {name} missing from `variables` stands for. The schema keeps it as text, but
   * publishers write headers as "Bearer {api_key}" without declaring api_key: there it is an input.
   */
  template (value: string, variables: Record<string, RegistryInput> | undefined, path: Array<string | number>, undeclared?: RegistryInput): string {
    const notes: string[] = []
    const out = literal(value).replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, key: string) => {
      const variable = variables?.[key] ?? undeclared
      if (variable === undefined) return whole
      if (variable.value !== undefined) return literal(variable.value)
      const ref = envName(this.upstream, key)
      if (variable.isSecret === true || variable.isRequired === true) notes.push(this.note(ref, variable))
      return this.reference(ref, variable)
    })
    if (notes.length > 0) this.comments.push({ path, text: notes.join('; ') })
    return out
  }

  /** A declared input (environment variable, header) → its value in our config, with a comment when it matters. */
  input (item: RegistryKeyValue, variable: string, path: Array<string | number>, undeclared?: RegistryInput): string {
    if (item.value !== undefined) return this.template(item.value, item.variables, path, undeclared)
    if (item.isSecret === true || item.isRequired === true || item.default === undefined) this.comments.push({ path, text: this.note(variable, item) })
    return this.reference(variable, item)
  }

  /** Command-line words for the arguments; optional ones with nothing to give are listed in the header instead. */
  arguments (list: RegistryArgument[] | undefined, args: string[], skip: (arg: RegistryArgument) => boolean = () => false): void {
    for (const arg of list ?? []) {
      if (skip(arg)) continue
      const label = arg.type === 'named' ? (arg.name ?? '') : (arg.valueHint ?? 'arg')
      if (arg.type === 'named' && arg.format === 'boolean' && arg.name !== undefined) {
        // A flag: present when its value (or default) is true.
        if ((arg.value ?? arg.default) === 'true') args.push(arg.name)
        continue
      }
      let value: string | undefined
      if (arg.value !== undefined) value = this.template(arg.value, arg.variables, ['args', args.length + (arg.type === 'named' ? 1 : 0)])
      else if (arg.default !== undefined && arg.isSecret !== true) value = literal(arg.default)
      else if (arg.isRequired === true || arg.isSecret === true) {
        const ref = envName(this.upstream, label)
        this.comments.push({ path: ['args', args.length + (arg.type === 'named' ? 1 : 0)], text: this.note(ref, { ...arg, isRequired: true }) })
        value = this.reference(ref, { ...arg, isRequired: true, default: undefined })
      }
      if (value === undefined) {
        this.header.push(`optional argument ${label} not set${arg.description === undefined ? '' : ` (${short(arg.description)})`}`)
        continue
      }
      if (arg.type === 'named' && arg.name !== undefined) args.push(arg.name)
      args.push(value)
    }
  }
}

/** The image reference `docker run` takes: the identifier, with the version as its tag when it has none. */
function imageOf (pkg: RegistryPackage): string {
  const lastPart = pkg.identifier.slice(pkg.identifier.lastIndexOf('/') + 1)
  const tagged = lastPart.includes(':') || pkg.identifier.includes('@')
  return tagged || pkg.version === undefined ? pkg.identifier : `${pkg.identifier}:${pkg.version}`
}

function untagged (image: string): string {
  const at = image.indexOf('@')
  const noDigest = at < 0 ? image : image.slice(0, at)
  const slash = noDigest.lastIndexOf('/')
  const colon = noDigest.lastIndexOf(':')
  return colon > slash ? noDigest.slice(0, colon) : noDigest
}

const DOCKER_DEFAULTS = new Set(['-i', '--interactive', '--rm'])

function packageEntry (b: EntryBuilder, pkg: RegistryPackage & { registryType: RunnableRegistryType }): Record<string, unknown> {
  const args: string[] = []
  const env: Record<string, string> = {}
  for (const variable of pkg.environmentVariables ?? []) {
    // A declared name our ${VAR} syntax cannot spell (a dash, a dot) is referenced under a name it can.
    const reference = /^[A-Za-z_][A-Za-z0-9_]*$/.test(variable.name) ? variable.name : envName(b.upstream, variable.name)
    env[variable.name] = b.input(variable, reference, ['env', variable.name])
  }
  let command: string
  if (pkg.registryType === 'oci') {
    command = 'docker'
    const image = imageOf(pkg)
    args.push('run', '-i', '--rm')
    // docker passes only what -e names into the container; the values stay in the docker CLI's env, off its argv.
    for (const name of Object.keys(env)) args.push('-e', name)
    // Publishers often spell out the whole `docker run -i --rm … <image>`; what we already add is dropped.
    b.arguments(pkg.runtimeArguments, args, arg => (arg.type === 'positional' && (arg.value === 'run' || (arg.value !== undefined && untagged(arg.value) === untagged(image)))) ||
      (arg.type === 'named' && arg.name !== undefined && DOCKER_DEFAULTS.has(arg.name)))
    args.push(image)
  } else if (pkg.registryType === 'npm') {
    command = 'npx'
    args.push('-y')
    b.arguments(pkg.runtimeArguments, args, arg => arg.type === 'named' && (arg.name === '-y' || arg.name === '--yes'))
    args.push(pkg.version === undefined ? pkg.identifier : `${pkg.identifier}@${pkg.version}`)
  } else {
    command = 'uvx'
    b.arguments(pkg.runtimeArguments, args)
    args.push(pkg.version === undefined ? pkg.identifier : `${pkg.identifier}==${pkg.version}`)
  }
  if (pkg.version === undefined && pkg.registryType !== 'oci') b.header.push('the package names no version: the newest is run each time it starts')
  b.arguments(pkg.packageArguments, args)
  moveDockerSecrets(command, args, env, b)
  return { transport: 'stdio', command, args, ...(Object.keys(env).length === 0 ? {} : { env }) }
}

/**
 * docker -e NAME=${REF}: the value would sit in docker's argv, readable by anyone on the host (ps).
 * As -e NAME with NAME=${REF} in the entry's env, docker reads it from its own environment instead.
 */
function moveDockerSecrets (command: string, args: string[], env: Record<string, string>, b: EntryBuilder): void {
  if (command !== 'docker') return
  for (let i = 1; i < args.length; i++) {
    const flag = args[i - 1]
    const value = args[i] ?? ''
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*\$\{.*)$/s.exec(value)
    if ((flag !== '-e' && flag !== '--env') || match === null) continue
    const [, name = '', rest = ''] = match
    env[name] = rest
    args[i] = name
    for (const comment of b.comments) {
      if (comment.path[0] === 'args' && comment.path[1] === i) comment.path = ['env', name]
    }
  }
}

function remoteEntry (b: EntryBuilder, remote: NonNullable<ReturnType<typeof pickRemote>>): Record<string, unknown> {
  const headers: Record<string, string> = {}
  for (const header of remote.headers ?? []) {
    headers[header.name] = b.input(header, envName(b.upstream, header.name), ['headers', header.name], { isRequired: true, isSecret: header.isSecret })
  }
  const url = b.template(remote.url ?? '', remote.variables, ['url'], { isRequired: true })
  return { transport: remote.type, url, ...(Object.keys(headers).length === 0 ? {} : { headers }) }
}

/** The upstream entry for `server`: from a package unless `source` is remote or there is none; from a remote otherwise. */
export function buildUpstreamEntry (server: ServerDetail, options: { name?: string, source?: EntrySource }): BuildResult {
  const name = options.name ?? upstreamNameFor(server.name)
  const b = new EntryBuilder(name)
  const pkg = options.source === 'remote' ? undefined : pickPackage(server)
  const remote = options.source === 'package' ? undefined : pickRemote(server)
  const offered = [...(server.packages ?? []).map(p => `${p.registryType} package`), ...(server.remotes ?? []).map(r => `${r.type} remote`)]
  let body: Record<string, unknown>
  let kind: BuiltEntry['kind']
  if (pkg !== undefined) {
    body = packageEntry(b, pkg)
    kind = pkg.registryType
  } else if (remote !== undefined) {
    body = remoteEntry(b, remote)
    kind = remote.type as 'streamable-http' | 'sse'
  } else {
    const wanted = options.source === undefined ? 'an npm, PyPI or OCI package run over stdio, or a streamable-http or sse remote' : options.source === 'package' ? 'an npm, PyPI or OCI package run over stdio' : 'a streamable-http or sse remote'
    return { error: `${server.name} offers ${offered.length === 0 ? 'nothing to run' : offered.join(', ')}; switchboard add needs ${wanted}` }
  }
  const version = server.version === undefined ? '' : ` ${server.version}`
  b.header.unshift(`${server.name}${version}${server.description === undefined ? '' : `: ${short(server.description)}`}`)
  const others = offered.filter(o => !o.startsWith(`${kind} `))
  const hint = pkg !== undefined && pickRemote(server) !== undefined ? ' (switchboard add --remote picks the remote)' : ''
  if (others.length > 0) b.header.splice(1, 0, `also offered: ${others.join(', ')}${hint}`)
  return { name, kind, entry: { name, ...body }, comments: b.comments, header: b.header, required: [...b.required] }
}
