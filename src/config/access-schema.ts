import { z } from 'zod'
import { compileCel } from '../policy/cel-expression.ts'

// The config sections that decide who may call what, and how often: auth, policies, rateLimits, audit.

export const DEFAULT_CLOCK_TOLERANCE_MS = 30_000
export const DEFAULT_REDIS_TIMEOUT_MS = 250
export const DEFAULT_AUDIT_REDACT = ['password', 'passwd', 'secret', 'token', 'apiKey', 'api_key', 'authorization', 'cookie']
/** Matched anywhere in a field name, case and `-` `_` `.` ignored: client_secret, access_token, privateKey, sessionToken, pwd, x-api-key. */
export const DEFAULT_AUDIT_REDACT_PATTERNS = ['secret', 'token', 'password', 'passwd', 'pwd', 'apikey', 'privatekey', 'authorization', 'cookie', 'credential', 'sessionid']

const glob = z.string().min(1)
const principalPattern = z.string().min(1).describe('a principal id (glob), role:<name> (glob), or * for everyone')

/** An http(s) URL without a fragment (the JWKS URI, the resource, the guardrail hook). */
export function httpUrl (message: string) {
  return z.string().refine((s) => {
    try {
      const u = new URL(s)
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.hash === ''
    } catch { return false }
  }, message)
}

const apiKeySchema = z.strictObject({
  id: z.string().min(1).refine(s => !s.startsWith('role:') && !s.includes('*'), 'must not start with role: or contain *')
    .describe('the principal this key authenticates as'),
  // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax, shown to the user
  key: z.string().min(16, 'must be at least 16 characters (e.g. openssl rand -base64 32); take it from the environment: "${MY_KEY}"')
    .describe('the secret a client sends as Authorization: Bearer <key>; held only as a SHA-256 digest'),
  roles: z.array(z.string().min(1)).default([]).describe('roles of this principal, for policies (role:<name>) and endpoints')
})

/** The gateway as an OpenID Connect relying party of jwt.issuer: how a browser proves it is a JWT principal before a connect. */
export const jwtBrowserSchema = z.strictObject({
  clientId: z.string().min(1).describe('the gateway\'s client at the identity provider, registered with the redirect URI <publicUrl>/connect/signin/callback'),
  clientSecret: z.string().min(1).optional().describe('its secret (a confidential client); take it from the environment; absent: a public client (PKCE only)'),
  scopes: z.array(z.string().min(1)).default(['openid']).describe('scopes asked for at sign-in; openid is always asked')
})

const jwtSchema = z.strictObject({
  issuer: z.string().min(1).describe('the iss every token must carry'),
  audience: z.string().min(1).describe('the aud every token must carry: the gateway\'s canonical resource URI, e.g. https://gw.example.com/mcp'),
  jwksUri: httpUrl('must be an http(s) URL').describe('where the identity provider publishes its signing keys'),
  rolesClaim: z.string().min(1).default('roles').describe('claim holding the roles: an array or a space-separated string; dots walk into objects (realm_access.roles)'),
  subjectClaim: z.string().min(1).default('sub').describe('claim holding the principal id'),
  algorithms: z.array(z.string().min(1)).optional().describe('accepted signature algorithms (default: what the key in the JWKS declares)'),
  clockToleranceMs: z.number().int().min(0).max(300_000).default(DEFAULT_CLOCK_TOLERANCE_MS).describe('clock skew allowed on exp and nbf'),
  jwksTimeoutMs: z.number().int().positive().default(5000).describe('a JWKS fetch slower than this fails (the request gets 503 with Retry-After)'),
  jwksCacheMs: z.number().int().positive().default(600_000).describe('how long fetched signing keys are trusted before they are fetched again'),
  browser: jwtBrowserSchema.optional().describe('the browser sign-in that proves who opens a connect link (OpenID Connect, authorization code with PKCE); required when an upstream has auth.type oauth')
})

