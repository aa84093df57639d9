import type { IncomingHttpHeaders } from 'node:http'
import { isLoopbackHost } from '../net/loopback.ts'

export { isLoopbackHost }

export interface EdgePolicy { allowedHosts: ReadonlySet<string>, allowedOrigins: ReadonlySet<string> }

/** Hosts the gateway answers to: loopback names always, the bind address when it is a name, and what ops configured. */
export function createEdgePolicy (listenHost: string, allowedHosts: readonly string[], allowedOrigins: readonly string[]): EdgePolicy {
  const hosts = new Set(allowedHosts.map(h => h.toLowerCase()))
  if (listenHost !== '0.0.0.0' && listenHost !== '::') hosts.add(listenHost.toLowerCase())
  return { allowedHosts: hosts, allowedOrigins: new Set(allowedOrigins.map(o => o.toLowerCase())) }
}

function hostnameOf (hostHeader: string): string {
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1)
  const colon = hostHeader.indexOf(':')
  return colon === -1 ? hostHeader : hostHeader.slice(0, colon)
}

/**
 * DNS-rebinding defence: a browser page on a foreign name that resolves to us sends its own Host and
 * Origin. Returns why the request is refused, or undefined when it may proceed.
 */
export function checkEdge (headers: IncomingHttpHeaders, policy: EdgePolicy): string | undefined {
  const host = headers.host
  if (host === undefined || host === '') return 'missing Host header'
  const lowerHost = host.toLowerCase()
  const hostname = hostnameOf(lowerHost)
  if (!isLoopbackHost(hostname) && !policy.allowedHosts.has(hostname) && !policy.allowedHosts.has(lowerHost)) return `Host ${host} is not allowed`
  const origin = headers.origin
  if (origin === undefined) return undefined
  const lowerOrigin = origin.toLowerCase()
  if (policy.allowedOrigins.has(lowerOrigin)) return undefined
  let url: URL
  try { url = new URL(lowerOrigin) } catch { return `Origin ${origin} is not allowed` }
  if ((url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname)) return undefined
  return `Origin ${origin} is not allowed`
}
