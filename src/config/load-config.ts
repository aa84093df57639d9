import { readFile } from 'node:fs/promises'
import { parse as parseYaml, YAMLParseError } from 'yaml'
import { configSchema, type GatewayConfig } from './schema.ts'
import { formatPath, schemaIssues, type ConfigIssue } from './config-issues.ts'
import { envReferences, expandEnv, type EnvIssue } from './expand-env.ts'
import { resolvePinFile } from './pinning-schema.ts'
import { inheritRedisUrl } from './redis-schema.ts'
import { perUserIsolation } from './per-user-isolation.ts'
import { SwitchboardError } from '../errors.ts'

export type { ConfigIssue } from './config-issues.ts'

// eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax, shown to the user
const EXAMPLE_TOKEN_REFERENCE = '${SWITCHBOARD_ADMIN_TOKEN}'

export class ConfigError extends SwitchboardError {
  readonly issues: readonly ConfigIssue[]
  constructor (issues: ConfigIssue[], source: string) {
    super('SB_ERR_CONFIG_INVALID', `${source}: ${issues.length} error(s)\n${issues.map(i => `  ${i.path}: ${i.message}`).join('\n')}`)
    this.issues = issues
  }
}

/** Sections whose `token` is a secret that must come from the environment. */
const TOKEN_SECTIONS = ['admin', 'metrics'] as const

/**
 * Checked on the raw document: after expansion a token from the environment and one typed in look
 * alike. A default (${VAR:-…}) is typed in too.
 */
function literalTokenIssue (doc: unknown, section: typeof TOKEN_SECTIONS[number]): ConfigIssue | undefined {
  if (typeof doc !== 'object' || doc === null) return undefined
  const block = (doc as Record<string, unknown>)[section]
  if (typeof block !== 'object' || block === null) return undefined
  const token = (block as { token?: unknown }).token
  if (typeof token !== 'string') return undefined
  const references = envReferences(token)
  // A malformed reference is reported where it is expanded.
  if (references.length === 0 && token.replaceAll('$${', '').includes('${')) return undefined
  const example = section === 'admin' ? EXAMPLE_TOKEN_REFERENCE : `\${SWITCHBOARD_${section.toUpperCase()}_TOKEN}`
  if (references.length === 0) return { path: `${section}.token`, message: `must come from the environment, e.g. "${example}": a secret never sits in the config file` }
  if (references.some(r => r.fallback !== undefined)) return { path: `${section}.token`, message: `must come from the environment without a default, e.g. "${example}": a default would put the secret in the config file` }
  return undefined
}

function deepFreeze<T> (value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const v of Object.values(value)) deepFreeze(v)
  }
  return value
}

/**
 * Parses YAML text into a validated, defaulted, frozen config; throws ConfigError listing every problem.
 * `file`: the path the text was read from; paths in the config (pinning.file) are resolved against it.
 * Without it, a file pin store with no pinning.file keeps its pins in memory only.
 */
export function parseConfig (text: string, env: NodeJS.ProcessEnv, source = 'config', file?: string): GatewayConfig {
  let doc: unknown
  try {
    doc = parseYaml(text) ?? {}
  } catch (err: unknown) {
    const message = err instanceof YAMLParseError ? err.message : String(err)
    throw new ConfigError([{ path: '(root)', message: `not valid YAML: ${message}` }], source)
  }
  const issues: ConfigIssue[] = []
  for (const section of TOKEN_SECTIONS) {
    const tokenIssue = literalTokenIssue(doc, section)
    if (tokenIssue !== undefined) issues.push(tokenIssue)
  }
  const envIssues: EnvIssue[] = []
  const input = perUserIsolation(inheritRedisUrl(expandEnv(doc, env, envIssues)))
  for (const issue of envIssues) issues.push({ path: formatPath(issue.path), message: issue.message })
  const result = configSchema.safeParse(input)
  if (!result.success) issues.push(...schemaIssues(result.error, input, configSchema))
  if (issues.length > 0) throw new ConfigError(issues, source)
  const config = result.data as GatewayConfig
  if (file !== undefined && config.pinning.store === 'file') config.pinning = { ...config.pinning, file: resolvePinFile(config.pinning.file, file) }
  return deepFreeze(config)
}

export async function loadConfig (file: string, env: NodeJS.ProcessEnv): Promise<GatewayConfig> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err: unknown) {
    throw new SwitchboardError('SB_ERR_CONFIG_READ', `cannot read config ${file}: ${(err as Error).message}`, { cause: err })
  }
  return parseConfig(text, env, file, file)
}
