// Everything the soak starts is stopped at the end, even on failure or Ctrl-C: the clean-ups the test
// helpers register (they take a TestContext; this hands them one whose after() lands here), run in
// reverse order, each bounded; then every process seen below the soak (sampled while it ran, so the
// stdio upstreams of a SIGKILLed replica are known too) that still runs is SIGKILLed, with its group.
import { readFileSync } from 'node:fs'
import type { TestContext } from 'node:test'
import { descendants } from '../../test/helpers/descendants.ts'

const STEP_TIMEOUT_MS = 10_000

export class Teardown {
  readonly #steps: Array<() => unknown> = []
  /** pid → the command line it had when seen, and whether it leads its own process group. */
  readonly #seen = new Map<number, { cmd: string, group: boolean }>()
  #ran: Promise<void> | undefined

  after (fn: () => unknown): void {
    this.#steps.push(fn)
  }

  /** What the test helpers need of a TestContext: after(). */
  context (): TestContext {
    return { after: (fn: () => unknown) => { this.after(fn) } } as unknown as TestContext
  }

  track (pid: number, group = false): void {
    const cmd = cmdline(pid)
    if (cmd !== '') this.#seen.set(pid, { cmd, group: group || this.#seen.get(pid)?.group === true })
  }

  /** Records every live process below this one (called every second while the soak runs). */
  snapshot (): void {
    for (const p of descendants(process.pid)) this.track(p.pid, isGroupLeader(p.pid))
  }

  /** Idempotent: the second call waits for the first. */
  async run (): Promise<void> {
    this.#ran ??= this.#run()
    await this.#ran
  }

  async #run (): Promise<void> {
    this.snapshot()
    for (const step of this.#steps.reverse()) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        Promise.resolve().then(step).catch((err: unknown) => { process.stderr.write(`[soak] clean-up step failed: ${String(err)}\n`) }),
        new Promise(resolve => { timer = setTimeout(resolve, STEP_TIMEOUT_MS) })
      ])
      clearTimeout(timer)
    }
    this.killStrays()
  }

  /** SIGKILL to every process seen that still runs the same command (its pid was not reused). */
  killStrays (): number {
    let killed = 0
    for (const [pid, { cmd, group }] of this.#seen) {
      if (cmdline(pid) !== cmd) continue
      try { if (group) process.kill(-pid, 'SIGKILL') } catch { /* no such group */ }
      try { process.kill(pid, 'SIGKILL'); killed++ } catch { /* gone */ }
    }
    return killed
  }
}

function cmdline (pid: number): string {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8') } catch { return '' }
}

function isGroupLeader (pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after "pid (comm) ": state, ppid, pgrp.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === pid
  } catch {
    return false
  }
}
