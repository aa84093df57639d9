import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import type { Logger } from 'pino'
import { secretRegistry } from '../config/secret-registry.ts'
import { encodeJson } from '../protocol/encode-json.ts'
import { JsonLineReader } from './json-line-reader.ts'
import { LineDecoder } from './line-decoder.ts'
import type { RawMessage } from '../protocol/raw-answer.ts'
import type { SpawnLimits } from './process-limits.ts'
import type { UpstreamTransport } from './upstream-transport.ts'

export interface StdioTransportOptions {
  command: string
  args: readonly string[]
  env: Readonly<Record<string, string>>
  cwd?: string
  killAfterMs: number
  log: Logger
  /** The gateway's own environment; only a few harmless variables are passed on. */
  baseEnv: Readonly<Record<string, string | undefined>>
  /** Largest line accepted from the child; a larger one is a protocol violation and kills the child. */
  maxLineBytes?: number
  /** Its resource limits (process-limits.ts): how to spawn under them, and what an exit by one means. */
  limits?: SpawnLimits
}

const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
const GROUP_POLL_MS = 50
const MAX_STDERR_LINE = 64 * 1024

/** Process groups of every child still possibly alive, so that a gateway exiting by any path can kill them. */
const liveGroups = new Set<number>()

/**
 * Last resort for an exit that skipped the orderly close (a fatal error): SIGKILL every process
 * group this process started. Synchronous, so it can run in a process 'exit' handler.
 */
export function killAllProcessGroups (): void {
  for (const pid of liveGroups) {
    try { process.kill(-pid, 'SIGKILL') } catch { /* already gone */ }
  }
  liveGroups.clear()
}
// Only what a process needs to run; the gateway's own secrets stay out of the child's environment.
const INHERITED_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ', 'NODE_OPTIONS', 'SYSTEMROOT']

/**
 * stdio to a child in its own process group, so that a wrapper (npx, uvx, sh) and the server it
 * starts are stopped together. Shutdown follows the spec: close stdin, then SIGTERM, then SIGKILL.
 */
