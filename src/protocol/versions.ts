export const LATEST_PROTOCOL_VERSION = '2025-11-25'
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']
/** What a request without MCP-Protocol-Version is assumed to speak (spec: Streamable HTTP). */
export const DEFAULT_HTTP_PROTOCOL_VERSION = '2025-03-26'

export function negotiateVersion (requested: unknown): string {
  return typeof requested === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION
}
