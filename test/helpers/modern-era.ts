/** The revision a 2026-07-28 ("modern") client speaks. */
export const MODERN = '2026-07-28'

/**
 * A gateway that serves 2026-07-28 clients, in front of a real 2025-11-25 upstream
 * (server-everything over stdio); `http` adds keys of the http section, `upstream` of the upstream.
 */
export function modernEverythingConfig (http: Record<string, unknown> = {}, upstream: Record<string, unknown> = {}): string {
  return JSON.stringify({
    http: { modernClients: true, ...http },
    upstreams: [{ name: 'everything', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'], ...upstream }]
  })
}