export class StdioTransport implements UpstreamTransport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: unknown) => void
  /** Why the process ended, when a resource limit ended it: what the calls in flight fail with. */
  closeError: Error | undefined
  takeRaw?: (message: string | RawMessage) => boolean
  private child?: ChildProcess
  private lines?: JsonLineReader
  private closing?: Promise<void>
  private reaping?: Promise<void>
  private exited = false
  /** What was sent this turn of the event loop, written at its end in one go. */
  private outbox = ''
  private flushQueued = false
  private readonly options: StdioTransportOptions

  constructor (options: StdioTransportOptions) {
    this.options = options
  }

  get pid (): number | undefined { return this.exited ? undefined : this.child?.pid }

  async start (): Promise<void> {
    const { command, args, cwd, log } = this.options
    // A server that echoes its configuration to stderr must not put our secrets into the log.
    for (const value of Object.values(this.options.env)) secretRegistry.registerValue(value)
    const scrub = secretRegistry.redactValue
    const env: Record<string, string> = {}
    for (const key of INHERITED_ENV) {
      const value = this.options.baseEnv[key]
      if (value !== undefined) env[key] = value
    }
    Object.assign(env, this.options.env)
    const spawned = this.options.limits?.wrap(command, args) ?? { command, args }
    const child = spawn(spawned.command, [...spawned.args], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true, windowsHide: true })
    this.child = child
    if (child.pid !== undefined) liveGroups.add(child.pid)
    this.lines = new JsonLineReader(this.options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES)
    // Bytes, not text: a result is relayed as the chunks it arrived in (json-line-reader.ts).
    child.stdout.on('data', (chunk: Buffer) => { this.onData(chunk) })
    child.stderr.setEncoding('utf8')
    const stderrLines = new LineDecoder(MAX_STDERR_LINE)
    child.stderr.on('data', (chunk: string) => {
      const withinLimit = stderrLines.push(chunk, (line) => { if (line.trim() !== '') log.info({ stream: 'stderr' }, scrub(line)) })
      if (!withinLimit) log.warn({ stream: 'stderr', maxChars: MAX_STDERR_LINE }, 'upstream wrote an over-long stderr line; dropped')
    })
    // A write to a dead child must not crash the gateway; the exit handler reports the loss.
    child.stdin.on('error', (err) => { log.debug({ err }, 'stdin error') })
    child.on('exit', (code, signal) => {
      this.exited = true
      this.closeError = this.options.limits?.exitError(code, signal)
      if (this.closeError !== undefined) log.warn({ code, signal, err: this.closeError.message }, 'upstream process stopped by a resource limit')
      else if (this.closing === undefined) log.warn({ code, signal }, 'upstream process exited')
      // Grandchildren (a server started by a wrapper) go down with it, even those that ignore SIGTERM.
      this.reaping ??= this.reapGroup()
      this.onclose?.()
    })
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', (err) => { this.exited = true; reject(err) })
    })
  }

  private onData (chunk: Buffer): void {
    const withinLimit = this.lines?.push(chunk, (line) => { this.onLine(line) })
    if (withinLimit === false) {
      this.onerror?.(new Error('upstream wrote an over-long line'))
      void this.close()
    }
  }

  private onLine (raw: RawMessage): void {
    if (this.takeRaw?.(raw) === true) return
    const line = raw.bytes.toString().trim()
    if (line === '') return
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch {
      this.onerror?.(new Error(`upstream wrote a line that is not JSON: ${line.slice(0, 120)}`))
      return
    }
    this.onmessage?.(message)
  }

  /**
   * Messages sent in one turn of the event loop go to the pipe in one write: a write is a system
   * call, and under load many calls arrive per turn. The order is kept.
   */
  async send (message: unknown): Promise<void> {
    const stdin = this.child?.stdin
    if (stdin === undefined || stdin === null || this.exited || !stdin.writable) throw new Error('upstream process is not running')
    // A message that cannot be encoded fails alone (SB_ERR_MESSAGE_UNSERIALIZABLE); the pipe is untouched.
    this.outbox += lineSafe(encodeJson(message)) + '\n'
    if (!this.flushQueued) {
      this.flushQueued = true
      setImmediate(this.flush)
    }
    if (stdin.writableNeedDrain) await once(stdin, 'drain')
  }

  private readonly flush = (): void => {
    this.flushQueued = false
    const text = this.outbox
    this.outbox = ''
    const stdin = this.child?.stdin
    // Gone meanwhile: the exit handler reports the loss of whatever was in flight.
    if (stdin === undefined || stdin === null || this.exited || !stdin.writable || text === '') return
    stdin.write(text)
  }

  close (): Promise<void> {
    this.closing ??= this.stop()
    return this.closing
  }

  private async stop (): Promise<void> {
    const child = this.child
    if (child === undefined) return
    if (!this.exited) {
      const exited = once(child, 'exit').then(() => true)
      child.stdin?.end()
      await Promise.race([exited, sleep(this.options.killAfterMs, false)])
    }
    // The exit handler started reaping; wait for it, or reap here if the child is still up.
    await (this.reaping ??= this.reapGroup())
  }

  /** SIGTERM to the whole group, then SIGKILL to whatever is left of it after killAfterMs. */
  private async reapGroup (): Promise<void> {
    const pid = this.child?.pid
    if (pid === undefined) return
    if (groupAlive(pid)) {
      this.signalGroup('SIGTERM')
      const deadline = Date.now() + this.options.killAfterMs
      // Bounded by killAfterMs, and kept referenced so that a closing gateway waits for it.
      while (groupAlive(pid) && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, GROUP_POLL_MS))
      if (groupAlive(pid)) {
        this.options.log.warn({ pid }, 'upstream process group outlived SIGTERM; sending SIGKILL')
        this.signalGroup('SIGKILL')
      }
    }
    liveGroups.delete(pid)
    this.options.limits?.release()
  }

  private signalGroup (signal: NodeJS.Signals): void {
    const pid = this.child?.pid
    if (pid === undefined) return
    try {
      process.kill(-pid, signal)
    } catch {
      try { this.child?.kill(signal) } catch { /* already gone */ }
    }
  }
}

/** True while any process of the group still exists (signal 0 only checks). */
function groupAlive (pid: number): boolean {
  try {
    process.kill(-pid, 0)
    return true
  } catch (err: unknown) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function sleep<T> (ms: number, value: T): Promise<T> {
  return new Promise(resolve => setTimeout(resolve, ms, value).unref())
}

const LINE_SEPARATORS = /[\u2028\u2029]/g

/**
 * The JSON with U+2028 and U+2029 escaped (the same JSON value): JSON.stringify writes them as they
 * are, and a server that reads its stdin with Node's readline (Node 24 on) ends a line at them too,
 * so a request holding one would reach it as two lines of garbage.
 */
function lineSafe (json: string): string {
  LINE_SEPARATORS.lastIndex = 0
  return LINE_SEPARATORS.test(json) ? json.replace(LINE_SEPARATORS, c => c === '\u2028' ? '\\u2028' : '\\u2029') : json
}
