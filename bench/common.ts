// What every part of the bench shares: where the repository is, the bounds on starting and
// stopping processes, and the progress log (stderr, so stdout carries only the report).
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../', import.meta.url))
export const START_TIMEOUT_MS = 30_000
export const STOP_GRACE_MS = 5_000

export const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

export function log (line: string): void {
  process.stderr.write(`[bench] ${line}\n`)
}

/** The installed version of an npm package (from node_modules), or '?'. */
export function packageVersion (pkg: string): string {
  try {
    return (JSON.parse(readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version?: string }).version ?? '?'
  } catch {
    return '?'
  }
}
