import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import type * as Undici from 'undici'
import { SwitchboardError } from '../../errors.ts'
import { classifyAddress, type AddressClass } from '../../net/address-class.ts'
import { lazyRequire } from '../../net/lazy-require.ts'
import { OAUTH_REQUEST_TIMEOUT_MS } from './http-options.ts'

// Loaded with the first discovery: a gateway without oauth upstreams does not carry it.
const undici = lazyRequire<typeof Undici>('undici')

/** One address a name resolves to (what dns.lookup with all: true gives). */
export interface ResolvedAddress { readonly address: string, readonly family: number }
/** Every address of a host name; the default is node:dns lookup with all: true. */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>
/** A listener of the gateway: its MCP listen address or its admin listener's. */
export interface Listener { readonly host: string, readonly port: number }

export interface DiscoveryGuardOptions {
  resolve?: Resolver | undefined
  /** The gateway's own listeners (config `listen` and `admin.listen`), read on every check. */
  listeners?: (() => readonly Listener[]) | undefined
  /** The gateway's external base URL: its host and port are the gateway's own too. */
  publicUrl?: string | undefined
  /** This machine's interface addresses; the default reads os.networkInterfaces(). */
  localAddresses?: (() => readonly string[]) | undefined
}

/** What discovery may reach on behalf of one upstream. */
export interface DiscoveryScope {
  readonly upstream: string
  /** The upstream's own class: what it could reach itself decides what discovery may reach for it. */
  readonly reach: AddressClass
  /** `url` parsed, once its scheme and every address its host resolves to pass the rule; else SB_ERR_UPSTREAM_TOKEN. */
  check: (url: string, what: string) => Promise<URL>
  /** A fetch that connects only to an address the rule allows, resolved and checked as it connects. */
  readonly fetch: typeof fetch
  /**
   * A fetch of the upstream's own origin only, connected to the address its reach was judged by: a
   * name that answered 10.x or 127.0.0.1 to win a wider reach is then asked there too, not elsewhere.
   */
  readonly upstreamFetch: typeof fetch
  /** Closes the upstreamFetch's connections (the fetch is for discovery's first steps only). */
  close: () => Promise<void>
}

export interface DiscoveryGuard {
  /** The scope of an upstream at `url` (an operator-configured URL, resolved to learn what it reaches). */
  scopeFor: (upstream: { name: string, url: string }) => Promise<DiscoveryScope>
  /** Closes the connection pools of the scopes' fetches. */
  close: () => Promise<void>
}

/**
 * Which target classes an upstream of each class may point discovery at. An upstream on this
 * machine can reach all the gateway can; a private one its network, not this machine; a public one
 * only the public internet. Unroutable targets (0.0.0.0, ::, multicast) never.
 */
const REACHABLE: Readonly<Record<AddressClass, ReadonlySet<AddressClass>>> = {
  loopback: new Set(['loopback', 'link-local', 'private', 'public']),
  'link-local': new Set(['link-local', 'public']),
  private: new Set(['private', 'public']),
  public: new Set(['public']),
  unroutable: new Set(['public'])
}

async function defaultResolve (hostname: string): Promise<readonly ResolvedAddress[]> {
  return await lookup(hostname, { all: true, verbatim: true })
}

function defaultLocalAddresses (): readonly string[] {
  return Object.values(networkInterfaces()).flatMap(list => (list ?? []).map(i => i.address))
}

function unbracket (hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
}

function portOf (url: URL): number {
  return url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80
}

/** The upstream's class: one class all its addresses share; a mixed answer counts as the narrowest, public. */
/** A fetch over `agent` that follows no redirect; a non-web scheme is refused before anything is resolved. */
function fetchOver (agent: Undici.Agent, refuse: (protocol: string) => Error): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const target = new URL(input instanceof Request ? input.url : input)
    if (target.protocol !== 'https:' && target.protocol !== 'http:') throw refuse(target.protocol)
    // undici's own fetch: the global one belongs to Node's bundled undici, which takes no Agent of this one.
    return await undici().fetch(target, { ...(init as Undici.RequestInit), redirect: 'manual', dispatcher: agent })
  }) as unknown as typeof fetch
}

function reachOf (addresses: readonly string[]): AddressClass {
  const classes = new Set(addresses.map(classifyAddress))
  const [only] = classes
  return classes.size === 1 && only !== undefined && only !== 'unroutable' ? only : 'public'
}

/**
 * A URL discovery will not follow, as the gateway's error: it names the upstream and the URL's host
 * (with its port), never the path or query, which an upstream could fill with anything.
 */
export function discoveryRefused (upstream: string, what: string, host: string, reason: string, cause?: unknown): SwitchboardError {
  return new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `OAuth discovery for upstream ${upstream} refused ${what}${host === '' ? '' : ` at ${host}`}: ${reason}`, {
    cause, details: { upstream, host, refused: 'discovery' }
  })
}

