import type { CatalogConfig, UpstreamConfig } from '../config/schema.ts'
import { EXPOSED_NAME, createMatcher, globToRegExp } from './naming.ts'

// Which configured upstreams could list a tool, prompt or resource under a given name, worked out
// from the config alone (no upstream is asked what it has): the naming rules run backwards.

export type TracedKind = 'tools' | 'prompts' | 'resources'

export interface NameOrigin {
  upstream: string
  /** The upstream's own name (tools, prompts) or the URI (resources). */
  own: string
}

export interface HiddenOrigin extends NameOrigin {
  /** Why the upstream's filters hide it, e.g. `tools.exclude "delete_*" matches delete_all`. */
  reason: string
}

export interface NameTrace {
  /** Upstreams that could list it under this name, if they have it. */
  exposers: NameOrigin[]
  /** Upstreams that would list it under this name, but whose include/exclude leave it out. */
  hidden: HiddenOrigin[]
  /** Upstreams whose tool of this name (after the prefix) is renamed: the name it has instead. */
  renamed: Array<NameOrigin & { exposed: string }>
  /** Why no tool or prompt can have this exposed name at all (invalid characters, too long). */
  invalid?: string
}

/** How an upstream names what it exposes, for messages: `files__*`, `*` with an empty prefix. */
export function exposedPattern (upstream: UpstreamConfig, kind: TracedKind, separator: string): string {
  if (kind === 'resources') return 'its own URIs'
  const prefix = upstream.prefix ?? upstream.name
  return prefix === '' ? '*' : `${prefix}${separator}*`
}

/** The upstream's own names that its rename map and prefix turn into `local` (before the prefix). */
function ownNames (rename: Readonly<Record<string, string>>, local: string): string[] {
  const renamed = Object.keys(rename).filter(own => rename[own] === local)
  return Object.hasOwn(rename, local) ? renamed : [...renamed, local]
}

function filterReason (kind: TracedKind, include: readonly string[], exclude: readonly string[], own: string): string | undefined {
  const excludedBy = exclude.find(glob => globToRegExp(glob).test(own))
  if (excludedBy !== undefined) return `${kind}.exclude "${excludedBy}" matches ${own}`
  if (!createMatcher(include)(own)) return `${kind}.include [${include.join(', ')}] does not match ${own}`
  return undefined
}

function traceUpstream (upstream: UpstreamConfig, kind: TracedKind, name: string, separator: string): NameTrace {
  const trace: NameTrace = { exposers: [], hidden: [], renamed: [] }
  let owns: string[]
  if (kind === 'resources') {
    owns = [name]
  } else {
    const prefix = upstream.prefix ?? upstream.name
    const head = prefix === '' ? '' : `${prefix}${separator}`
    if (!name.startsWith(head) || name.length === head.length) return trace
    const local = name.slice(head.length)
    const rename = upstream[kind].rename
    if (Object.hasOwn(rename, local)) trace.renamed.push({ upstream: upstream.name, own: local, exposed: `${head}${rename[local] ?? ''}` })
    owns = ownNames(rename, local)
  }
  for (const own of owns) {
    const reason = filterReason(kind, upstream[kind].include, upstream[kind].exclude, own)
    if (reason === undefined) trace.exposers.push({ upstream: upstream.name, own })
    else trace.hidden.push({ upstream: upstream.name, own, reason })
  }
  return trace
}

/**
 * Traces an exposed name back to the upstreams that could serve it. A name the gateway shortened
 * or disambiguated with a hash traces to the upstream whose prefix it carries: the config alone
 * cannot tell which of its tools it stands for.
 */
export function traceName (upstreams: readonly UpstreamConfig[], catalog: CatalogConfig, kind: TracedKind, name: string): NameTrace {
  if (kind !== 'resources') {
    if (!EXPOSED_NAME.test(name)) return { exposers: [], hidden: [], renamed: [], invalid: `every exposed name matches ${EXPOSED_NAME.source}` }
    if (name.length > catalog.maxNameLength) return { exposers: [], hidden: [], renamed: [], invalid: `no exposed name is longer than catalog.maxNameLength (${catalog.maxNameLength})` }
  }
  const out: NameTrace = { exposers: [], hidden: [], renamed: [] }
  for (const upstream of upstreams) {
    const { exposers, hidden, renamed } = traceUpstream(upstream, kind, name, catalog.separator)
    out.exposers.push(...exposers)
    out.hidden.push(...hidden)
    out.renamed.push(...renamed)
  }
  return out
}
