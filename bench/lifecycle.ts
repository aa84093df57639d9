// Lifecycle: everything started is stopped, on success, error, signal or the time limit.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { markAborted } from './abort.ts'
import { STOP_GRACE_MS, log, sleep } from './common.ts'
import type { Target } from './target.ts'
import { stopAllProcesses } from './processes.ts'

const targets = new Set<Target>()
let tmpDir: string | undefined
let cleaning: Promise<void> | undefined

/** Registers a path as soon as it starts, so that cleanup closes it even if it never finishes starting. */
export function trackTarget (t: Target): void {
  targets.add(t)
}

/** The run's temporary directory (gateway configs, HAProxy configs), removed by cleanup(). */
export function makeTmpDir (): string {
  tmpDir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-bench-'))
  return tmpDir
}

export async function cleanup (): Promise<void> {
  cleaning ??= (async () => {
    for (const t of [...targets]) {
      await Promise.race([t.close().catch((err: unknown) => { log(`closing ${t.id}: ${String(err)}`) }), sleep(3 * STOP_GRACE_MS)])
      targets.delete(t)
    }
    await stopAllProcesses()
    if (tmpDir !== undefined) rmSync(tmpDir, { recursive: true, force: true })
  })()
  await cleaning
}

export function abort (reason: string, code: number): void {
  if (!markAborted(reason)) return
  log(`aborting: ${reason}`)
  // The cleanup itself is bounded too.
  setTimeout(() => { process.exit(code) }, 4 * STOP_GRACE_MS * (targets.size + 1)).unref()
  void cleanup().finally(() => process.exit(code))
}
