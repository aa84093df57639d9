// The upstream name `switchboard add` gives a registry server: it is also the default tool prefix
// (<name>__<tool>), so it is kept short and meaningful: io.github.upstash/context7 → context7,
// com.stripe/mcp → stripe, io.github.github/github-mcp-server → github.

const UPSTREAM_NAME = /^[a-z][a-z0-9-]*$/
/** Long enough for any real name, short enough to leave most of a 64-character tool name to the tool. */
const MAX_UPSTREAM_NAME = 32
const GENERIC = new Set(['', 'mcp', 'server', 'mcp-server', 'remote', 'api'])
const NAMESPACE_NOISE = new Set(['io', 'com', 'org', 'net', 'dev', 'ai', 'app', 'co', 'github', 'gitlab'])

function clean (text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')
}

function trimAffixes (text: string): string {
  return text.replace(/^(mcp-server-|server-mcp-|mcp-|server-)/, '').replace(/(-mcp-server|-server-mcp|-mcp|-server)$/, '')
}

export function isUpstreamName (name: string): boolean {
  return UPSTREAM_NAME.test(name)
}

/** A valid upstream name (^[a-z][a-z0-9-]*$) from a registry name (namespace/name, reverse DNS). */
export function upstreamNameFor (serverName: string): string {
  const slash = serverName.indexOf('/')
  const namespace = slash < 0 ? '' : serverName.slice(0, slash)
  let base = trimAffixes(clean(slash < 0 ? serverName : serverName.slice(slash + 1)))
  if (GENERIC.has(base)) {
    // The name says nothing (com.notion/mcp): the namespace's owner does.
    const owner = namespace.split('.').reverse().map(clean).find(label => !NAMESPACE_NOISE.has(label) && label !== '')
    base = owner ?? (base === '' ? 'server' : base)
  }
  let name = /^[a-z]/.test(base) ? base : `mcp-${base}`
  if (name.length > MAX_UPSTREAM_NAME) name = name.slice(0, MAX_UPSTREAM_NAME).replace(/-+$/, '')
  return name
}

/** An environment variable name from any label: CONTEXT7 + api-key → CONTEXT7_API_KEY. */
export function envName (...parts: string[]): string {
  const name = parts.map(p => p.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_+|_+$/g, '')).filter(p => p !== '').join('_')
  return /^[A-Z_]/.test(name) ? name : `_${name}`
}
