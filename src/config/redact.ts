import { secretRegistry } from './secret-registry.ts'
import { isCredentialFlag, isCredentialName } from './credential-names.ts'
import type { GatewayConfig } from './schema.ts'
import { REDACTED, redactUrls } from '../net/url-redaction.ts'

// The effective config as an operator may see it (GET /admin/config): every secret replaced, every
// other value kept, so the output answers "what is running" without handing out credentials.

export { REDACTED, redactUrl, redactUrls } from '../net/url-redaction.ts'

/** Config keys whose string values are secrets wherever they appear (narrower than for flags: `sessionIdleMs` is no secret). */
const SECRET_NAME = /(token|secret|password|passwd|api[-_]?key|authorization|cookie|credential)/i
/** A command-line flag on its own (`--token`, `-t`): the next argument is its value (see credential-names.ts). */
const FLAG = /^--?[A-Za-z][\w.-]*$/
/** `--token=xyz`, or `GITHUB_TOKEN=xyz` for commands such as env. */
const ASSIGNMENT = /^(-{0,2}[A-Za-z][\w.-]*)=/
/** `Authorization: Bearer xyz` or `Authorization:${AUTH}`, as passed to --header of mcp-remote and the like; not a URL. */
const HEADER = /^([A-Za-z][\w-]*)\s*:(?!\/\/)/

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
  // The guardrail hook's headers carry its token under whatever name the hook wants (X-Hook-Key).
  if (section === 'guardrails' && field === 'webhook' && path[2] === 'headers' && path.length === 4) return true
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
