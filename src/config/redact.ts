import type { GatewayConfig } from './schema.ts'

// The effective config as an operator may see it (GET /admin/config): every secret replaced, every
// other value kept, so the output answers "what is running" without handing out credentials.

export const REDACTED = '[redacted]'

/** Names whose string values are secrets wherever they appear: keys, flags, headers, query parameters. */
const SECRET_NAME = /(token|secret|password|passwd|api[-_]?key|authorization|cookie|credential)/i
/** A command-line flag on its own (`--token`, `-password`): the next argument is its value. */
const FLAG = /^--?[A-Za-z][\w.-]*$/
/** `--token=xyz`, or `GITHUB_TOKEN=xyz` for commands such as env. */
const ASSIGNMENT = /^(-{0,2}[A-Za-z][\w.-]*)=/
/** `Authorization: Bearer xyz` or `Authorization:${AUTH}`, as passed to --header of mcp-remote and the like; not a URL. */
const HEADER = /^([A-Za-z][\w-]*)\s*:(?!\/\/)/
/** Has no character the URL serializer escapes, so it survives into href and is swapped afterwards. */
const SENTINEL = 'SWITCHBOARDREDACTED'

type Path = ReadonlyArray<string | number>

/** A deep copy as plain JSON data, with every secret replaced by "[redacted]". */
export function redactConfig (config: GatewayConfig): unknown {
  return walk(config, [])
}

function walk (value: unknown, path: Path): unknown {
  if (typeof value === 'string') return isSecretPath(path) ? REDACTED : redactUrl(value)
  if (Array.isArray(value)) {
    if (path.length === 3 && path[0] === 'upstreams' && path[2] === 'args') return redactArgs(value)
    return value.map((v: unknown, i) => walk(v, [...path, i]))
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = walk(v, [...path, k])
    return out
  }
  return value
}

function isSecretPath (path: Path): boolean {
  const [section, field, , leaf] = path
  if (section === 'auth' && field === 'apiKeys' && path.length === 4 && leaf === 'key') return true
  if (section === 'upstreams' && path.length === 4 && (path[2] === 'env' || path[2] === 'headers')) return true
  if (section === 'tracing' && field === 'headers' && path.length === 3) return true
  // Rename maps are keyed by tool and prompt names, which may well contain "token".
  if (path.at(-2) === 'rename') return false
  const name = path.findLast((k): k is string => typeof k === 'string')
  return name !== undefined && SECRET_NAME.test(name)
}

function isSecretFlag (arg: string): boolean {
  return FLAG.test(arg) && SECRET_NAME.test(arg)
}

function redactArgs (args: readonly unknown[]): unknown[] {
  let previousWasFlag = false
  return args.map((arg) => {
    if (typeof arg !== 'string') return arg
    const afterFlag = previousWasFlag
    previousWasFlag = isSecretFlag(arg)
    // Even when it looks like another flag: a wrongly hidden argument leaks nothing.
    if (afterFlag) return REDACTED
    const assignment = ASSIGNMENT.exec(arg)
    if (assignment?.[1] !== undefined && SECRET_NAME.test(assignment[1])) return `${assignment[1]}=${REDACTED}`
    const header = HEADER.exec(arg)
    if (header?.[1] !== undefined && SECRET_NAME.test(header[1])) return `${header[1]}: ${REDACTED}`
    return redactUrl(arg)
  })
}

/**
 * Replaces the password of a URL and the values of secret-named query parameters. A string that is
 * not a URL, or a URL with nothing to hide, comes back exactly as it was.
 */
export function redactUrl (text: string): string {
  if (!text.includes(':')) return text
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return text
  }
  let changed = false
  if (url.password !== '') {
    url.password = SENTINEL
    changed = true
  }
  for (const name of new Set(url.searchParams.keys())) {
    if (SECRET_NAME.test(name)) {
      url.searchParams.set(name, SENTINEL)
      changed = true
    }
  }
  return changed ? url.href.replaceAll(SENTINEL, REDACTED) : text
}
