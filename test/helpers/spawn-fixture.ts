import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import path from 'node:path'

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const FIXTURE_PATH = path.join(REPO_ROOT, 'test', 'fixtures', 'controllable-server.ts')
const TSX_BIN = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx')
const TSX_LOADER_URL = import.meta.resolve('tsx')

const READY_TIMEOUT_MS = 15_000
const STOP_GRACE_MS = 3_000

export interface FixtureProcess {
  url: string
  pid: number
  /** Signals the whole process group (tsx runs the fixture in a child of its own). */
  kill(signal?: NodeJS.Signals): void
  /** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. */
  stop(): Promise<void>
  /** Resolves with the exit code (or signal) once the fixture exits. */
  readonly exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  /** Everything the fixture wrote to stderr so far, for assertion messages. */
  stderr(): string
}

const live = new Set<ChildProcess>()
// A crashed test run must not leave detached fixture groups behind.
process.once('exit', () => {
  for (const child of live) killGroup(child, 'SIGKILL')
})

/** Starts a network fixture (`--transport http|sse|websocket`) and waits for its LISTENING line. */
export async function startFixtureProcess (args: string[]): Promise<FixtureProcess> {
  const child = spawn(TSX_BIN, [FIXTURE_PATH, ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Own process group, so kill() reaches the node process tsx spawns as well.
    detached: true
  })
  live.add(child)
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child)
      resolve({ code, signal })
    })
  })
  let stderr = ''
  child.stderr?.setEncoding('utf8')
  child.stderr?.on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-8_192) })

  const handle: Omit<FixtureProcess, 'url'> = {
    pid: child.pid ?? -1,
    exited,
    stderr: () => stderr,
    kill: (signal = 'SIGTERM') => killGroup(child, signal),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      killGroup(child, 'SIGTERM')
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), STOP_GRACE_MS)
      await exited
      clearTimeout(timer)
    }
  }

  try {
    const url = await waitForListening(child, exited, () => stderr)
    return { ...handle, url }
  } catch (error) {
    await handle.stop()
    throw error
  }
}

function waitForListening (
  child: ChildProcess,
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>,
  stderr: () => string
): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let buffered = ''
    const timer = setTimeout(() => {
      reject(new Error(`fixture did not print LISTENING within ${READY_TIMEOUT_MS} ms; stderr:\n${stderr()}`))
    }, READY_TIMEOUT_MS)
    child.stdout?.setEncoding('utf8')
    child.stdout?.on('data', (chunk: string) => {
      buffered += chunk
      const match = /^LISTENING (\S+)$/m.exec(buffered)
      if (match?.[1] !== undefined) {
        clearTimeout(timer)
        resolve(match[1])
      }
    })
    exited.then(({ code, signal }) => {
      clearTimeout(timer)
      reject(new Error(`fixture exited before listening (code ${code}, signal ${signal}); stderr:\n${stderr()}`))
    }).catch(() => {})
  })
}

function killGroup (child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // Group already gone; fall back to the direct child in case it was never a leader.
    child.kill(signal)
  }
}

/**
 * Command line for running the fixture over stdio (its default transport), e.g. as a
 * gateway upstream. Node with tsx's loader rather than the tsx CLI, so the process the
 * gateway spawns and signals is the fixture itself, not a wrapper.
 */
export function fixtureCommand (args: string[]): { command: string, args: string[] } {
  return {
    command: process.execPath,
    args: ['--import', TSX_LOADER_URL, FIXTURE_PATH, ...args]
  }
}