export function createDiscoveryGuard (options: DiscoveryGuardOptions = {}): DiscoveryGuard {
  const resolve = options.resolve ?? defaultResolve
  const localAddresses = options.localAddresses ?? defaultLocalAddresses
  const publicOrigin = options.publicUrl !== undefined && URL.canParse(options.publicUrl) ? new URL(options.publicUrl) : undefined
  const agents = new Map<string, Undici.Agent>()

  const addressesOf = async (hostname: string): Promise<string[]> => {
    const bare = unbracket(hostname)
    if (isIP(bare) !== 0) return [bare]
    const found = await resolve(bare)
    return found.map(a => a.address)
  }

  /**
   * Whether address:port may be one of the gateway's own listeners: a listener's port on any address
   * of this machine (loopback or an interface's), whatever address it binds. Refusing a port another
   * process serves on another local address is the safe side of the doubt.
   */
  const isOwnListener = (address: string, port: number): boolean => {
    if (!(options.listeners?.() ?? []).some(l => l.port !== 0 && l.port === port)) return false
    const bare = address.replace(/%.*$/, '')
    return classifyAddress(bare) === 'loopback' || localAddresses().includes(bare)
  }

  /** Why `address` may not be reached from an upstream of class `reach`, or undefined when it may. */
  const refusalOf = (reach: AddressClass, address: string, port: number, protocol: string): string | undefined => {
    const target = classifyAddress(address)
    if (isOwnListener(address, port)) return 'it is one of the gateway\'s own listeners'
    if (!REACHABLE[reach].has(target)) return `it resolves to a ${target} address (${address}), which an upstream on a ${reach} address must not point the gateway at`
    if (protocol === 'http:' && (reach !== 'loopback' || target !== 'loopback')) return 'it is plain http, allowed only from an upstream on loopback to a loopback address'
    return undefined
  }

  /** The address to connect to for hostname:port, once every address it resolves to passes; else why not. */
  const checkedAddress = async (reach: AddressClass, hostname: string, port: number, protocol: string): Promise<{ address: string } | { reason: string, cause?: unknown }> => {
    let addresses: string[]
    try {
      addresses = await addressesOf(hostname)
    } catch (err: unknown) {
      return { reason: 'its host does not resolve', cause: err }
    }
    const [first] = addresses
    if (first === undefined) return { reason: 'its host resolves to no address' }
    for (const address of addresses) {
      const reason = refusalOf(reach, address, port, protocol)
      if (reason !== undefined) return { reason }
    }
    return { address: first }
  }

  const agentFor = (upstream: string, reach: AddressClass): Undici.Agent => {
    const key = `${reach}\n${upstream}`
    let agent = agents.get(key)
    if (agent === undefined) {
      const base = undici().buildConnector({ timeout: OAUTH_REQUEST_TIMEOUT_MS })
      // The address checked is the address connected to: no second lookup a rebinding name could answer differently.
      const connect: Undici.buildConnector.connector = (opts, callback) => {
        const port = opts.port !== '' ? Number(opts.port) : opts.protocol === 'https:' ? 443 : 80
        checkedAddress(reach, opts.hostname, port, opts.protocol).then((checked) => {
          if ('address' in checked) base({ ...opts, hostname: checked.address }, callback)
          else callback(discoveryRefused(upstream, 'a connection', opts.host ?? `${opts.hostname}:${port}`, checked.reason, checked.cause), null)
        }, (err: unknown) => { callback(err as Error, null) })
      }
      agent = new (undici().Agent)({ connect, keepAliveTimeout: 1_000 })
      agents.set(key, agent)
    }
    return agent
  }

  return {
    scopeFor: async ({ name, url }) => {
      const upstreamUrl = new URL(url)
      let addresses: string[]
      try {
        addresses = await addressesOf(upstreamUrl.hostname)
      } catch (err: unknown) {
        throw discoveryRefused(name, 'discovery', upstreamUrl.host, 'the upstream\'s own host does not resolve', err)
      }
      const [pinned] = addresses
      if (pinned === undefined) throw discoveryRefused(name, 'discovery', upstreamUrl.host, 'the upstream\'s own host resolves to no address')
      const reach = reachOf(addresses)
      const refuseScheme = (protocol: string): Error => discoveryRefused(name, 'a discovered URL', '', `its scheme ${protocol} is not https`)
      const base = undici().buildConnector({ timeout: OAUTH_REQUEST_TIMEOUT_MS })
      const own = new (undici().Agent)({
        connect: (opts, callback) => {
          const origin = `${opts.protocol}//${opts.host ?? opts.hostname}`
          if (origin !== upstreamUrl.origin) callback(discoveryRefused(name, 'a connection', opts.host ?? opts.hostname, 'it is not the upstream\'s origin'), null)
          else base({ ...opts, hostname: pinned }, callback)
        }
      })
      return {
        upstream: name,
        reach,
        fetch: fetchOver(agentFor(name, reach), refuseScheme),
        upstreamFetch: fetchOver(own, refuseScheme),
        close: async () => { await own.close().catch(() => {}) },
        check: async (raw, what) => {
          if (!URL.canParse(raw)) throw discoveryRefused(name, what, '', 'it is not a URL')
          const target = new URL(raw)
          if (target.protocol !== 'https:' && target.protocol !== 'http:') throw discoveryRefused(name, what, '', `its scheme ${target.protocol} is not https`)
          if (target.username !== '' || target.password !== '') throw discoveryRefused(name, what, target.host, 'it carries credentials')
          if (publicOrigin !== undefined && target.host === publicOrigin.host) throw discoveryRefused(name, what, target.host, 'it is the gateway\'s own public URL')
          const checked = await checkedAddress(reach, target.hostname, portOf(target), target.protocol)
          if ('reason' in checked) throw discoveryRefused(name, what, target.host, checked.reason, checked.cause)
          return target
        }
      }
    },
    close: async () => {
      const closing = [...agents.values()].map(async (agent) => { await agent.close().catch(() => {}) })
      agents.clear()
      await Promise.all(closing)
    }
  }
}
