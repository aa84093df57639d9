// Every key of the config, read from the JSON Schema the zod schema generates: one walk serves the
// generated reference (docs/configuration.md) and the test that no key lacks a description. The JSON
// Schema, not zod's internals, because it is already the public, stable shape of the same schema.

export interface JsonSchemaNode {
  type?: string | string[]
  description?: string
  default?: unknown
  enum?: unknown[]
  const?: unknown
  format?: string
  pattern?: string
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  minLength?: number
  maxLength?: number
  minItems?: number
  properties?: Record<string, JsonSchemaNode>
  required?: string[]
  items?: JsonSchemaNode
  additionalProperties?: JsonSchemaNode | boolean
  oneOf?: JsonSchemaNode[]
  anyOf?: JsonSchemaNode[]
}

export interface ConfigKey {
  /** Dotted path; `[]` stands for every element of a list (`upstreams[].name`). */
  path: string
  /** The variant the key belongs to in a union, e.g. `type: oauth`. */
  variant?: string
  required: boolean
  type: string
  default?: unknown
  /** Allowed values and bounds, in words (markdown): `stdio, sse`; `1–65535`; matches `^[a-z]+$`. */
  allowed: string
  description: string | undefined
  /** True when the key holds further keys (an object, or a list of objects). */
  hasChildren: boolean
}

function variantsOf (node: JsonSchemaNode): JsonSchemaNode[] {
  return node.oneOf ?? node.anyOf ?? []
}

/** The discriminator of a union member: its `type` constant, when it has one. */
function variantLabel (node: JsonSchemaNode): string | undefined {
  const constant = node.properties?.type?.const
  return typeof constant === 'string' ? `type: ${constant}` : undefined
}

function typeOf (node: JsonSchemaNode): string {
  if (node.const !== undefined) return JSON.stringify(node.const)
  const variants = variantsOf(node)
  if (variants.length > 0) return [...new Set(variants.map(typeOf))].join(' | ')
  const type = Array.isArray(node.type) ? node.type.join(' | ') : node.type
  if (type === 'array') return `list of ${node.items === undefined ? 'any' : typeOf(node.items)}`
  if (type === 'object' && node.properties === undefined && typeof node.additionalProperties === 'object') {
    return `map of string → ${typeOf(node.additionalProperties)}`
  }
  if (type === undefined && node.enum !== undefined) return 'string'
  return type ?? 'any'
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER

function allowedOf (node: JsonSchemaNode): string {
  const parts: string[] = []
  if (node.enum !== undefined) parts.push(node.enum.map(v => String(v)).join(', '))
  const low = node.minimum ?? (node.exclusiveMinimum !== undefined ? node.exclusiveMinimum + 1 : undefined)
  const high = node.maximum !== undefined && node.maximum < MAX_SAFE ? node.maximum : undefined
  if (low !== undefined || high !== undefined) {
    if (low !== undefined && high !== undefined) parts.push(`${low}–${high}`)
    else if (low !== undefined) parts.push(`≥ ${low}`)
    else parts.push(`≤ ${String(high)}`)
  }
  if (node.minLength !== undefined && node.minLength > 1) parts.push(`at least ${node.minLength} characters`)
  if (node.maxLength !== undefined) parts.push(`at most ${node.maxLength} characters`)
  if (node.pattern !== undefined) parts.push(`matches \`${node.pattern}\``)
  if (node.format !== undefined) parts.push(node.format === 'uri' ? 'a URL' : `format ${node.format}`)
  if (node.minItems !== undefined && node.minItems > 0) parts.push(`at least ${node.minItems} item${node.minItems === 1 ? '' : 's'}`)
  if (node.type === 'array' && node.items?.enum !== undefined) parts.push(`each one of ${node.items.enum.map(v => String(v)).join(', ')}`)
  return parts.join('; ')
}

/** The schema whose keys a key holds: itself, its list's element, or (for a map of objects) its values. */
function containerOf (node: JsonSchemaNode): { node: JsonSchemaNode, suffix: string } | undefined {
  if (node.properties !== undefined || variantsOf(node).some(v => v.properties !== undefined)) return { node, suffix: '' }
  if (node.items !== undefined) {
    const inner = containerOf(node.items)
    return inner === undefined ? undefined : { node: inner.node, suffix: `[]${inner.suffix}` }
  }
  if (typeof node.additionalProperties === 'object') {
    const inner = containerOf(node.additionalProperties)
    return inner === undefined ? undefined : { node: inner.node, suffix: `.<name>${inner.suffix}` }
  }
  return undefined
}

function walk (node: JsonSchemaNode, prefix: string, variant: string | undefined, out: ConfigKey[]): void {
  const variants = variantsOf(node).filter(v => v.properties !== undefined)
  for (const member of variants) walk(member, prefix, variantLabel(member) ?? variant, out)
  const required = new Set(node.required ?? [])
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const path = prefix === '' ? name : `${prefix}.${name}`
    const container = containerOf(child)
    out.push({
      path,
      variant,
      required: required.has(name) && child.default === undefined,
      type: typeOf(child),
      default: child.default,
      allowed: allowedOf(child),
      description: child.description,
      hasChildren: container !== undefined
    })
    if (container !== undefined) walk(container.node, `${path}${container.suffix}`, variant, out)
  }
}

/** Every key of a config JSON Schema, parents before their children, in the schema's order. */
export function configKeys (schema: JsonSchemaNode): ConfigKey[] {
  const out: ConfigKey[] = []
  walk(schema, '', undefined, out)
  return out
}
