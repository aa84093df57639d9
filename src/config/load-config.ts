import { readFile } from 'node:fs/promises'
import { parse as parseYaml, YAMLParseError } from 'yaml'
import type { z } from 'zod'
import { configSchema, type GatewayConfig } from './schema.ts'
import { resolvePinFile } from './pinning-schema.ts'
import { inheritRedisUrl } from './redis-schema.ts'
import { SwitchboardError } from '../errors.ts'

export interface ConfigIssue { path: string, message: string }

export class ConfigError extends SwitchboardError {
  readonly issues: readonly ConfigIssue[]
  constructor (issues: ConfigIssue[], source: string) {
    super('SB_ERR_CONFIG_INVALID', `${source}: ${issues.length} error(s)\n${issues.map(i => `  ${i.path}: ${i.message}`).join('\n')}`)
    this.issues = issues
  }
}

const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

function formatPath (path: ReadonlyArray<PropertyKey>): string {
  let out = ''
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`
  return out === '' ? '(root)' : out
}

/** Expands ${VAR} in every string of the parsed document, so a value can never inject YAML structure. */
function expandEnv (value: unknown, env: NodeJS.ProcessEnv, path: PropertyKey[], issues: ConfigIssue[]): unknown {
  if (typeof value === 'string') {
    return value.replace(VAR, (_match, name: string) => {
      const found = env[name]
      if (found === undefined) {
        issues.push({ path: formatPath(path), message: `environment variable ${name} is not set` })
        return ''
      }
      return found
    })
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, [...path, i], issues))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = expandEnv(v, env, [...path, k], issues)
    return out
  }
  return value
}

/** Sections whose `token` is a secret that must come from the environment. */
const TOKEN_SECTIONS = ['admin', 'metrics'] as const

/** Checked on the raw document: after expansion a token from the environment and one typed in look alike. */
function hasLiteralToken (doc: unknown, section: typeof TOKEN_SECTIONS[number]): boolean {
  if (typeof doc !== 'object' || doc === null) return false
  const block = (doc as Record<string, unknown>)[section]
  if (typeof block !== 'object' || block === null) return false
  const token = (block as { token?: unknown }).token
  return typeof token === 'string' && !new RegExp(VAR.source).test(token)
}

function deepFreeze<T> (value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const v of Object.values(value)) deepFreeze(v)
  }
  return value
}

function zodIssues (error: z.ZodError): ConfigIssue[] {
  return error.issues.map(issue => ({ path: formatPath(issue.path), message: issue.message }))
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
    if (!hasLiteralToken(doc, section)) continue
    const example = `\${SWITCHBOARD_${section.toUpperCase()}_TOKEN}`
    issues.push({ path: `${section}.token`, message: `must come from the environment, e.g. "${example}": a secret never sits in the config file` })
  }
  const expanded = expandEnv(doc, env, [], issues)
  const result = configSchema.safeParse(inheritRedisUrl(expanded))
  if (!result.success) issues.push(...zodIssues(result.error))
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
