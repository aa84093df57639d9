// Lifecycle: everything started is stopped, on success, error, signal or the time limit.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { markAborted } from './abort.ts'
import { STOP_GRACE_MS, log, sleep } from './common.ts'
import { stopAllProcesses } from './processes.ts'

interface Closer { what: string, close: () => Promise<void> }
const closers: Closer[] = []
let tmpDir: string | undefined
let cleaning: Promise<void> | undefined

/**
 * Registers something to close at cleanup (a driver, a path's processes) as soon as it exists.
 * Closed last-in first-out: a path's drivers end their sessions before its processes stop.
 */
export function onCleanup (what: string, close: () => Promise<void>): void {
  closers.push({ what, close })
}

/** The run's temporary directory (gateway configs, HAProxy configs), removed by cleanup(). */
export function makeTmpDir (): string {
  tmpDir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-bench-'))
  return tmpDir
}

export async function cleanup (): Promise<void> {
  cleaning ??= (async () => {
    for (let c = closers.pop(); c !== undefined; c = closers.pop()) {
      const { what, close } = c
      await Promise.race([close().catch((err: unknown) => { log(`closing ${what}: ${String(err)}`) }), sleep(3 * STOP_GRACE_MS)])
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
  setTimeout(() => { process.exit(code) }, 4 * STOP_GRACE_MS * (closers.length + 1)).unref()
  void cleanup().finally(() => process.exit(code))
}
