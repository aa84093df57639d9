import type { TestContext } from 'node:test'
import { request } from 'node:http'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { startGateway, waitReady, type RunningGateway } from './start-gateway.ts'

export const ADMIN_TOKEN = 'admin-token-for-the-console-0123456789'

export interface ConsoleGateway { gw: RunningGateway, base: string, port: number }

/** A gateway with one HTTP upstream ("web") and its admin listener on a free loopback port. */
export async function startConsoleGateway (t: TestContext, admin: Record<string, unknown> = {}): Promise<ConsoleGateway> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }],
    // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
    admin: { listen: { port: 0 }, token: '${ADMIN_TOKEN}', ...admin }
  }), { ...process.env, ADMIN_TOKEN })
  await waitReady(gw)
  const app = gw.admin
  if (app === undefined) throw new Error('no admin listener')
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as { port: number }).port
  return { gw, base: `http://127.0.0.1:${port}`, port }
}

export interface RawAnswer { status: number, headers: Record<string, string | string[] | undefined>, body: string }

/** A raw HTTP/1.1 request with exactly these headers and this path (fetch would normalise both). */
export async function rawRequest (port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<RawAnswer> {
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, setHost: false }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }) })
    })
    req.on('error', reject)
    req.end(body)
  })
}

export interface SignedIn { cookie: string, csrf: string, setCookie: string, expiresAt: number }

/** POST /admin/login with the token; throws unless it is 200. */
export async function signIn (base: string, token = ADMIN_TOKEN): Promise<SignedIn> {
  const res = await fetch(`${base}/admin/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) })
  if (res.status !== 200) throw new Error(`login: ${res.status} ${await res.text()}`)
  const setCookie = res.headers.get('set-cookie') ?? ''
  const body = await res.json() as { csrf: string, expiresAt: number }
  return { cookie: setCookie.split(';')[0] ?? '', csrf: body.csrf, setCookie, expiresAt: body.expiresAt }
}

export interface NamedEvent { event: string, data: string }

/** Reads named SSE events until `enough` says so (or the stream ends); comments are skipped. */
export async function readNamedEvents (res: Response, enough: (events: NamedEvent[]) => boolean, onEvent?: (event: NamedEvent) => void): Promise<NamedEvent[]> {
  const events: NamedEvent[] = []
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  try {
    while (!enough(events)) {
      const { value, done } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let end: number
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const lines = block.split('\n').filter(l => !l.startsWith(':'))
        if (lines.length === 0) continue
        const event = lines.find(l => l.startsWith('event:'))?.slice(6).trim() ?? 'message'
        const data = lines.filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n')
        const named = { event, data }
        events.push(named)
        onEvent?.(named)
      }
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
  return events
}
