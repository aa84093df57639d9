import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import type { Transport } from '@modelcontextprotocol/client'
import type { Logger } from 'pino'

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
}

const MIN_SECRET_LENGTH = 6
const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
// Only what a process needs to run; the gateway's own secrets stay out of the child's environment.
const INHERITED_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ', 'NODE_OPTIONS', 'SYSTEMROOT']

/**
 * stdio to a child in its own process group, so that a wrapper (npx, uvx, sh) and the server it
 * starts are stopped together. Shutdown follows the spec: close stdin, then SIGTERM, then SIGKILL.
 */
export class StdioTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: Transport['onmessage']
  private child?: ChildProcess
  private buffer = ''
  private closing?: Promise<void>
  private exited = false
  private readonly options: StdioTransportOptions

  constructor (options: StdioTransportOptions) {
    this.options = options
  }

  async start (): Promise<void> {
    const { command, args, cwd, log } = this.options
    // A server that echoes its configuration to stderr must not put our secrets into the log.
    const secrets = Object.values(this.options.env).filter(v => v.length >= MIN_SECRET_LENGTH)
    const scrub = (line: string): string => secrets.reduce((out, secret) => out.split(secret).join('[redacted]'), line)
    const env: Record<string, string> = {}
    for (const key of INHERITED_ENV) {
      const value = this.options.baseEnv[key]
      if (value !== undefined) env[key] = value
    }
    Object.assign(env, this.options.env)
    const child = spawn(command, [...args], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true, windowsHide: true })
    this.child = child
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => { this.onData(chunk) })
    child.stderr.setEncoding('utf8')
    let stderrTail = ''
    child.stderr.on('data', (chunk: string) => {
      const lines = (stderrTail + chunk).split('\n')
      stderrTail = lines.pop() ?? ''
      for (const line of lines) if (line.trim() !== '') log.info({ stream: 'stderr' }, scrub(line))
    })
    // A write to a dead child must not crash the gateway; the exit handler reports the loss.
    child.stdin.on('error', (err) => { log.debug({ err }, 'stdin error') })
    child.on('exit', (code, signal) => {
      this.exited = true
      if (this.closing === undefined) log.warn({ code, signal }, 'upstream process exited')
      // Grandchildren (a server started by a wrapper) go down with it.
      this.signalGroup('SIGTERM')
      this.onclose?.()
    })
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', (err) => { this.exited = true; reject(err) })
    })
  }

  private onData (chunk: string): void {
    this.buffer += chunk
    let index: number
    while ((index = this.buffer.indexOf('\n')) !== -1) {
      const line = this.buffer.slice(0, index).trim()
      this.buffer = this.buffer.slice(index + 1)
      if (line === '') continue
      let message: unknown
      try {
        message = JSON.parse(line)
      } catch {
        this.onerror?.(new Error(`upstream wrote a line that is not JSON: ${line.slice(0, 120)}`))
        continue
      }
      this.onmessage?.(message as never)
    }
    if (this.buffer.length > (this.options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES)) {
      this.onerror?.(new Error('upstream wrote an over-long line'))
      this.buffer = ''
      void this.close()
    }
  }

  async send (message: unknown): Promise<void> {
    const stdin = this.child?.stdin
    if (stdin === undefined || stdin === null || this.exited || !stdin.writable) throw new Error('upstream process is not running')
    const ok = stdin.write(JSON.stringify(message) + '\n')
    if (!ok) await once(stdin, 'drain')
  }

  close (): Promise<void> {
    this.closing ??= this.stop()
    return this.closing
  }

  private async stop (): Promise<void> {
    const child = this.child
    if (child === undefined || this.exited) return
    const exited = once(child, 'exit').then(() => true)
    const wait = (ms: number): Promise<boolean> => Promise.race([exited, new Promise<boolean>(resolve => setTimeout(resolve, ms, false).unref())])
    child.stdin?.end()
    if (await wait(this.options.killAfterMs)) return
    this.signalGroup('SIGTERM')
    if (await wait(this.options.killAfterMs)) return
    this.signalGroup('SIGKILL')
    await wait(this.options.killAfterMs)
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
