// Which strings of a tool definition the scan reads, and where each one is.

/**
 * descriptive: text the model reads as prose (description, title), scanned by every rule;
 * value: data inside a schema (enum, const, default, examples), scanned for hidden characters,
 * instructions and shadowing but not for hosts or length: a default URL is an argument the
 * upstream receives, which it could contact anyway; it asks nothing of the model.
 */
export type StringPosition = 'descriptive' | 'value'

export interface DefinitionString {
  readonly path: string
  readonly text: string
  readonly position: StringPosition
}

/** Keywords whose value is one subschema. */
const SUBSCHEMA = ['additionalProperties', 'items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'] as const
/** Keywords whose value is an array of subschemas. */
const SUBSCHEMA_ARRAYS = ['anyOf', 'oneOf', 'allOf', 'prefixItems', 'items'] as const
/** Keywords whose value maps names to subschemas (the names themselves are not scanned). */
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'] as const
const VALUES = ['enum', 'const', 'default', 'examples'] as const

/** Deeper schemas than this are not walked (a hostile upstream could nest without end). */
export const MAX_SCHEMA_DEPTH = 32
/** At most this many strings per definition are scanned; the rest is not read. */
export const MAX_STRINGS = 5000

/** A path segment: `properties.path`, or `properties["a.b"]` when the key is not a plain name. */
function key (path: string, name: string): string {
  return /^[A-Za-z_$][\w$-]*$/.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`
}

function isObject (value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

class Collector {
  readonly out: DefinitionString[] = []

  add (path: string, value: unknown, position: StringPosition): void {
    if (typeof value === 'string' && value !== '' && this.out.length < MAX_STRINGS) this.out.push({ path, text: value, position })
  }

  /** Every string inside a value (enum members, object defaults, nested examples). */
  values (path: string, value: unknown, depth: number): void {
    if (depth > MAX_SCHEMA_DEPTH || this.out.length >= MAX_STRINGS) return
    if (typeof value === 'string') this.add(path, value, 'value')
    else if (Array.isArray(value)) value.forEach((v, i) => { this.values(`${path}[${i}]`, v, depth + 1) })
    else if (isObject(value)) for (const [k, v] of Object.entries(value)) this.values(key(path, k), v, depth + 1)
  }

  /**
   * A JSON Schema: its prose (title, description), its values, and its subschemas. Not read:
   * `$schema`, `$id`, `$ref`, `pattern`, `format`, `type` and property names — identifiers, not text
   * for the model — and unknown keywords (vendor extensions).
   */
  schema (path: string, schema: unknown, depth: number): void {
    if (!isObject(schema) || depth > MAX_SCHEMA_DEPTH) return
    this.add(`${path}.title`, schema.title, 'descriptive')
    this.add(`${path}.description`, schema.description, 'descriptive')
    for (const k of VALUES) if (schema[k] !== undefined) this.values(key(path, k), schema[k], depth + 1)
    for (const k of SUBSCHEMA) if (isObject(schema[k])) this.schema(key(path, k), schema[k], depth + 1)
    for (const k of SUBSCHEMA_ARRAYS) {
      const list = schema[k]
      if (Array.isArray(list)) list.forEach((s, i) => { this.schema(`${key(path, k)}[${i}]`, s, depth + 1) })
    }
    for (const k of SUBSCHEMA_MAPS) {
      const map = schema[k]
      if (isObject(map)) for (const [name, s] of Object.entries(map)) this.schema(key(key(path, k), name), s, depth + 1)
    }
    const dependencies = schema.dependencies
    if (isObject(dependencies)) for (const [name, s] of Object.entries(dependencies)) this.schema(key(key(path, 'dependencies'), name), s, depth + 1)
  }
}

/** The strings of a tool definition the model reads, in a stable order. */
export function definitionStrings (tool: Readonly<Record<string, unknown>>): DefinitionString[] {
  const c = new Collector()
  c.add('title', tool.title, 'descriptive')
  c.add('description', tool.description, 'descriptive')
  if (isObject(tool.annotations)) c.add('annotations.title', tool.annotations.title, 'descriptive')
  c.schema('inputSchema', tool.inputSchema, 0)
  c.schema('outputSchema', tool.outputSchema, 0)
  return c.out
}
