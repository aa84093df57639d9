// foreign_host: URLs in a definition's prose whose host the operator did not allow. Only URLs with
// a scheme count (http, https, ws, wss): a bare word with dots ("config.json", "e.g.", "v1.2.3",
// "node.js") is not a host, and guessing would make false positives, which are defects.

const URL_IN_TEXT = /\b(?:https?|wss?):\/\/[^\s<>"'`)\]}|\\^]+/gi

/**
 * Hosts no one can exfiltrate to, allowed always: loopback, and the names reserved for
 * documentation and testing (RFC 2606, RFC 6761), which descriptions use in examples.
 */
const ALWAYS_ALLOWED = ['localhost', '*.localhost', '127.0.0.1', '[::1]', 'example.com', '*.example.com', 'example.org', '*.example.org', 'example.net', '*.example.net', '*.example', '*.test', '*.invalid']

export type HostMatcher = (host: string) => boolean

/**
 * `allowedHosts` globs: `api.example.com` is that host only; `*.example.com` any host under
 * example.com (not example.com itself, as with TLS wildcard names — list both when both are meant);
 * `*` any host. Case-insensitive; a trailing dot is ignored.
 */
export function createHostMatcher (allowed: readonly string[]): HostMatcher {
  const exact = new Set<string>()
  const suffixes: string[] = []
  let any = false
  for (const raw of [...ALWAYS_ALLOWED, ...allowed]) {
    const glob = normalizeHost(raw)
    if (glob === '*') any = true
    else if (glob.startsWith('*.')) suffixes.push(glob.slice(1))
    else exact.add(glob)
  }
  return (host) => {
    const h = normalizeHost(host)
    return any || exact.has(h) || suffixes.some(s => h.endsWith(s) && h.length > s.length)
  }
}

function normalizeHost (host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, '')
}

/** The hosts of the URLs in `text` that `allowed` does not match, each once, in order. */
export function findForeignHosts (text: string, allowed: HostMatcher): string[] {
  const out: string[] = []
  for (const [candidate] of text.matchAll(URL_IN_TEXT)) {
    // Prose punctuation after a URL belongs to the sentence: "see https://a.example/x."
    const url = candidate.replace(/[.,;:!?]+$/, '')
    let host: string
    try {
      host = new URL(url).hostname
    } catch { continue }
    if (host === '' || allowed(host) || out.includes(host)) continue
    out.push(host)
  }
  return out
}
