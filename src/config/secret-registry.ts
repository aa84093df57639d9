// One place that knows what is secret: values (an upstream's env, later a vault's tokens) and key-name
// patterns. The logger, the config redaction, the audit redaction and the stdio stderr scrub consult it
// beside their own fixed rules, so a secret registered once is hidden everywhere it could surface.

export const REDACTED = '[redacted]'
/** Shorter values are not treated as secrets: hiding every "1" or "true" would wreck every line. */
export const MIN_SECRET_LENGTH = 6

export interface SecretRegistry {
  /** Registers a secret value (ignored below MIN_SECRET_LENGTH); kept for the life of the process. */
  registerValue: (value: string) => void
  /** Registers a key-name pattern: a RegExp, or a string found anywhere in the name, case and `-_.` ignored. */
  registerKeyPattern: (pattern: RegExp | string) => void
  /** Whether a key (a config field, an argument name, a header) names a secret by a registered pattern. */
  isSecretKey: (name: string) => boolean
  /** `text` with every registered value replaced by "[redacted]"; the same string when it holds none. */
  redactValue: (text: string) => string
  /** redactValue, or undefined while no value is registered (so a hot path can skip it). */
  valueRedactor: () => ((text: string) => string) | undefined
}

function squash (name: string): string {
  return name.toLowerCase().replace(/[-_.\s]/g, '')
}

export function createSecretRegistry (): SecretRegistry {
  const values = new Set<string>()
  // Longest first: a secret that contains another is replaced whole.
  let ordered: string[] = []
  const patterns: Array<(name: string) => boolean> = []
  const redactValue = (text: string): string => {
    let out = text
    for (const secret of ordered) if (out.includes(secret)) out = out.split(secret).join(REDACTED)
    return out
  }
  return {
    registerValue (value) {
      if (value.length < MIN_SECRET_LENGTH || values.has(value)) return
      values.add(value)
      ordered = [...values].sort((a, b) => b.length - a.length)
    },
    registerKeyPattern (pattern) {
      if (typeof pattern === 'string') {
        const part = squash(pattern)
        if (part !== '') patterns.push(name => squash(name).includes(part))
      } else {
        patterns.push(name => pattern.test(name))
      }
    },
    isSecretKey: (name) => patterns.some(test => test(name)),
    redactValue,
    valueRedactor: () => ordered.length === 0 ? undefined : redactValue
  }
}

/** The process's registry, consulted by every redaction. */
export const secretRegistry: SecretRegistry = createSecretRegistry()
