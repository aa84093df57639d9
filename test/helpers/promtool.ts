import { spawnSync } from 'node:child_process'
import type { TestContext } from 'node:test'

const BINARY = 'promtool'
const RUN_TIMEOUT_MS = 30_000

let installed: boolean | undefined

export function hasPromtool (): boolean {
  installed ??= spawnSync(BINARY, ['--version'], { stdio: 'ignore' }).status === 0
  return installed
}

/**
 * False (and the test skipped, loudly) when promtool is missing on a developer machine; under CI=true
 * a missing binary fails the test instead, so CI never goes green by skipping.
 */
export function promtoolOrSkip (t: TestContext): boolean {
  if (hasPromtool()) return true
  const why = `${BINARY} not installed: the alert rules and the Prometheus config are NOT checked (apt-get install prometheus, or brew install prometheus)`
  if (process.env.CI === 'true') throw new Error(`${why}; CI=true requires it`)
  console.warn(`\n*** SKIPPED: ${why} ***\n`)
  t.skip(why)
  return false
}

/** Runs promtool with `args`; its exit status and what it printed, stdout and stderr together. */
export function promtool (args: string[]): { status: number | null, output: string } {
  const run = spawnSync(BINARY, args, { encoding: 'utf8', timeout: RUN_TIMEOUT_MS })
  return { status: run.status, output: `${run.stdout}${run.stderr}` }
}
