import { spawnSync } from 'node:child_process'
import type { TestContext } from 'node:test'

/**
 * A test's external binary (redis-server, haproxy, promtool): whether it runs here, looked up once,
 * and the loud skip when it does not. Under CI=true a missing binary fails the test instead, so CI
 * never goes green by skipping.
 */
export function requiredBinary (binary: string, versionFlag: string, untested: string, install: string): { installed: () => boolean, orSkip: (t: TestContext) => boolean } {
  let found: boolean | undefined
  const installed = (): boolean => (found ??= spawnSync(binary, [versionFlag], { stdio: 'ignore' }).status === 0)
  return {
    installed,
    orSkip: (t) => {
      if (installed()) return true
      const why = `${binary} not installed: ${untested} (${install})`
      if (process.env.CI === 'true') throw new Error(`${why}; CI=true requires it`)
      console.warn(`\n*** SKIPPED: ${why} ***\n`)
      t.skip(why)
      return false
    }
  }
}
