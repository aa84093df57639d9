// A strict reading of the Host header (RFC 9110 §7.2: uri-host [ ":" port ]): a name or an IPv4
// address, or an IPv6 address in brackets, then at most a port. Anything else (userinfo as in
// `127.0.0.1:8080@evil.example`, a path, spaces, an empty or out-of-range port) is no Host at all,
// so a guard never has to guess which part a browser or a proxy will act on.

export interface HostHeader {
  /** lower case; an IPv6 address keeps its brackets */
  hostname: string
  port?: number
}

const MAX_HOST_LENGTH = 261 // 253 for a name, ':' and five digits, with room for brackets
const NAME_WITH_PORT = /^([a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?)(?::([0-9]{1,5}))?$/
const IPV6_WITH_PORT = /^(\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?$/

/** The parts of a Host header value, or undefined when it is not exactly host[:port]. */
export function parseHostHeader (value: string): HostHeader | undefined {
  if (value.length === 0 || value.length > MAX_HOST_LENGTH) return undefined
  const lower = value.toLowerCase()
  const match = NAME_WITH_PORT.exec(lower) ?? IPV6_WITH_PORT.exec(lower)
  const hostname = match?.[1]
  if (hostname === undefined || hostname.includes('..')) return undefined
  const portText = match?.[2]
  if (portText === undefined) return { hostname }
  const port = Number(portText)
  if (port < 1 || port > 65535) return undefined
  return { hostname, port }
}
