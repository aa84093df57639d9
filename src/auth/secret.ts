import { inspect } from 'node:util'

const REDACTED = '[redacted]'

/**
 * A credential value that cannot print: logs, JSON, template strings and `util.inspect` all see
 * "[redacted]". Only `reveal()` gives the value, where it is handed to a transport to send.
 */
export class Secret {
  readonly #value: string

  constructor (value: string) {
    this.#value = value
  }

  reveal (): string {
    return this.#value
  }

  toString (): string {
    return REDACTED
  }

  toJSON (): string {
    return REDACTED
  }

  [Symbol.toPrimitive] (): string {
    return REDACTED
  }

  [inspect.custom] (): string {
    return REDACTED
  }
}

/** Each value as a Secret. */
export function secretsOf (values: Readonly<Record<string, string>>): Readonly<Record<string, Secret>> {
  const out: Record<string, Secret> = {}
  for (const [name, value] of Object.entries(values)) out[name] = new Secret(value)
  return Object.freeze(out)
}

/** The values to send, revealed into `into` (a request's headers or a child's environment). */
export function revealInto (into: Record<string, string>, secrets: Readonly<Record<string, Secret>>): Record<string, string> {
  for (const name in secrets) {
    const secret = secrets[name]
    if (secret !== undefined) into[name] = secret.reveal()
  }
  return into
}
