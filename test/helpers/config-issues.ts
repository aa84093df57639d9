// Config test helpers: a `${NAME}` reference as a config file holds it, and the issues a config
// text is refused with, as `path: message` lines (none when it is accepted).
import { ConfigError, parseConfig } from '../../src/config/load-config.ts'

export function envRef (name: string): string {
  return '$' + `{${name}}`
}

export function configIssues (yaml: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(yaml, env)
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map(i => `${i.path}: ${i.message}`)
    throw err
  }
  return []
}
