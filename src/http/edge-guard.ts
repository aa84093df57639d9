import type { IncomingHttpHeaders } from 'node:http'
import { networkInterfaces } from 'node:os'
import { isLoopbackHost } from '../net/loopback.ts'
import { parseHostHeader } from './host-header.ts'

export { isLoopbackHost }

export interface EdgePolicy { allowedHosts: ReadonlySet<string>, allowedOrigins: ReadonlySet<string> }

const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '[::]'])

/** This machine's interface addresses as they appear in a Host header (IPv6 in brackets). */
export function localAddresses (): string[] {
  const out: string[] = []
  let interfaces: ReturnType<typeof networkInterfaces>
  // Some sandboxes refuse to list interfaces: then only loopback, the bind address and allowedHosts pass.
  try { interfaces = networkInterfaces() } catch { return out }
  for (const list of Object.values(interfaces)) {
    for (const address of list ?? []) {
      // A link-local IPv6 address needs a zone id, which a Host header cannot carry.
      if (address.family === 'IPv6' && address.scopeid !== 0) continue
      out.push(address.family === 'IPv6' ? `[${address.address.toLowerCase()}]` : address.address)
    }
  }
  return out
}

/**
 * Hosts the gateway answers to: loopback names always, the bind address, what ops configured, and,
 * on a wildcard bind, this machine's own addresses (a kubelet probe or a scraper sends Host: <pod
 * IP>:<port>; an address literal is never a DNS-rebinding vector, which needs a name).
 */
export function createEdgePolicy (listenHost: string, allowedHosts: readonly string[], allowedOrigins: readonly string[], addresses?: readonly string[]): EdgePolicy {
  const hosts = new Set(allowedHosts.map(h => h.toLowerCase()))
  const bind = listenHost.toLowerCase()
  if (WILDCARD_BINDS.has(bind)) {
    for (const address of addresses ?? localAddresses()) hosts.add(address.toLowerCase())
  } else {
    hosts.add(bind.includes(':') && !bind.startsWith('[') ? `[${bind}]` : bind)
  }
  return { allowedHosts: hosts, allowedOrigins: new Set(allowedOrigins.map(o => o.toLowerCase())) }
}

export interface EdgeCheckOptions {
  /**
   * Let a request without Host through: only HTTP/1.0 can omit it (Node refuses an HTTP/1.1 one), a
   * browser never does, and health checkers such as HAProxy's `option httpchk` do.
   */
  missingHostOk?: boolean
  /** Skip the Origin check: a document public to every origin (RFC 9728 metadata). */
  anyOrigin?: boolean
}

/**
 * DNS-rebinding defence: a browser page on a foreign name that resolves to us sends its own Host and
 * Origin. Returns why the request is refused, or undefined when it may proceed.
 */
export function checkEdge (headers: IncomingHttpHeaders, policy: EdgePolicy, options: EdgeCheckOptions = {}): string | undefined {
  const host = headers.host
  if (host === undefined || host === '') {
    if (options.missingHostOk !== true || host === '') return 'missing Host header'
  } else {
    const parsed = parseHostHeader(host)
    if (parsed === undefined) return `Host ${JSON.stringify(host.slice(0, 100))} is not a valid host[:port]`
    const { hostname, port } = parsed
    if (!isLoopbackHost(hostname) && !policy.allowedHosts.has(hostname) && (port === undefined || !policy.allowedHosts.has(`${hostname}:${port}`))) {
      return `Host ${host} is not allowed`
    }
  }
  if (options.anyOrigin === true) return undefined
  const origin = headers.origin
  if (origin === undefined) return undefined
  const lowerOrigin = origin.toLowerCase()
  if (policy.allowedOrigins.has(lowerOrigin)) return undefined
  let url: URL
  try { url = new URL(lowerOrigin) } catch { return `Origin ${origin} is not allowed` }
  if ((url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname)) return undefined
  return `Origin ${origin} is not allowed`
}
