import { isRecord } from '../protocol/json-rpc.ts'
import { redactMatches, type SecretDetector, type SecretMatch } from './secret-detector.ts'

/** How many secrets of each kind a scan found; empty when none. */
export type SecretCounts = Map<string, number>

export interface Scanned<T> {
  /** The value with every secret replaced by `[redacted:<kind>]` (when asked to redact); the same object when nothing was found. */
  readonly value: T
  readonly found: SecretCounts
}

function count (found: SecretCounts, matches: readonly SecretMatch[]): void {
  for (const m of matches) found.set(m.kind, (found.get(m.kind) ?? 0) + 1)
}

/** A container met on the walk, with the way back to the root (so only the paths to a secret are copied). */
interface Node {
  readonly value: unknown
  readonly parent: Node | undefined
  readonly key: string | number
}

/**
 * Every string in `root` at any depth (objects and arrays; a string under a named field is judged
 * with its name, `{ "password": "…" }`). Walked with an explicit stack, so no nesting an upstream
 * sends can overflow the call stack; the result-size cap runs before this and bounds the work.
 * With `redact`, the value comes back as a copy in which only the objects and arrays on the way to a
 * secret are new: strings stay strings, so structured content keeps its schema's types.
 */
export function scanValue<T> (root: T, detector: SecretDetector, redact: boolean): Scanned<T> {
  const found: SecretCounts = new Map()
  if (typeof root === 'string') {
    const matches = detector.find(root)
    count(found, matches)
    return { value: (redact && matches.length > 0 ? redactMatches(root, matches) : root) as T, found }
  }
  if (root === null || typeof root !== 'object') return { value: root, found }
  const hits: Array<{ holder: Node, key: string | number, text: string }> = []
  const stack: Node[] = [{ value: root, parent: undefined, key: 0 }]
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    const { value } = node
    const entries: Iterable<[string | number, unknown]> = Array.isArray(value) ? value.entries() : Object.entries(value as object)
    for (const [key, child] of entries) {
      if (typeof child === 'string') {
        const matches = typeof key === 'string' ? detector.findInField(key, child) : detector.find(child)
        if (matches.length === 0) continue
        count(found, matches)
        if (redact) hits.push({ holder: node, key, text: redactMatches(child, matches) })
      } else if (child !== null && typeof child === 'object') {
        stack.push({ value: child, parent: node, key })
      }
    }
  }
  return { value: hits.length === 0 ? root : rewrite(hits), found }
}

/** The root copied along every path to a hit, each hit's string replaced; containers off those paths are shared. */
function rewrite<T> (hits: ReadonlyArray<{ holder: Node, key: string | number, text: string }>): T {
  const copies = new Map<Node, Record<string | number, unknown>>()
  const copyOf = (node: Node): Record<string | number, unknown> => {
    const chain: Node[] = []
    for (let n: Node | undefined = node; n !== undefined && !copies.has(n); n = n.parent) chain.push(n)
    for (let i = chain.length - 1; i >= 0; i--) {
      const n = chain[i] as Node
      const copy = (Array.isArray(n.value) ? [...n.value] : { ...(n.value as object) }) as Record<string | number, unknown>
      copies.set(n, copy)
      if (n.parent !== undefined) (copies.get(n.parent) as Record<string | number, unknown>)[n.key] = copy
    }
    return copies.get(node) as Record<string | number, unknown>
  }
  let root: Node | undefined
  for (const hit of hits) {
    copyOf(hit.holder)[hit.key] = hit.text
    root ??= rootOf(hit.holder)
  }
  return copies.get(root as Node) as T
}

function rootOf (node: Node): Node {
  let n = node
  while (n.parent !== undefined) n = n.parent
  return n
}

/**
 * A tool result's text the model reads: text content items, the text of embedded resources, and
 * every string of structuredContent. Images, audio, blobs and links are not text and are left
 * alone. With `redact`, a copy in which only what held a secret is new.
 */
export function scanResult (result: Record<string, unknown>, detector: SecretDetector, redact: boolean): Scanned<Record<string, unknown>> {
  const found: SecretCounts = new Map()
  let content: unknown[] | undefined
  if (Array.isArray(result.content)) {
    const items: unknown[] = result.content
    for (let i = 0; i < items.length; i++) {
      const item = items[i]
      const replaced = scanContentItem(item, detector, redact, found)
      if (replaced === item) continue
      content ??= [...items]
      content[i] = replaced
    }
  }
  let structured: unknown
  if (result.structuredContent !== undefined) {
    const scanned = scanValue(result.structuredContent, detector, redact)
    for (const [kind, n] of scanned.found) found.set(kind, (found.get(kind) ?? 0) + n)
    if (scanned.value !== result.structuredContent) structured = scanned.value
  }
  if (content === undefined && structured === undefined) return { value: result, found }
  return { value: { ...result, ...(content === undefined ? {} : { content }), ...(structured === undefined ? {} : { structuredContent: structured }) }, found }
}

/** One content item, scanned; the same item when it holds no secret (or when not redacting). */
function scanContentItem (item: unknown, detector: SecretDetector, redact: boolean, found: SecretCounts): unknown {
  if (!isRecord(item)) return item
  if (item.type === 'text' && typeof item.text === 'string') {
    const matches = detector.find(item.text)
    count(found, matches)
    return redact && matches.length > 0 ? { ...item, text: redactMatches(item.text, matches) } : item
  }
  if (item.type === 'resource' && isRecord(item.resource) && typeof item.resource.text === 'string') {
    const matches = detector.find(item.resource.text)
    count(found, matches)
    return redact && matches.length > 0 ? { ...item, resource: { ...item.resource, text: redactMatches(item.resource.text, matches) } } : item
  }
  return item
}

/** The kinds found, sorted: what an error or a log line may name (never the secrets). */
export function kindsOf (found: SecretCounts): string[] {
  return [...found.keys()].sort()
}
