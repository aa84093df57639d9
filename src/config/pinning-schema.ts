import { z } from 'zod'
import { basename, dirname, extname, join, resolve } from 'node:path'

// The `pinning` block: tool-definition pinning, the gateway's defence against an upstream that
// changes what a tool says or accepts after it was trusted (a "rug pull").

export const DEFAULT_PINS_KEY_PREFIX = 'switchboard:pins'
export const DEFAULT_PINS_RELOAD_INTERVAL_MS = 1000
export const DEFAULT_PINS_REDIS_TIMEOUT_MS = 500

export const pinningSchema = z.strictObject({
  mode: z.enum(['off', 'warn', 'quarantine']).default('warn')
    .describe('off: no pinning; warn: a changed tool stays served, logged and counted; quarantine: a changed tool is hidden and refused until approved'),
  newTools: z.enum(['pin', 'hold']).default('pin')
    .describe('a new tool of an upstream that already has pins: pin it on first sight, or hold it like a changed one until approved'),
  store: z.enum(['file', 'redis']).default('file').describe('file: a JSON file beside the config; redis: one set of pins for every replica'),
  file: z.string().min(1).optional()
    .describe('file store: the pin file, relative to the config file (default: <config name>.pins.json next to it)'),
  redisUrl: z.string().optional().describe('redis store: redis://[user:password@]host:port[/db]; take the password from the environment'),
  keyPrefix: z.string().min(1).default(DEFAULT_PINS_KEY_PREFIX).describe('redis store: one hash per upstream, <keyPrefix>:<upstream>'),
  redisTimeoutMs: z.number().int().min(10).max(10_000).default(DEFAULT_PINS_REDIS_TIMEOUT_MS).describe('redis store: a command slower than this counts as a store failure'),
  reloadIntervalMs: z.number().int().min(100).max(600_000).default(DEFAULT_PINS_RELOAD_INTERVAL_MS)
    .describe('how often a running gateway looks for approvals (file: stat of the pin file; redis: re-read of the hashes)')
}).superRefine((p, ctx) => {
  if (typeof p !== 'object' || p === null) return
  if (p.store === 'redis') {
    // Without one, the redis block serves (whatever its topology): checked with the whole config.
    if (p.redisUrl !== undefined && !/^rediss?:\/\//.test(p.redisUrl)) ctx.addIssue({ code: 'custom', path: ['redisUrl'], message: 'must be a redis:// or rediss:// URL' })
  } else if (p.redisUrl !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['redisUrl'], message: 'only used with store redis' })
  }
}, { when: () => true })

export const PINNING_DEFAULTS = {
  mode: 'warn',
  newTools: 'pin',
  store: 'file',
  keyPrefix: DEFAULT_PINS_KEY_PREFIX,
  redisTimeoutMs: DEFAULT_PINS_REDIS_TIMEOUT_MS,
  reloadIntervalMs: DEFAULT_PINS_RELOAD_INTERVAL_MS
} as const

export type PinningConfig = z.output<typeof pinningSchema>

/**
 * The pin file of a config read from `configFile`: `pinning.file` relative to the config's
 * directory, or `<dir>/<basename>.pins.json`, so the gateway and `switchboard pins` always agree.
 */
export function resolvePinFile (file: string | undefined, configFile: string): string {
  const dir = dirname(resolve(configFile))
  if (file !== undefined) return resolve(dir, file)
  return join(dir, `${basename(configFile, extname(configFile))}.pins.json`)
}
