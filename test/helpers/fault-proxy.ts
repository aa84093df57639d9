import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'

/**
 * What the proxy does with one POST body: pass it on, answer a status, pass it on slowly, or open
 * an event stream and end it without an answer (a request lost on a connection that stays up).
 */
export type FaultRule = (body: string) => { status: number } | { dripMs: number } | { endEmpty: true } | undefined

export interface FaultProxy {
  url: string
  /** POSTs carrying a JSON-RPC request whose HTTP exchange is still open. */
  readonly openRequests: number
  /** Statuses answered by a rule. */
  readonly injected: number
  close: () => Promise<void>
}

async function readBody (req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * A real HTTP hop in front of a real MCP server that injects faults per request and counts the
 * request exchanges still open, as an upstream's own server would see them.
 */
export async function startFaultProxy (target: string, rule: FaultRule): Promise<FaultProxy> {
  let open = 0
  let injected = 0
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req)
    const isRequest = req.method === 'POST' && /"id"\s*:/.test(body) && /"method"\s*:/.test(body)
    if (isRequest) {
      open++
      res.once('close', () => { open-- })
    }
    const fault = req.method === 'POST' ? rule(body) : undefined
    if (fault !== undefined && 'status' in fault) {
      injected++
      res.writeHead(fault.status, { 'content-type': 'text/plain' }).end('injected fault')
      return
    }
    if (fault !== undefined && 'endEmpty' in fault) {
      injected++
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end()
      return
    }
    const upstream = new AbortController()
    res.once('close', () => { upstream.abort() })
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v
    const answer = await fetch(target, { method: req.method, headers, body: req.method === 'POST' ? body : undefined, signal: upstream.signal })
    const out: Record<string, string> = {}
    answer.headers.forEach((v, k) => { if (k !== 'content-length' && k !== 'transfer-encoding') out[k] = v })
    res.writeHead(answer.status, out)
    res.flushHeaders()
    if (answer.body === null) {
      res.end()
      return
    }
    const dripMs = fault !== undefined && 'dripMs' in fault ? fault.dripMs : 0
    for await (const chunk of Readable.fromWeb(answer.body as never)) {
      const bytes = chunk as Buffer
      if (dripMs === 0) res.write(bytes)
      else {
        for (const byte of bytes) {
          res.write(Buffer.from([byte]))
          await new Promise(resolve => setTimeout(resolve, dripMs))
        }
      }
    }
    res.end()
  }
  const server = createServer((req, res) => {
    handle(req, res).catch(() => { if (!res.headersSent) res.writeHead(502); res.end() })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get openRequests () { return open },
    get injected () { return injected },
    close: async () => {
      server.closeAllConnections()
      await new Promise(resolve => server.close(resolve))
    }
  }
}
