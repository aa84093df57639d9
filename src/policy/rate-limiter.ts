import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type * as Flexible from 'rate-limiter-flexible'
import type { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible'
import type { Principal } from '../auth/principal.ts'
import { createMatcher } from '../catalog/naming.ts'
import type { RateLimitKey, RateLimitRule, RateLimitsConfig } from '../config/access-schema.ts'
import { lazyRequire } from '../net/lazy-require.ts'
import { type RedisBlock, closeRedisClient, createRedisClient, redisConnectionFor } from '../net/redis-client.ts'
import type { Metrics } from '../observability/metrics.ts'
import { createPrincipalMatcher } from './principal-match.ts'

/** While the store is failing, at most one call per interval tries it again; the rest go straight to memory. */
export const STORE_PROBE_INTERVAL_MS = 1000

export interface CallKey {
  principal: Principal
  /** The exposed tool name. */
  tool: string
  upstream: string
}

export type RateDecision =
  | { allowed: true }
  | { allowed: false, retryAfterMs: number, rule: RateLimitRule, ruleIndex: number }

export interface RateLimiter {
  readonly store: 'memory' | 'redis'
  /** False when there are no rules: callers may skip `check` entirely. */
  readonly active: boolean
  /** Never rejects and never waits much longer than redisTimeoutMs because of the store. */
  check: (call: CallKey) => Promise<RateDecision>
  close: () => Promise<void>
}

export interface RateLimiterDeps {
  log: Logger
  metrics: Pick<Metrics, 'rateLimitStoreErrors' | 'rateLimitFallback'>
  /** The shared `redis` block: used when the rate limits name no redisUrl of their own. */
  redis?: RedisBlock | undefined
}

// Loaded when the config has rate-limit rules.
const flexible = lazyRequire<typeof Flexible>('rate-limiter-flexible')

type Limiter = RateLimiterMemory | RateLimiterRedis

/** rate-limiter-flexible's three ways out of consume(), as data. */
type Outcome =
  | { kind: 'allowed', limiter: Limiter, key: string }
  | { kind: 'refused', msBeforeNext: number }
  | { kind: 'failed', err: unknown }

interface CompiledRule {
  rule: RateLimitRule
  index: number
  matches: (principal: Principal, tool: string) => boolean
  keyOf: (call: CallKey) => string
  memory: RateLimiterMemory
  redis: RateLimiterRedis | undefined
}

const ALLOWED: RateDecision = Object.freeze({ allowed: true })
const ALLOWED_PROMISE = Promise.resolve(ALLOWED)
const noop = (): void => {}

function compileMatch (rule: RateLimitRule): (principal: Principal, tool: string) => boolean {
  const principalMatches = createPrincipalMatcher(rule.principals)
  const toolMatches = createMatcher(rule.tools)
  return (principal, tool) => toolMatches(tool) && principalMatches(principal)
}

// Tool names never contain ':' (see EXPOSED_NAME) and neither does `via`, so these joins are unambiguous.
function keyFunction (key: RateLimitKey): (call: CallKey) => string {
  switch (key) {
    case 'principal': return c => `${c.principal.via}:${c.principal.id}`
    case 'tool': return c => c.tool
    case 'principal+tool': return c => `${c.tool}:${c.principal.via}:${c.principal.id}`
    case 'upstream': return c => c.upstream
    case 'global': return () => 'all'
  }
}

/**
 * Counters are named after what the rule says, not where it sits: replicas with the same rules share
 * counters, reordering rules keeps them, and a changed rule starts afresh. Identical rules are told
 * apart by their occurrence so they never consume from one counter twice.
 */
function rulePrefixes (keyPrefix: string, rules: readonly RateLimitRule[]): string[] {
  const seen = new Map<string, number>()
  return rules.map(r => {
    const content = JSON.stringify([r.principals, r.tools, r.key, r.limit, r.windowMs])
    const occurrence = seen.get(content) ?? 0
    seen.set(content, occurrence + 1)
    const hash = createHash('sha256').update(`${content}#${occurrence}`).digest('hex').slice(0, 12)
    return `${keyPrefix}:${hash}`
  })
}

function consume (limiter: Limiter, key: string): Promise<Outcome> {
  return limiter.consume(key).then(
    (): Outcome => ({ kind: 'allowed', limiter, key }),
    // Limited: a RateLimiterRes. Store trouble: anything else.
    (reason: unknown): Outcome => reason instanceof flexible().RateLimiterRes
      ? { kind: 'refused', msBeforeNext: reason.msBeforeNext }
      : { kind: 'failed', err: reason })
}

/**
 * Only what is safe to log: ioredis errors can carry the command and its arguments (AUTH included).
 * A plain object, so pino prints it as-is instead of a stack that points here.
 */
function safeError (err: unknown): { type: string, message: string, code?: string } {
  if (!(err instanceof Error)) return { type: typeof err, message: String(err) }
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? { type: err.name, message: err.message, code } : { type: err.name, message: err.message }
}

/** Rules that apply to a call, in config order: what `check` would consume from. */
export function matchingRateRules (config: RateLimitsConfig, principal: Principal, tool: string): Array<{ rule: RateLimitRule, index: number }> {
  return config.rules.flatMap((rule, index) => compileMatch(rule)(principal, tool) ? [{ rule, index }] : [])
}

export function createRateLimiter (config: RateLimitsConfig, deps: RateLimiterDeps): RateLimiter {
  const { log, metrics } = deps
  const timeoutMs = config.redisTimeoutMs
  const client = config.store === 'redis' && config.rules.length > 0
    ? createRedisClient({ connection: redisConnectionFor(config.redisUrl, deps.redis) ?? { url: '' }, commandTimeoutMs: config.redisTimeoutMs, connectionName: 'switchboard-rate-limit' })
    : undefined
  const prefixes = rulePrefixes(config.keyPrefix, config.rules)
  const rules: CompiledRule[] = config.rules.map((rule, index) => {
    const options = { points: rule.limit, duration: rule.windowMs / 1000, keyPrefix: prefixes[index] as string }
    return {
      rule,
      index,
      matches: compileMatch(rule),
      keyOf: keyFunction(rule.key),
      memory: new (flexible().RateLimiterMemory)(options),
      // No insuranceLimiter: the fallback below also skips a failing store, which rlf's would not.
      redis: client === undefined ? undefined : new (flexible().RateLimiterRedis)({ ...options, storeClient: client, rejectIfRedisNotReady: true })
    }
  })

  let closed = false
  let everReady = false
  let bootWait: Promise<void> | undefined
  let failing = false
  let nextProbeAt = 0

  if (client !== undefined) {
    // Without a listener ioredis reports every failed reconnect as an unhandled 'error' event.
    client.on('error', (err: unknown) => { log.debug({ err: safeError(err) }, 'rate-limit store connection error') })
    client.on('ready', () => {
      everReady = true
      // Back on line: let the next call find out at once instead of waiting for the probe interval.
      nextProbeAt = 0
    })
  }

  function storeFailed (err: unknown): void {
    metrics.rateLimitStoreErrors.inc({ store: 'redis' })
    nextProbeAt = Date.now() + STORE_PROBE_INTERVAL_MS
    if (failing) return
    failing = true
    metrics.rateLimitFallback.set(1)
    log.warn({ err: safeError(err) }, 'rate-limit store failed; limiting in memory until it recovers')
  }

  function storeRecovered (): void {
    if (!failing) return
    failing = false
    metrics.rateLimitFallback.set(0)
    log.info('rate-limit store recovered')
  }

  /** Whether this call goes to Redis; in an outage only the probe does. */
  function useRedis (): boolean {
    if (closed) return false
    if (!failing) return true
    const now = Date.now()
    if (now < nextProbeAt) return false
    nextProbeAt = now + STORE_PROBE_INTERVAL_MS
    return true
  }

  /** The first calls after start wait (bounded) for the first connection instead of declaring an outage. */
  function waitForFirstConnection (c: Redis): Promise<void> {
    bootWait ??= new Promise<void>(resolve => {
      const timer = setTimeout(resolve, timeoutMs)
      timer.unref()
      c.once('ready', () => { clearTimeout(timer); resolve() })
    })
    return bootWait
  }

  async function consumeRedis (matched: CompiledRule[], keys: string[]): Promise<Outcome[]> {
    let timer: NodeJS.Timeout | undefined
    // ioredis' commandTimeout bounds each command; this bounds the whole check (EVALSHA → NOSCRIPT → EVAL is two).
    const timedOut = new Promise<undefined>(resolve => {
      timer = setTimeout(() => { resolve(undefined) }, timeoutMs)
      timer.unref()
    })
    const results = await Promise.race([Promise.all(matched.map((r, i) => consume(r.redis as RateLimiterRedis, keys[i] as string))), timedOut])
    clearTimeout(timer)
    if (results === undefined) {
      storeFailed(new Error(`no answer within ${timeoutMs} ms`))
      return await consumeMemory(matched, keys)
    }
    if (!results.some(o => o.kind === 'failed')) {
      storeRecovered()
      return results
    }
    return await Promise.all(results.map((o, i) => {
      if (o.kind !== 'failed') return o
      storeFailed(o.err)
      return consume((matched[i] as CompiledRule).memory, keys[i] as string)
    }))
  }

  function consumeMemory (matched: CompiledRule[], keys: string[]): Promise<Outcome[]> {
    return Promise.all(matched.map((r, i) => consume(r.memory, keys[i] as string)))
  }

  async function decide (matched: CompiledRule[], call: CallKey): Promise<RateDecision> {
    const keys = matched.map(r => r.keyOf(call))
    if (client !== undefined && !everReady && !failing && !closed) await waitForFirstConnection(client)
    const outcomes = client !== undefined && useRedis() ? await consumeRedis(matched, keys) : await consumeMemory(matched, keys)
    let refusing: { rule: CompiledRule, ms: number } | undefined
    outcomes.forEach((o, i) => {
      if (o.kind !== 'refused') return
      const rule = matched[i] as CompiledRule
      // -1 means "no expiry" to rlf; never tell a client to retry sooner than now or later than a window.
      const ms = o.msBeforeNext < 0 ? rule.rule.windowMs : Math.min(Math.max(1, o.msBeforeNext), rule.rule.windowMs)
      if (refusing === undefined || ms > refusing.ms) refusing = { rule, ms }
    })
    if (refusing === undefined) return ALLOWED
    // The call does not run, so rules that let it through get their point back.
    for (const o of outcomes) if (o.kind === 'allowed') o.limiter.reward(o.key).catch(noop)
    return { allowed: false, retryAfterMs: refusing.ms, rule: refusing.rule.rule, ruleIndex: refusing.rule.index }
  }

  return {
    store: config.store,
    active: rules.length > 0,
    check (call) {
      let matched: CompiledRule[] | undefined
      for (const r of rules) if (r.matches(call.principal, call.tool)) (matched ??= []).push(r)
      return matched === undefined ? ALLOWED_PROMISE : decide(matched, call)
    },
    async close () {
      if (closed) return
      closed = true
      // This replica no longer limits anything, so it is no longer in fallback either.
      if (failing) metrics.rateLimitFallback.set(0)
      if (client !== undefined) await closeRedisClient(client)
    }
  }
}