export const authSchema = z.strictObject({
  apiKeys: z.array(apiKeySchema).default([]).describe('static API keys, each a principal with roles'),
  jwt: jwtSchema.optional().describe('JWTs from your identity provider, verified against its JWKS'),
  resource: httpUrl('must be an http(s) URL without a fragment').optional()
    .describe('the gateway\'s canonical resource URI for RFC 9728 metadata (default: jwt.audience)'),
  authorizationServers: z.array(httpUrl('must be an http(s) URL')).min(1).optional()
    .describe('authorization servers named in the protected-resource metadata (default: [jwt.issuer])'),
  scopes: z.array(z.string().min(1)).default([]).describe('scopes_supported in the protected-resource metadata and the 401 challenge')
}).superRefine((a, ctx) => {
  if (typeof a !== 'object' || a === null) return
  const keys = Array.isArray(a.apiKeys) ? a.apiKeys : []
  if (keys.length === 0 && a.jwt === undefined) ctx.addIssue({ code: 'custom', path: [], message: 'needs apiKeys or jwt (leave auth out to run without authentication on loopback)' })
  const ids = new Map<string, number>()
  const secrets = new Map<string, number>()
  keys.forEach((k, i) => {
    if (typeof k !== 'object' || k === null) return
    if (typeof k.id === 'string') {
      const first = ids.get(k.id)
      if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['apiKeys', i, 'id'], message: `duplicate id "${k.id}" (also apiKeys[${first}])` })
      else ids.set(k.id, i)
    }
    if (typeof k.key === 'string') {
      const first = secrets.get(k.key)
      // Never echo the key itself.
      if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['apiKeys', i, 'key'], message: `same key as apiKeys[${first}]` })
      else secrets.set(k.key, i)
    }
  })
  if (a.jwt !== undefined && a.resource === undefined && typeof a.jwt === 'object' && a.jwt !== null && typeof a.jwt.audience === 'string' && !/^https?:\/\//.test(a.jwt.audience)) {
    ctx.addIssue({ code: 'custom', path: ['resource'], message: 'required when jwt.audience is not an http(s) URL: protected-resource metadata (RFC 9728) names the gateway by its URL' })
  }
  if (a.jwt === undefined && (a.resource !== undefined || a.authorizationServers !== undefined)) {
    ctx.addIssue({ code: 'custom', path: ['jwt'], message: 'required when resource or authorizationServers is set (they describe the OAuth setup)' })
  }
}, { when: () => true })

export const DEFAULT_APPROVAL_TIMEOUT_MS = 120_000

const approvalSchema = z.strictObject({
  via: z.enum(['client', 'operator']).default('client')
    .describe('client: the calling session is asked (elicitation, or input_required in 2026-07-28); operator: the call waits for a decision in the admin API'),
  timeoutMs: z.number().int().min(1000).max(3_600_000).default(DEFAULT_APPROVAL_TIMEOUT_MS)
    .describe('how long the call waits for an answer; no answer in time is a denial')
})

export type ApprovalConfig = z.output<typeof approvalSchema>

/** An ask rule without an approval block: the calling client is asked, for the default time. */
export const DEFAULT_APPROVAL: ApprovalConfig = Object.freeze({ via: 'client', timeoutMs: DEFAULT_APPROVAL_TIMEOUT_MS })

const annotationValue = z.union([z.boolean(), z.string(), z.number()])

const policyRuleSchema = z.strictObject({
  principals: z.array(principalPattern).min(1).default(['*']).describe('whom the rule is for: principal ids, role:<name>, * (globs)'),
  tools: z.array(glob).optional().describe('globs on exposed tool names'),
  prompts: z.array(glob).optional().describe('globs on exposed prompt names'),
  resources: z.array(glob).optional().describe('globs on resource URIs and URI templates'),
  effect: z.enum(['allow', 'deny', 'ask']).describe('ask: tools only; the call is held until a human approves it (see approval)'),
  approval: approvalSchema.optional().describe('effect ask: who is asked, and for how long (default: the client, 2 minutes)'),
  when: z.string().min(1).optional()
    .describe('tools only: a CEL expression over principal (id, roles, claims), tool (name, upstream, annotations) and args; the rule matches a call only when it is true. Decided at call time: lists show the tool'),
  annotations: z.record(z.string(), annotationValue).optional()
    .describe('tools only: the tool\'s annotations must have these values; a hint the tool leaves out takes the value that trusts it least (readOnlyHint false, destructiveHint true, idempotentHint false, openWorldHint true). Decided at call time'),
  description: z.string().optional().describe('for people; named in logs and explain output')
}).superRefine((r, ctx) => {
  if (typeof r !== 'object' || r === null) return
  if (r.tools === undefined && r.prompts === undefined && r.resources === undefined) {
    ctx.addIssue({ code: 'custom', path: [], message: 'needs at least one of tools, prompts, resources' })
  }
  const toolsOnly = (key: string): void => {
    if (r.prompts !== undefined || r.resources !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'applies to tool calls only: a rule with it names tools and no prompts or resources' })
  }
  if (r.effect === 'ask') toolsOnly('effect')
  if (r.when !== undefined) {
    toolsOnly('when')
    // Runs on a rule that failed its other checks too (when: () => true): only a string compiles.
    const compiled = typeof r.when === 'string' ? compileCel(r.when) : undefined
    if (compiled !== undefined && 'error' in compiled) ctx.addIssue({ code: 'custom', path: ['when'], message: compiled.error })
  }
  if (r.annotations !== undefined) toolsOnly('annotations')
  if (r.approval !== undefined && r.effect !== 'ask') ctx.addIssue({ code: 'custom', path: ['approval'], message: 'only with effect ask' })
}, { when: () => true })

