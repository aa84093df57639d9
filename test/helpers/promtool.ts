import { spawnSync } from 'node:child_process'
import { requiredBinary } from './binary-or-skip.ts'

const BINARY = 'promtool'
const RUN_TIMEOUT_MS = 30_000

const binary = requiredBinary(BINARY, '--version', 'the alert rules and the Prometheus config are NOT checked', 'apt-get install prometheus, or brew install prometheus')

export const hasPromtool = binary.installed

/** False, and the test skipped loudly, when {@link BINARY} is missing here; under CI=true the test fails instead. */
export const promtoolOrSkip = binary.orSkip

/** Runs promtool with `args`; its exit status and what it printed, stdout and stderr together. */
export function promtool (args: string[]): { status: number | null, output: string } {
  const run = spawnSync(BINARY, args, { encoding: 'utf8', timeout: RUN_TIMEOUT_MS })
  return { status: run.status, output: `${run.stdout}${run.stderr}` }
}
