// The soak's raw Streamable HTTP exchange: one POST or GET on a shared undici Pool, its answer read
// from a JSON body or, event by event, from an SSE body, bounded by the soak's own timer (so a
// missing answer is told apart from an error: undici's own timeouts are set longer).
import { Pool } from 'undici'

export interface RpcMessage {
  jsonrpc?: string
  id?: string | number | null
  method?: string
  params?: Record<string, unknown>
  result?: Record<string, unknown>
  error?: { code?: unknown, message?: unknown, data?: unknown }
}

export interface SseEvent { id?: string, message?: RpcMessage }

/** How one exchange ended. */
export type Exchange = { servedBy?: string } & (
  | { kind: 'answer', message: RpcMessage, events: SseEvent[], sessionId?: string }
  | { kind: 'accepted' }
  | { kind: 'http', status: number, body: string }
  | { kind: 'ended', events: SseEvent[] }
  | { kind: 'dropped', events: SseEvent[] }
  | { kind: 'net', code: string, message: string }
  | { kind: 'timeout', events: SseEvent[] })

export interface ExchangeOptions {
  /** The soak's bound: no answer and no error by then is "unanswered". */
  timeoutMs: number
  /** The JSON-RPC id whose answer ends the exchange; undefined for a notification or a reply. */
  answerId?: string
  /** Every message that comes before the answer (progress, a sampling request, a stray answer). */
  onEvent?: (event: SseEvent) => void
  /** The client drops the connection once this says so (a resume follows). */
  dropWhen?: (events: SseEvent[]) => boolean
}

export const ACCEPT = 'application/json, text/event-stream'
/** HAProxy names the replica that answered (test/helpers/haproxy.ts). */
const SERVED_BY = 'x-served-by'
/** Well below HAProxy's 10 s keep-alive timeout, so the client never reuses a connection the balancer is closing. */
const KEEP_ALIVE_MS = 2_000
const UNDICI_SLACK_MS = 5_000

export function isAnswer (m: RpcMessage | undefined): boolean {
  return m !== undefined && m.method === undefined && (m.result !== undefined || m.error !== undefined)
}

export class Wire {
  readonly #pool: Pool
  readonly #path: string

  constructor (url: string, connections: number) {
    const u = new URL(url)
    this.#path = u.pathname
    this.#pool = new Pool(u.origin, { connections, pipelining: 1, keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS, connect: { timeout: 5_000 } })
  }

  async exchange (method: 'POST' | 'GET' | 'DELETE', headers: Record<string, string>, body: unknown, options: ExchangeOptions): Promise<Exchange> {
    const abort = new AbortController()
    let timedOut = false
    const timer = setTimeout(() => { timedOut = true; abort.abort() }, options.timeoutMs)
    const events: SseEvent[] = []
    let servedBy: string | undefined
    try {
      const res = await this.#pool.request({
        path: this.#path,
        method,
        headers: { accept: ACCEPT, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: abort.signal,
        headersTimeout: options.timeoutMs + UNDICI_SLACK_MS,
        bodyTimeout: options.timeoutMs + UNDICI_SLACK_MS
      })
      const session = res.headers['mcp-session-id']
      const sessionId = typeof session === 'string' ? session : undefined
      const by = res.headers[SERVED_BY]
      servedBy = typeof by === 'string' ? by : undefined
      if (res.statusCode === 202) {
        await res.body.dump()
        return { kind: 'accepted', servedBy }
      }
      if (res.statusCode !== 200) return { kind: 'http', status: res.statusCode, body: (await res.body.text()).slice(0, 2_000), servedBy }
      if (!String(res.headers['content-type']).startsWith('text/event-stream')) {
        const text = await res.body.text()
        let message: RpcMessage
        try { message = JSON.parse(text) as RpcMessage } catch { return { kind: 'http', status: 200, body: `not JSON: ${text.slice(0, 200)}`, servedBy } }
        return { kind: 'answer', message, events, servedBy, ...(sessionId === undefined ? {} : { sessionId }) }
      }
      res.body.setEncoding('utf8')
      let buffer = ''
      for await (const chunk of res.body as AsyncIterable<string>) {
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const event = parseEvent(buffer.slice(0, end))
          buffer = buffer.slice(end + 2)
          if (event === undefined) continue
          events.push(event)
          const m = event.message
          if (isAnswer(m) && options.answerId !== undefined && m?.id === options.answerId) {
            res.body.destroy()
            return { kind: 'answer', message: m as RpcMessage, events, servedBy, ...(sessionId === undefined ? {} : { sessionId }) }
          }
          options.onEvent?.(event)
          if (options.dropWhen?.(events) === true) {
            res.body.destroy()
            return { kind: 'dropped', events, servedBy }
          }
        }
      }
      return { kind: 'ended', events, servedBy }
    } catch (err: unknown) {
      if (timedOut) return { kind: 'timeout', events, servedBy }
      const code = (err as { code?: unknown }).code
      return { kind: 'net', code: typeof code === 'string' ? code : (err as Error).name, message: (err as Error).message, servedBy }
    } finally {
      clearTimeout(timer)
    }
  }

  async close (): Promise<void> {
    await Promise.race([this.#pool.close(), new Promise(resolve => setTimeout(resolve, 2_000).unref())]).catch(() => {})
    await this.#pool.destroy().catch(() => {})
  }
}

function parseEvent (block: string): SseEvent | undefined {
  let id: string | undefined
  const data: string[] = []
  for (const raw of block.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (line.startsWith('id:')) id = line.slice(3).trimStart()
    else if (line.startsWith('data:')) data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5))
  }
  if (id === undefined && data.length === 0) return undefined
  let message: RpcMessage | undefined
  if (data.length > 0 && data.join('') !== '') {
    try { message = JSON.parse(data.join('\n')) as RpcMessage } catch { message = undefined }
  }
  return { ...(id === undefined ? {} : { id }), ...(message === undefined ? {} : { message }) }
}
