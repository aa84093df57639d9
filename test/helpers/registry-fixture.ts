import { createServer } from 'node:http'
import { readdir, readFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'

// A local MCP Registry speaking the v0 read API (GET /v0/servers, GET /v0/servers/{name}/versions/latest)
// over the server.json documents recorded in test/fixtures/registry/ (see its README for their sources).

const FIXTURES = new URL('../fixtures/registry/', import.meta.url)

export interface RegistryFixture {
  url: string
  /** Every path and query asked, in order. */
  requests: string[]
}

interface Entry { server: { name: string, description?: string }, _meta: Record<string, unknown> }

async function loadEntries (): Promise<Entry[]> {
  const files = (await readdir(FIXTURES)).filter(f => f.endsWith('.json')).sort()
  return await Promise.all(files.map(async (f) => {
    const server = JSON.parse(await readFile(new URL(f, FIXTURES), 'utf8')) as Entry['server']
    return { server, _meta: { 'io.modelcontextprotocol.registry/official': { status: 'active', isLatest: true, publishedAt: '2025-11-01T00:00:00Z' } } }
  }))
}

export interface RegistryFixtureOptions {
  /** The registry's status for these servers (as an operator's PATCH …/status sets it), instead of active. */
  statuses?: Record<string, { status: string, statusMessage?: string }>
  /** Every request answered with this HTTP status, as a registry that is up but failing. */
  failWith?: number
}

/** Starts the registry on 127.0.0.1, port 0; closed when the test ends. */
export async function startRegistryFixture (t: TestContext, options: RegistryFixtureOptions = {}): Promise<RegistryFixture> {
  const entries = await loadEntries()
  for (const entry of entries) {
    const status = options.statuses?.[entry.server.name]
    if (status !== undefined) entry._meta['io.modelcontextprotocol.registry/official'] = { ...(entry._meta['io.modelcontextprotocol.registry/official'] as object), ...status }
  }
  const requests: string[] = []
  const server = createServer((req, res) => {
    requests.push(req.url ?? '')
    const url = new URL(req.url ?? '/', 'http://registry.test')
    const json = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    }
    if (options.failWith !== undefined) { json(options.failWith, { error: 'Service unavailable' }); return }
    if (req.method !== 'GET') { json(405, { error: 'Method not allowed' }); return }
    if (url.pathname === '/v0/servers') {
      const words = (url.searchParams.get('search') ?? '').toLowerCase()
      const limit = Number(url.searchParams.get('limit') ?? '30')
      const start = Number(url.searchParams.get('cursor') ?? '0')
      // As the official registry: a case-insensitive substring of the name or the description.
      const matching = entries.filter(e => e.server.name.toLowerCase().includes(words) || (e.server.description ?? '').toLowerCase().includes(words))
      const page = matching.slice(start, start + limit)
      const next = start + limit < matching.length ? String(start + limit) : undefined
      json(200, { servers: page, metadata: { count: page.length, ...(next === undefined ? {} : { nextCursor: next }) } })
      return
    }
    // The raw path: a name's "/" arrives encoded as %2F and must not be split on.
    const match = /^\/v0\/servers\/([^/]+)\/versions\/latest$/.exec((req.url ?? '').split('?')[0] ?? '')
    if (match !== null) {
      const name = decodeURIComponent(match[1] ?? '')
      const found = entries.find(e => e.server.name === name)
      if (found === undefined) json(404, { error: 'Server not found' })
      else json(200, found)
      return
    }
    json(404, { error: 'Not found' })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => { await new Promise<void>(resolve => server.close(() => { resolve() })) })
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, requests }
}
