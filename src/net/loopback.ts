const LOOPBACK_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1'])

/** A name or address that only this machine can reach. 0.0.0.0 and :: are every interface, so not loopback. */
export function isLoopbackHost (host: string): boolean {
  return LOOPBACK_HOSTNAMES.has(host.toLowerCase()) || /^127\.\d+\.\d+\.\d+$/.test(host)
}
