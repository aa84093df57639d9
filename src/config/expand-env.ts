// ${VAR} references in the config's strings: ${VAR} (an error when unset), ${VAR:-default} (the
// default when unset or empty, as in the shell) and $${ for a literal ${. The default is literal text.

export interface EnvIssue { path: ReadonlyArray<PropertyKey>, message: string }

// What an unset or malformed reference expands to while the document is validated. Any string
// holding it is already reported, so the schema's complaints about it (too short, not a URL, same
// key as another) are knock-on errors and dropped. It never reaches a returned config: a
// reported reference fails the load.
export const UNRESOLVED = '\u0000unresolved\u0000'

const MAX_SHOWN = 40
const TOKEN = /\$\$\{|\$\{([^}]*)(\})?/g
const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s
// eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax, shown to the user
const SYNTAX = 'use ${NAME} or ${NAME:-default} (NAME: letters, digits and _, not first a digit), or $${ for a literal ${'

export interface EnvReference { name: string, fallback?: string }

/** The well-formed references in the text (an escaped $${ is none). */
export function envReferences (text: string): EnvReference[] {
  const out: EnvReference[] = []
  for (const match of text.matchAll(TOKEN)) {
    const reference = match[0] === '$${' || match[2] === undefined ? null : REFERENCE.exec(match[1] ?? '')
    if (reference !== null) out.push(reference[2] === undefined ? { name: reference[1] ?? '' } : { name: reference[1] ?? '', fallback: reference[2] })
  }
  return out
}

function expandString (text: string, env: NodeJS.ProcessEnv, path: PropertyKey[], issues: EnvIssue[]): string {
  const unset: string[] = []
  const out = text.replace(TOKEN, (token: string, body: string | undefined, close: string | undefined) => {
    if (token === '$${') return '${'
    const reference = close === undefined ? undefined : REFERENCE.exec(body ?? '')
    if (reference === null || reference === undefined) {
      const shown = token.length > MAX_SHOWN ? `${token.slice(0, MAX_SHOWN)}…` : token
      issues.push({ path, message: `${close === undefined ? 'unclosed' : 'malformed'} reference "${shown}": ${SYNTAX}` })
      return UNRESOLVED
    }
    const [, name = '', fallback] = reference
    const value = env[name]
    if (fallback !== undefined) return value === undefined || value === '' ? fallback : value
    if (value !== undefined) return value
    if (!unset.includes(name)) unset.push(name)
    return UNRESOLVED
  })
  if (unset.length === 1) issues.push({ path, message: `environment variable ${unset[0] ?? ''} is not set` })
  else if (unset.length > 1) issues.push({ path, message: `environment variables ${unset.join(', ')} are not set` })
  return out
}

/** Expands references in every string of the parsed document, so a value can never inject YAML structure. */
export function expandEnv (value: unknown, env: NodeJS.ProcessEnv, issues: EnvIssue[], path: PropertyKey[] = []): unknown {
  if (typeof value === 'string') return expandString(value, env, path, issues)
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, issues, [...path, i]))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = expandEnv(v, env, issues, [...path, k])
    return out
  }
  return value
}
