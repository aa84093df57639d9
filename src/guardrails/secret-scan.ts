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
  /** This object's keys that hold a secret, each with the name it has in the copy (when redacting). */
  renames?: ReadonlyMap<string, string>
}

interface Hit { readonly holder: Node, readonly key: string | number, readonly text: string }

/**
 * Every string in `root` at any depth (objects and arrays; a string under a named field is judged
 * with its name, `{ "password": "…" }`), and every object key: a key is data a model or a tool
 * chose (`{ "AKIA…": 1 }`), read as free text. Walked with an explicit stack, so no nesting an
 * upstream sends can overflow the call stack; the result-size cap runs before this and bounds the work.
 * With `redact`, the value comes back as a copy in which only the objects and arrays on the way to a
 * secret are new: strings stay strings, so structured content keeps its schema's types; a key
 * holding a secret is renamed (secretKeyNames).
 */
export function scanValue<T> (root: T, detector: SecretDetector, redact: boolean): Scanned<T> {
  const found: SecretCounts = new Map()
  if (typeof root === 'string') {
    const matches = detector.find(root)
    count(found, matches)
    return { value: (redact && matches.length > 0 ? redactMatches(root, matches) : root) as T, found }
  }
  if (root === null || typeof root !== 'object') return { value: root, found }
  const hits: Hit[] = []
  const renamed: Node[] = []
  // Structured data repeats its keys (every row of a table has the same few): each is judged once per scan.
  const keyVerdicts = new Map<string, SecretMatch[]>()
  const top: Node = { value: root, parent: undefined, key: 0 }
  const stack: Node[] = [top]
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    const { value } = node
    let entries: Iterable<[string | number, unknown]>
    if (Array.isArray(value)) {
      entries = value.entries()
    } else {
      entries = Object.entries(value as object)
      const renames = secretKeyNames(Object.keys(value as object), detector, keyVerdicts, redact, found)
      if (renames !== undefined) {
        node.renames = renames
        renamed.push(node)
      }
    }
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
  return { value: hits.length === 0 && renamed.length === 0 ? root : rewrite(top, hits, renamed), found }
}

/**
 * The keys of one object that hold a secret, counted in `found`; with `redact`, each with its new
 * name: the key redacted as any string is (`[redacted:<kind>]` in place of the secret), made
 * distinct from the object's other keys by a `#2`, `#3`… suffix, so no member is lost to a
 * collision. Undefined when none does (or when only counting).
 */
function secretKeyNames (keys: readonly string[], detector: SecretDetector, verdicts: Map<string, SecretMatch[]>, redact: boolean, found: SecretCounts): Map<string, string> | undefined {
  let renames: Map<string, string> | undefined
  for (const key of keys) {
    let matches = verdicts.get(key)
    if (matches === undefined) {
      matches = detector.find(key)
      verdicts.set(key, matches)
    }
    if (matches.length === 0) continue
    count(found, matches)
    if (redact) (renames ??= new Map()).set(key, redactMatches(key, matches))
  }
  if (renames === undefined) return undefined
  const names = renames
  const taken = new Set(keys.filter(key => !names.has(key)))
  for (const [key, name] of names) {
    let unique = name
    for (let n = 2; taken.has(unique); n++) unique = `${name}#${n}`
    taken.add(unique)
    names.set(key, unique)
  }
  return names
}

/** The name `key` of `node` has in its copy. */
function nameIn (node: Node, key: string | number): string | number {
  return typeof key === 'string' ? node.renames?.get(key) ?? key : key
}

/**
 * The root copied along every path to a hit or a renamed key, each hit's string replaced and each
 * secret key renamed (in its place among the others); containers off those paths are shared.
 */
function rewrite<T> (top: Node, hits: readonly Hit[], renamed: readonly Node[]): T {
  const copies = new Map<Node, Record<string | number, unknown>>()
  const copyOf = (node: Node): Record<string | number, unknown> => {
    const chain: Node[] = []
    for (let n: Node | undefined = node; n !== undefined && !copies.has(n); n = n.parent) chain.push(n)
    for (let i = chain.length - 1; i >= 0; i--) {
      const n = chain[i] as Node
      const copy = (Array.isArray(n.value) ? [...n.value] : copyObject(n.value as object, n.renames)) as Record<string | number, unknown>
      copies.set(n, copy)
      if (n.parent !== undefined) (copies.get(n.parent) as Record<string | number, unknown>)[nameIn(n.parent, n.key)] = copy
    }
    return copies.get(node) as Record<string | number, unknown>
  }
  for (const node of renamed) copyOf(node)
  for (const hit of hits) copyOf(hit.holder)[nameIn(hit.holder, hit.key)] = hit.text
  return copies.get(top) as T
}

/** A shallow copy; with `renames`, those keys under their new names. Own `__proto__` members stay members (fromEntries defines, never sets). */
function copyObject (value: object, renames: ReadonlyMap<string, string> | undefined): object {
  if (renames === undefined) return { ...value }
  return Object.fromEntries(Object.entries(value).map(([key, v]) => [renames.get(key) ?? key, v]))
}

/**
 * A tool result's text the model reads: text content items, the text of embedded resources, and
 * every string and every key of structuredContent. Images, audio, blobs and links are not text and
 * are left alone. With `redact`, a copy in which only what held a secret is new. A result relayed
 * as its bytes (raw-result.ts) is read the same way: reading structuredContent parses it.
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
