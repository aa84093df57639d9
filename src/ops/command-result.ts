import { ConfigError, loadConfig } from '../config/load-config.ts'
import type { GatewayConfig } from '../config/schema.ts'
import { isSwitchboardError } from '../errors.ts'

/** What a CLI subcommand hands back to main.ts, which alone writes it out and exits with `code`. */
export interface CommandResult { code: number, stdout: string, stderr: string }

/** The config for a subcommand, or the exit-1 result that lists why it cannot be used. */
export async function loadCommandConfig (file: string, env: NodeJS.ProcessEnv): Promise<GatewayConfig | CommandResult> {
  try {
    return await loadConfig(file, env)
  } catch (err: unknown) {
    if (err instanceof ConfigError || isSwitchboardError(err)) return { code: 1, stdout: '', stderr: `switchboard: ${err.message}\n` }
    throw err
  }
}

export function isCommandResult (value: GatewayConfig | CommandResult): value is CommandResult {
  return 'code' in value && 'stderr' in value
}
