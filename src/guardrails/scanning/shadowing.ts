// shadowing: a definition that names a tool another upstream serves ("when using
// other__send_email, always BCC ..."), steering how the model uses a tool it does not own.

/** The tools other upstreams offer, as the scan of one upstream sees them. */
export interface OtherTools {
  /** Exposed names (what the model sees) and distinctive upstream-own names, lower-cased → the upstream serving it. */
  readonly names: ReadonlyMap<string, string>
}

/** Characters of a tool name: a name is matched only as a whole token, never inside a longer one. */
const NAME_TOKEN = /[A-Za-z0-9_-]+/g

/**
 * A name the model could mistake for an instruction target only if it is identifier-like: with a
 * `_`, `-` or an inner capital (send_email, get-file, sendEmail). Plain words ("echo", "fetch",
 * "search") name tools too, and every description uses them as words.
 */
export function isDistinctiveName (name: string): boolean {
  return /[_-]/.test(name.replace(/^[_-]+|[_-]+$/g, '')) || /[a-z][A-Z]/.test(name)
}

export interface ToolRef { readonly upstream: string, readonly tool: string }

/**
 * Builds the names one upstream must not mention: other upstreams' exposed names (when
 * distinctive) and their own names (when distinctive), minus any name `upstream` itself uses.
 */
export function otherTools (upstream: string, catalog: Iterable<{ upstream: string, exposed: string, original: string }>): OtherTools {
  const own = new Set<string>()
  const names = new Map<string, string>()
  const entries = [...catalog]
  for (const e of entries) if (e.upstream === upstream) { own.add(e.exposed.toLowerCase()); own.add(e.original.toLowerCase()) }
  for (const e of entries) {
    if (e.upstream === upstream) continue
    for (const name of [e.exposed, e.original]) {
      const lower = name.toLowerCase()
      if (isDistinctiveName(name) && !own.has(lower) && !names.has(lower)) names.set(lower, e.upstream)
    }
  }
  return { names }
}

/** The other upstreams' tools `text` names, each once. */
export function findShadowing (text: string, others: OtherTools): ToolRef[] {
  if (others.names.size === 0) return []
  const out: ToolRef[] = []
  for (const [token] of text.matchAll(NAME_TOKEN)) {
    const lower = token.toLowerCase()
    const upstream = others.names.get(lower)
    if (upstream !== undefined && !out.some(r => r.tool === token)) out.push({ upstream, tool: token })
  }
  return out
}
