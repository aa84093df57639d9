import { secretRegistry } from './secret-registry.ts'

// Whether a command-line flag, an assignment's name or a header name suggests a credential. Broad on
// purpose: a wrongly hidden argument costs a look at the config file, a shown one leaks a secret.

/** Anywhere in the name, separators and case ignored: `--api-key`, `--clientSecret`, `GITHUB_TOKEN`, `--auth`, `--passphrase`. */
const CREDENTIAL_SUBSTRINGS = ['token', 'secret', 'key', 'auth', 'pass', 'pwd', 'credential', 'cookie', 'session', 'bearer']
/**
 * Whole words only (split at `-`, `_`, `.` and camelCase): `--pat`, `--gh-pat`, `--sig`, `--signature`,
 * but not `--path`, `--pattern`, `--patch`, `--signal`, `--design`.
 */
const CREDENTIAL_WORDS = new Set(['pat', 'pats', 'sig', 'sigs', 'signature'])
/** Short flags whose value is a credential in common CLIs: -t token, -k key, -a auth, -p password, -u user:password. */
const CREDENTIAL_SHORT_FLAGS = new Set(['t', 'k', 'a', 'p', 'u'])

function wordsOf (name: string): string[] {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(/[-_.\s]+/).filter(w => w !== '')
}

/** A name (without leading dashes) that suggests a credential. */
export function isCredentialName (name: string): boolean {
  const bare = name.replace(/^-+/, '')
  if (secretRegistry.isSecretKey(bare)) return true
  const joined = bare.toLowerCase().replace(/[-_.\s]/g, '')
  if (CREDENTIAL_SUBSTRINGS.some(s => joined.includes(s))) return true
  return wordsOf(bare).some(w => CREDENTIAL_WORDS.has(w))
}

/** A flag (`--token`, `-t`, `--gh-pat`) whose value (the next argument, or after `=`) is a credential. */
export function isCredentialFlag (flag: string): boolean {
  if (/^-[A-Za-z]$/.test(flag)) return CREDENTIAL_SHORT_FLAGS.has(flag.slice(1).toLowerCase())
  return isCredentialName(flag)
}
