export interface ListenTarget {
  host: string
  port: number
  /** The config block that sets the address, named in the hint: `listen` or `admin.listen`. */
  setting: string
}

function errorCode (err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

function hint (code: string, { host, setting }: ListenTarget): string | undefined {
  switch (code) {
    case 'EADDRINUSE': return `address already in use (another switchboard? set ${setting}.port)`
    case 'EACCES': return `permission denied (ports below 1024 need privileges; set ${setting}.port)`
    case 'EADDRNOTAVAIL': return `address not available (no interface of this machine has ${host}; set ${setting}.host)`
    case 'ENOTFOUND':
    case 'EAI_AGAIN': return `${host} does not resolve to an address (set ${setting}.host)`
    default: return undefined
  }
}

/**
 * The one line an operator sees when a listener cannot bind: a system error (it has a `syscall`)
 * names a problem of the machine or the config, never of the code, so it carries no stack worth
 * showing. Anything else gets undefined and is reported as a fault.
 */
export function describeListenError (err: unknown, target: ListenTarget): string | undefined {
  const code = errorCode(err)
  const syscall = (err as { syscall?: unknown } | null)?.syscall
  if (code === undefined || typeof syscall !== 'string') return undefined
  const what = hint(code, target) ?? (err as Error).message
  const address = target.host.includes(':') ? `[${target.host}]:${target.port}` : `${target.host}:${target.port}`
  return `cannot listen on ${address}: ${what}`
}
