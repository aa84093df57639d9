import { secretRegistry } from '../observability/secret-registry.ts'
import { isCredentialFlag, isCredentialName } from './credential-names.ts'
import type { GatewayConfig } from './schema.ts'

// The effective config as an operator may see it (GET /admin/config): every secret replaced, every
// other value kept, so the output answers "what is running" without handing out credentials.

export const REDACTED = '[redacted]'

/** Config keys whose string values are secrets wherever they appear (narrower than for flags: `sessionIdleMs` is no secret). */
const SECRET_NAME = /(token|secret|password|passwd|api[-_]?key|authorization|cookie|credential)/i
/** A command-line flag on its own (`--token`, `-t`): the next argument is its value (see credential-names.ts). */
const FLAG = /^--?[A-Za-z][\w.-]*$/
/** `--token=xyz`, or `GITHUB_TOKEN=xyz` for commands such as env. */
const ASSIGNMENT = /^(-{0,2}[A-Za-z][\w.-]*)=/
/** `Authorization: Bearer xyz` or `Authorization:${AUTH}`, as passed to --header of mcp-remote and the like; not a URL. */
const HEADER = /^([A-Za-z][\w-]*)\s*:(?!\/\/)/
/** Has no character the URL serializer escapes, so it survives into href and is swapped afterwards. */
const SENTINEL = 'SWITCHBOARDREDACTED'
const NONE: ReadonlySet<string> = new Set()

type Path = ReadonlyArray<string | number>

/** A deep copy as plain JSON data, with every secret replaced by "[redacted]". */
export function redactConfig (config: GatewayConfig): unknown {
  const show = new Set((config.admin?.showQueryParams ?? []).map(name => name.toLowerCase()))
  return walk(config, [], show)
}

function walk (value: unknown, path: Path, show: ReadonlySet<string>): unknown {
  if (typeof value === 'string') return isSecretPath(path) ? REDACTED : redactUrls(secretRegistry.redactValue(value), show)
  if (Array.isArray(value)) {
    if (path.length === 3 && path[0] === 'upstreams' && path[2] === 'args') return redactArgs(value, show)
    return value.map((v: unknown, i) => walk(v, [...path, i], show))
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = walk(v, [...path, k], show)
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
  return name !== undefined && (SECRET_NAME.test(name) || secretRegistry.isSecretKey(name))
}

function redactArgs (args: readonly unknown[], show: ReadonlySet<string>): unknown[] {
  let previousWasFlag = false
  return args.map((raw) => {
    if (typeof raw !== 'string') return raw
    const arg = secretRegistry.redactValue(raw)
    const afterFlag = previousWasFlag
    previousWasFlag = FLAG.test(arg) && isCredentialFlag(arg)
    // Even when it looks like another flag: a wrongly hidden argument leaks nothing.
    if (afterFlag) return REDACTED
    const assignment = ASSIGNMENT.exec(arg)
    if (assignment?.[1] !== undefined) {
      const name = assignment[1]
      if (isCredentialFlag(name)) return `${name}=${REDACTED}`
      return `${name}=${redactUrls(arg.slice(name.length + 1), show)}`
    }
    const header = HEADER.exec(arg)
    if (header?.[1] !== undefined && isCredentialName(header[1])) return `${header[1]}: ${REDACTED}`
    return redactUrls(arg, show)
  })
}

/** URLs inside a longer string (`--header=X: https://…`, `url=https://…?sig=…`); the whole string is tried first. */
const EMBEDDED_URL = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>`]+/g

/** Every URL in `text` redacted as by {@link redactUrl}; text that holds none comes back as it was. */
export function redactUrls (text: string, show: ReadonlySet<string> = NONE): string {
  if (!text.includes('://')) return redactUrl(text, show)
  const whole = redactUrl(text, show)
  if (whole !== text || isUrl(text)) return whole
  return text.replace(EMBEDDED_URL, url => redactUrl(url, show))
}

function isUrl (text: string): boolean {
  try {
    return new URL(text).href !== ''
  } catch {
    return false
  }
}

/**
 * Replaces the password of a URL, the value of every query parameter not named in `show`
 * (lower-case names) and a fragment. A string that is not a URL, or a URL with nothing to hide,
 * comes back exactly as it was.
 */
export function redactUrl (text: string, show: ReadonlySet<string> = NONE): string {
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
  const params = [...url.searchParams]
  // Any parameter may be a signature, a SAS token or a key (sig=, X-Amz-Signature=, code=): only
  // the ones the operator listed are shown. Empty values hide nothing and stay.
  if (params.some(([name, value]) => value !== '' && !show.has(name.toLowerCase()))) {
    url.search = new URLSearchParams(params.map(([name, value]): [string, string] => [name, value === '' || show.has(name.toLowerCase()) ? value : SENTINEL])).toString()
    changed = true
  }
  // A fragment can carry an implicit-flow access_token.
  if (url.hash.length > 1) {
    url.hash = SENTINEL
    changed = true
  }
  return changed ? url.href.replaceAll(SENTINEL, REDACTED) : text
}
