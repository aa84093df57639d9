import type { Logger } from 'pino'
import { diffConfig, effectiveConfig } from '../config/config-diff.ts'
import { ConfigError, loadConfig, type ConfigIssue } from '../config/load-config.ts'
import { applyReload, type ReloadRegistration } from '../config/reload-registration.ts'
import type { GatewayConfig } from '../config/schema.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { ReloadResult } from './reload-result.ts'

export interface ReloaderDeps {
  file: string
  env: NodeJS.ProcessEnv
  current: () => GatewayConfig
  /**
   * What a valid config is applied to, walked in order (see `applyReload`); what only a restart
   * applies has already been put back to its running value.
   */
  registrations: readonly ReloadRegistration[]
  metrics: Pick<Metrics, 'configReloads' | 'configLastReloadSuccessful' | 'configLastReloadSuccessTimestamp'>
  log: Logger
}

/** `dryRun`: read, validate and diff the file against the config in force, and apply nothing (a preview). */
export type Reload = (trigger: string, options?: { dryRun?: boolean }) => Promise<ReloadResult>

function issuesOf (err: unknown): ConfigIssue[] {
  if (err instanceof ConfigError) return [...err.issues]
  return [{ path: '(file)', message: err instanceof Error ? err.message : String(err) }]
}

/**
 * Reads and validates the whole file first; an invalid one changes nothing. A valid one is applied
 * as a diff against the config in force. One reload at a time: a second waits for the first.
 */
export function createReloader (deps: ReloaderDeps): Reload {
  const { metrics, log } = deps
  let queue: Promise<unknown> = Promise.resolve()

  function failed (outcome: 'invalid' | 'error', errors: ConfigIssue[], trigger: string): ReloadResult {
    metrics.configReloads.inc({ outcome })
    metrics.configLastReloadSuccessful.set(0)
    log.error({ trigger, file: deps.file, errors }, outcome === 'invalid' ? 'config reload refused: the file is invalid; nothing was applied' : 'config reload failed while applying')
    return { outcome, errors }
  }

  async function reload (trigger: string, dryRun: boolean): Promise<ReloadResult> {
    let next: GatewayConfig
    try {
      next = await loadConfig(deps.file, deps.env)
    } catch (err: unknown) {
      if (dryRun) return { outcome: 'invalid', errors: issuesOf(err) }
      return failed('invalid', issuesOf(err), trigger)
    }
    const previous = deps.current()
    const diff = diffConfig(previous, next)
    // A preview changes nothing: no registration runs, no reload is counted or logged as one.
    if (dryRun) return { outcome: 'ok', diff }
    try {
      applyReload(deps.registrations, effectiveConfig(previous, next), diff)
    } catch (err: unknown) {
      return failed('error', issuesOf(err), trigger)
    }
    metrics.configReloads.inc({ outcome: 'ok' })
    metrics.configLastReloadSuccessful.set(1)
    metrics.configLastReloadSuccessTimestamp.set(Date.now() / 1000)
    const { added, removed, changed } = diff.upstreams
    log.info({ trigger, file: deps.file, added, removed, changed, applied: diff.applied }, 'config reloaded')
    if (diff.restartRequired.length > 0) log.warn({ paths: diff.restartRequired }, 'config reload: these changes take effect only after a restart; their running values stay')
    return { outcome: 'ok', diff }
  }

  return async (trigger, options) => {
    const run = queue.then(async () => await reload(trigger, options?.dryRun === true))
    queue = run.catch(() => {})
    return await run
  }
}
