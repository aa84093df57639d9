import { BlockList, isIPv4, isIPv6 } from 'node:net'

/**
 * Where an IP address leads, as far as a request from this machine goes:
 * - `loopback`: this machine (127/8, ::1);
 * - `link-local`: this machine's link (169.254/16, fe80::/10): where cloud metadata services answer;
 * - `private`: a private network (10/8, 172.16/12, 192.168/16, 100.64/10 CGNAT, 198.18/15, fc00::/7, fec0::/10);
 * - `unroutable`: nowhere a request should go (0.0.0.0/8 and ::, which Linux connects to this machine;
 *   multicast, broadcast, reserved and documentation ranges; anything that is not an IP address);
 * - `public`: everything else.
 */
export type AddressClass = 'loopback' | 'link-local' | 'private' | 'unroutable' | 'public'

function listOf (v4: readonly string[], v6: readonly string[]): BlockList {
  const list = new BlockList()
  for (const subnet of v4) {
    const [net = '', prefix = '32'] = subnet.split('/')
    list.addSubnet(net, Number(prefix), 'ipv4')
  }
  for (const subnet of v6) {
    const [net = '', prefix = '128'] = subnet.split('/')
    list.addSubnet(net, Number(prefix), 'ipv6')
  }
  return list
}

// Checked in this order: the first list that holds the address names its class.
const CLASSES: ReadonlyArray<readonly [Exclude<AddressClass, 'public'>, BlockList]> = [
  ['loopback', listOf(['127.0.0.0/8'], ['::1/128'])],
  ['link-local', listOf(['169.254.0.0/16'], ['fe80::/10'])],
  ['private', listOf(
    ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '198.18.0.0/15'],
    ['fc00::/7', 'fec0::/10']
  )],
  ['unroutable', listOf(
    // this network, IETF protocol assignments, the three documentation nets, multicast, reserved and broadcast
    ['0.0.0.0/8', '192.0.0.0/24', '192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4'],
    // unspecified, IPv4-compatible (deprecated), discard-only, documentation, multicast
    ['::/96', '100::/64', '2001:db8::/32', 'ff00::/8']
  )]
]

/** The eight 16-bit groups of an IPv6 address (a trailing dotted quad included), or undefined. */
function groupsOf (address: string): number[] | undefined {
  let text = address
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (quad?.[1] !== undefined) {
    const bytes = quad[1].split('.').map(Number)
    text = `${text.slice(0, -quad[1].length)}${(((bytes[0] ?? 0) << 8) | (bytes[1] ?? 0)).toString(16)}:${(((bytes[2] ?? 0) << 8) | (bytes[3] ?? 0)).toString(16)}`
  }
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const head = halves[0] === '' ? [] : (halves[0] ?? '').split(':')
  const tail = halves.length === 2 && halves[1] !== '' ? (halves[1] ?? '').split(':') : []
  const missing = 8 - head.length - tail.length
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined
  const groups = [...head, ...Array<string>(missing).fill('0'), ...tail].map(g => parseInt(g, 16))
  return groups.length === 8 && groups.every(g => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined
}

function quadOf (high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
}

/**
 * The IPv4 address an IPv6 one stands for, where packets to it reach that IPv4 address:
 * IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16). A check that missed
 * these would let ::ffff:127.0.0.1 or 2002:7f00:1:: through as "public".
 */
function embeddedIPv4 (address: string): string | undefined {
  const g = groupsOf(address)
  if (g === undefined) return undefined
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number]
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) return quadOf(g6, g7)
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return quadOf(g6, g7)
  if (g0 === 0x2002) return quadOf(g1, g2)
  return undefined
}

/** The class of an IP address literal (IPv6 without brackets; a zone id is ignored). */
export function classifyAddress (address: string): AddressClass {
  const bare = address.replace(/%.*$/, '')
  const family = isIPv4(bare) ? 'ipv4' : isIPv6(bare) ? 'ipv6' : undefined
  if (family === undefined) return 'unroutable'
  if (family === 'ipv6') {
    const v4 = embeddedIPv4(bare)
    if (v4 !== undefined) return classifyAddress(v4)
  }
  for (const [name, list] of CLASSES) {
    if (list.check(bare, family)) return name
  }
  return 'public'
}