export const policiesSchema = z.strictObject({
  default: z.enum(['allow', 'deny']).default('allow').describe('the effect when no rule matches'),
  rules: z.array(policyRuleSchema).default([]).describe('first match wins')
})

export const RATE_LIMIT_KEYS = ['principal', 'tool', 'principal+tool', 'upstream', 'global'] as const

const rateLimitRuleSchema = z.strictObject({
  principals: z.array(principalPattern).min(1).default(['*']).describe('whom the rule counts: principal ids, role:<name>, * (globs)'),
  tools: z.array(glob).min(1).default(['*']).describe('globs on exposed tool names'),
  key: z.enum(RATE_LIMIT_KEYS).describe('what shares one budget: each principal, each tool, each principal and tool, each upstream, or everyone'),
  limit: z.number().int().min(1).describe('calls allowed per window'),
  windowMs: z.number().int().min(1000).refine(n => n % 1000 === 0, 'must be a whole number of seconds (a multiple of 1000)')
    .describe('the window the limit counts over, in whole seconds (a multiple of 1000)')
})

export const rateLimitsSchema = z.strictObject({
  store: z.enum(['memory', 'redis']).default('memory').describe('memory: per process; redis: one budget for every replica'),
  redisUrl: z.string().optional().describe('redis://[user:password@]host:port[/db]; take the password from the environment'),
  keyPrefix: z.string().min(1).default('switchboard:rl').describe('redis store: every counter key starts with it'),
  redisTimeoutMs: z.number().int().min(10).max(10_000).default(DEFAULT_REDIS_TIMEOUT_MS)
    .describe('a Redis command slower than this counts as a store failure; calls are then limited in memory'),
  rules: z.array(rateLimitRuleSchema).default([]).describe('every rule that matches a call must pass')
}).superRefine((r, ctx) => {
  if (typeof r !== 'object' || r === null) return
  if (r.store === 'redis') {
    // Without one, the redis block serves (whatever its topology): checked with the whole config.
    if (r.redisUrl !== undefined && !/^rediss?:\/\//.test(r.redisUrl)) ctx.addIssue({ code: 'custom', path: ['redisUrl'], message: 'must be a redis:// or rediss:// URL' })
  }
}, { when: () => true })

export const auditSchema = z.strictObject({
  enabled: z.boolean().default(true).describe('one log line per tools/call'),
  arguments: z.boolean().default(false).describe('include the call\'s arguments (redacted) in the audit line'),
  redact: z.array(z.string().min(1)).default(DEFAULT_AUDIT_REDACT).describe('argument fields (any depth, case-insensitive) replaced by [redacted]'),
  redactPatterns: z.array(z.string().min(1)).default(DEFAULT_AUDIT_REDACT_PATTERNS)
    .describe('argument fields whose name contains one of these (any depth, case and - _ . ignored: "apikey" matches x-api-key and apiKey) are replaced by [redacted] too')
})

export const concurrencySchema = z.strictObject({
  limit: z.number().int().min(1).describe('calls this upstream runs at once'),
  maxWaitMs: z.number().int().min(0).max(600_000).default(5000).describe('how long a call may wait for a free slot before it is refused'),
  maxQueued: z.number().int().min(0).default(100).describe('calls that may wait at once; more are refused at once')
})

export type AuthConfig = z.output<typeof authSchema>
export type JwtBrowserConfig = z.output<typeof jwtBrowserSchema>
export type PoliciesConfig = z.output<typeof policiesSchema>
export type PolicyRule = PoliciesConfig['rules'][number]
export type RateLimitsConfig = z.output<typeof rateLimitsSchema>
export type RateLimitRule = RateLimitsConfig['rules'][number]
export type RateLimitKey = RateLimitRule['key']
export type AuditConfig = z.output<typeof auditSchema>
export type ConcurrencyConfig = z.output<typeof concurrencySchema>
