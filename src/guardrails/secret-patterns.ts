import type { SecretMatch } from './secret-detector.ts'

// The pattern list behind createPatternDetector. Each shape is one a provider documents, anchored on
// its fixed prefix so that random data (UUIDs, git SHAs, base64 images, hashes) never matches:
//
//   aws_access_key  AKIA/ASIA/ABIA/ACCA (and the legacy A3T…) + 16 base32 characters: the access key id
//                   (the secret access key has no shape of its own; it is caught as an assignment,
//                   aws_secret_access_key=…)
//   github_token    ghp_ (classic), gho_ (OAuth), ghu_ (user-to-server), ghs_ (server-to-server), ghr_
//                   (refresh) + 36 or more alphanumerics; github_pat_… (fine-grained)
//   slack_token     xoxb-, xoxa-, xoxp-, xoxr-, xoxs- followed by dash-separated segments
//   private_key     a PEM block `-----BEGIN … PRIVATE KEY-----` with base64 in it, up to its END line (or
//                   to the end of the string when the block was cut): the whole block is the secret
//   jwt             three base64url segments, header and payload starting `eyJ` (`{"`), whose header
//                   decodes to a JSON object with a string `alg`
//   password        `password=…`, `passwd: …`, `pwd=…`, `secret: …`, `api_key=…`, `…secret_access_key=…`
//                   (any case, any prefix: DB_PASSWORD, client_secret) assigned a literal: quoted, or
//                   unquoted with at least two character classes; placeholders (`string`, `null`,
//                   `${VAR}`, `<password>`, `****`, `[redacted…]`), code references (`req.body.pwd`,
//                   `getPassword()`) and paths are not secrets. Only the value is the match, so a
//                   redaction keeps `password=` readable.

const AWS = /\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b/
const GITHUB = /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/
const SLACK = /\bxox[baprs]-[A-Za-z0-9]{6,}(?:-[A-Za-z0-9]+){1,8}\b/
// The body must start within 400 characters of the BEGIN line (not crossing another `-----`) with a
// run of base64, so prose that names the header is not a key.
const PEM = /-----BEGIN[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:(?!-----)[\s\S]){0,400}?[A-Za-z0-9+/=]{20}[\s\S]*?(?:-----END[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)/
const JWT = /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/

const TOKEN_KINDS = ['aws_access_key', 'github_token', 'slack_token', 'private_key', 'jwt'] as const
/** One pass over a string for every token shape: the named group that matched says the kind. */
const TOKENS = new RegExp([AWS, GITHUB, SLACK, PEM, JWT].map((re, i) => `(?<${TOKEN_KINDS[i] ?? ''}>${re.source})`).join('|'), 'g')

/** Every token shape's fixed part, without the boundaries that keep irregexp from scanning for literals: most strings hold none and stop here. */
const TOKEN_HINT = /A(?:KIA|SIA|BIA|CCA|3T)|gh[pousr]_|github_pat_|xox[baprs]-|PRIVATE KEY|eyJ/

export function findTokens (text: string): SecretMatch[] {
  if (!TOKEN_HINT.test(text)) return []
  const found: SecretMatch[] = []
  for (const m of text.matchAll(TOKENS)) {
    const groups = m.groups ?? {}
    const kind = TOKEN_KINDS.find(k => groups[k] !== undefined)
    if (kind === undefined) continue
    if (kind === 'jwt' && !isJwt(m[0])) continue
    found.push({ kind, start: m.index, end: m.index + m[0].length })
  }
  return found
}

function isJwt (token: string): boolean {
  const header = token.slice(0, token.indexOf('.'))
  try {
    const decoded: unknown = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'))
    return typeof decoded === 'object' && decoded !== null && typeof (decoded as Record<string, unknown>).alg === 'string'
  } catch {
    return false
  }
}

// A name that ends in one of the words (what precedes it is free: DB_PASSWORD, client_secret), an
// optional closing quote (JSON, possibly escaped inside a JSON string), `=`, `:`, `:=` or `=>`, then
// the value: double-quoted, single-quoted, or bare up to a separator.
const NAME = 'password|passwd|pwd|secret|api[_-]?key|secret[_-]?access[_-]?key'
const ASSIGNMENT = new RegExp(
  `(?:${NAME})\\\\?["']?[ \\t]*(?::=|[:=]>?)[ \\t]*(?:\\\\?"([^"\\\\\\s]{1,512})\\\\?"|'([^'\\s]{1,512})'|([^\\s"'\`,;&<>(){}\\[\\]\\\\]{1,512}))`,
  'gi'
)
/** The same words as a field name of structured data: `password`, `userPassword`, `client_secret`, `X-Api-Key`. */
const FIELD = new RegExp(`(?:${NAME})$`, 'i')

const MIN_VALUE_CHARS = 6
const PLACEHOLDER = /^(?:null|nil|none|true|false|undefined|string|str|text|number|int|integer|bool|boolean|object|required|optional|redacted|hidden|masked|empty|example|sample|password|passwd|secret|your[\w-]*|my[\w-]*here|x+|\*+|•+|\.+|-+|_+|#+)$/i

function isPlaceholder (value: string): boolean {
  if (value.length < MIN_VALUE_CHARS || PLACEHOLDER.test(value)) return true
  // Template and variable references, already redacted values: ${VAR}, $VAR, {{x}}, <x>, %s, [redacted:…].
  if (/^[$<%[{]/.test(value) || value.includes('${') || value.includes('{{')) return true
  // A single repeated character.
  return /^(.)\1*$/.test(value)
}

/** A bare value that is a literal rather than code or prose: at least two character classes, not a reference, not a path. */
function isBareLiteral (value: string, next: string | undefined): boolean {
  if (next === '(') return false // getPassword()
  if (/^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/.test(value)) return false // req.body.password
  if (/^[~.]?\//.test(value)) return false // pwd: /srv/app
  let classes = 0
  if (/[a-z]/.test(value)) classes++
  if (/[A-Z]/.test(value)) classes++
  if (/[0-9]/.test(value)) classes++
  if (/[^A-Za-z0-9]/.test(value)) classes++
  return classes >= 2
}

export function findAssignments (text: string): SecretMatch[] {
  const found: SecretMatch[] = []
  for (const m of text.matchAll(ASSIGNMENT)) {
    const quoted = m[1] ?? m[2]
    // A bare value ends a sentence as often as not: `password: required.` names no password.
    const value = quoted ?? m[3]?.replace(/[.!?:]+$/, '')
    if (value === undefined || isPlaceholder(value)) continue
    const end = m.index + m[0].length - (quoted === undefined ? (m[3]?.length ?? 0) - value.length : 0)
    const start = quoted === undefined ? end - value.length : m.index + m[0].lastIndexOf(value)
    if (quoted === undefined && !isBareLiteral(value, text[end])) continue
    found.push({ kind: 'password', start, end: start + value.length })
  }
  return found
}

/** A field named like a password whose value is a literal (not empty, not a placeholder): the whole value. */
export function findFieldSecret (key: string, value: string): SecretMatch | undefined {
  if (!FIELD.test(key) || /\s/.test(value) || isPlaceholder(value)) return undefined
  return { kind: 'password', start: 0, end: value.length }
}
