// A lean MCP stdio client for load generation, the direct-stdio counterpart of lean-client.ts: it
// spawns the server, initializes one session, then writes newline-delimited JSON-RPC to its stdin
// and matches the answers on its stdout by id. No SDK, no schema validation, one sweep timer for
// every request's timeout: the same kind of driver on both sides of "gateway − direct".
import { spawn, type ChildProcess } from 'node:child_process'
import { REQUESTED_PROTOCOL_VERSION } from './lean-client.ts'
import { PendingRequests, type JsonRpcAnswer } from './pending.ts'

const CLOSE_TIMEOUT_MS = 2_000
/** A line longer than this is not an MCP message the bench expects: the stream is given up. */
const MAX_LINE_CHARS = 16 * 1024 * 1024

export interface LeanStdioOptions {
  cwd: string
  /** Bounds each request, from write to answer. */
  timeoutMs: number
}

interface Incoming extends JsonRpcAnswer { method?: unknown }

export class LeanStdioClient {
  readonly #child: ChildProcess
  readonly #pending: PendingRequests
  readonly #exited: Promise<void>
  #buffer = ''
  #nextId = 1
  #closed = false
  #dead: Error | undefined

  private constructor (command: string, args: string[], options: LeanStdioOptions) {
    // stderr ignored, as the SDK's StdioClientTransport on path a is told to.
    this.#child = spawn(command, args, { cwd: options.cwd, stdio: ['pipe', 'pipe', 'ignore'] })
    this.#pending = new PendingRequests(options.timeoutMs)
    this.#exited = new Promise<void>(resolve => { this.#child.once('exit', () => { resolve() }) })
    this.#child.once('exit', (code, signal) => { this.#fail(new Error(`server exited (${signal ?? code ?? '?'})`)) })
    this.#child.once('error', (err) => { this.#fail(err) })
    this.#child.stdin?.on('error', (err) => { this.#fail(err) })
    this.#child.stdout?.setEncoding('utf8')
    this.#child.stdout?.on('data', (chunk: string) => { this.#onData(chunk) })
  }

  /** Spawns the server, then initialize and notifications/initialized, as any MCP client does. */
  static async connect (command: string, args: string[], options: LeanStdioOptions): Promise<LeanStdioClient> {
    const client = new LeanStdioClient(command, args, options)
    try {
      if (client.pid === undefined) throw new Error(`could not start ${command}`)
      const result = await client.request('initialize', {
        protocolVersion: REQUESTED_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'switchboard-bench-lean-stdio', version: '0.0.0' }
      })
      if (typeof (result as { protocolVersion?: unknown }).protocolVersion !== 'string') throw new Error('initialize answered without a protocolVersion')
      client.#write({ jsonrpc: '2.0', method: 'notifications/initialized' })
      return client
    } catch (err) {
      await client.close()
      throw err
    }
  }

  get pid (): number | undefined {
    return this.#child.pid
  }

  /** One request; resolves with its result, rejects on a JSON-RPC error, a dead server or the timeout. */
  async request (method: string, params?: Record<string, unknown>): Promise<unknown> {
    if (this.#closed) throw new Error('lean stdio client closed')
    if (this.#dead !== undefined) throw this.#dead
    const id = this.#nextId++
    const answered = this.#pending.add(id)
    this.#write(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params })
    return await answered
  }

  #write (message: Record<string, unknown>): void {
    this.#child.stdin?.write(JSON.stringify(message) + '\n')
  }

  #onData (chunk: string): void {
    this.#buffer += chunk
    let start = 0
    for (let end = this.#buffer.indexOf('\n'); end !== -1; end = this.#buffer.indexOf('\n', start)) {
      const line = this.#buffer.slice(start, end).trim()
      start = end + 1
      if (line !== '') this.#onLine(line)
    }
    this.#buffer = this.#buffer.slice(start)
    if (this.#buffer.length > MAX_LINE_CHARS) this.#fail(new Error(`a line of over ${MAX_LINE_CHARS} characters on stdout`))
  }

  #onLine (line: string): void {
    let message: Incoming
    try { message = JSON.parse(line) as Incoming } catch { return }
    if (typeof message !== 'object' || message === null) return
    if (typeof message.method === 'string') {
      // A request from the server (we declared no capabilities): refuse it, so it does not wait.
      // A notification (no id) is ignored.
      if (message.id !== undefined) this.#write({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } })
      return
    }
    this.#pending.settle(message)
  }

  #fail (err: Error): void {
    this.#dead ??= err
    this.#pending.failAll(err)
  }

  /** Ends stdin, then SIGTERM and, if it lingers, SIGKILL (each wait bounded); idempotent. */
  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#pending.close(new Error('lean stdio client closed'))
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return
    const timer = (): Promise<'timeout'> => new Promise(resolve => setTimeout(() => { resolve('timeout') }, CLOSE_TIMEOUT_MS).unref())
    this.#child.stdin?.end()
    this.#child.kill('SIGTERM')
    if (await Promise.race([this.#exited.then(() => 'exited' as const), timer()]) === 'timeout') {
      this.#child.kill('SIGKILL')
      await Promise.race([this.#exited, timer()])
    }
  }
}
