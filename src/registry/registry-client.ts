import { request } from 'undici'
import type { z } from 'zod'
import { serverListSchema, serverResponseSchema, type ServerDetail } from './server-json.ts'

export const DEFAULT_REGISTRY_URL = 'https://registry.modelcontextprotocol.io'
/** A registry answers within these, or the command says it cannot be reached. */
const CONNECT_TIMEOUT_MS = 10_000
const ANSWER_TIMEOUT_MS = 20_000
/** A server.json is a few KB; a page of 100 a few hundred. More is not a registry answering. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024
const MAX_SHOWN_BODY = 200

/** Why the registry gave no usable answer: `not-found` (404 for that server), `unreachable`, `invalid` (an answer that is not the v0 API's). */
export type RegistryFailure = 'not-found' | 'unreachable' | 'invalid'

export class RegistryError extends Error {
  readonly failure: RegistryFailure
  constructor (failure: RegistryFailure, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'RegistryError'
    this.failure = failure
  }
}

export interface ServerPage { servers: ServerDetail[], nextCursor?: string }

/** The server and, where the registry says, its status other than active (deprecated: still served, with a reason). */
export interface LatestServer { server: ServerDetail, status?: string, statusMessage?: string }

/** The v0 API of an MCP Registry (the official one or a subregistry speaking the same API). */
export interface RegistryClient {
  /** GET /v0/servers?search=…&limit=…&version=latest: one page, name matches (the official registry also matches descriptions). */
  search: (words: string, limit: number, cursor?: string) => Promise<ServerPage>
  /** GET /v0/servers/{name}/versions/latest; RegistryError not-found when the registry has no such server. */
  latest: (name: string) => Promise<LatestServer>
}

export function createRegistryClient (baseUrl: string): RegistryClient {
  const base = baseUrl.replace(/\/+$/, '')
  async function get<T> (path: string, schema: z.ZodType<T>, what: string): Promise<T> {
    const url = `${base}${path}`
    let res
    try {
      res = await request(url, { method: 'GET', headers: { accept: 'application/json' }, headersTimeout: CONNECT_TIMEOUT_MS, bodyTimeout: ANSWER_TIMEOUT_MS, signal: AbortSignal.timeout(CONNECT_TIMEOUT_MS + ANSWER_TIMEOUT_MS) })
    } catch (err: unknown) {
      throw new RegistryError('unreachable', `cannot reach the registry at ${base}: ${describe(err)}`, { cause: err })
    }
    let text: string
    try {
      text = await readCapped(res.body)
    } catch (err: unknown) {
      throw new RegistryError('unreachable', `the registry at ${base} broke off its answer: ${describe(err)}`, { cause: err })
    }
    if (res.statusCode === 404) throw new RegistryError('not-found', `the registry at ${base} has no ${what}`)
    if (res.statusCode < 200 || res.statusCode >= 300) throw new RegistryError('unreachable', `the registry at ${base} answered HTTP ${res.statusCode} for ${what}: ${text.slice(0, MAX_SHOWN_BODY)}`)
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      throw new RegistryError('invalid', `the registry at ${base} answered ${what} with something that is not JSON`)
    }
    const parsed = schema.safeParse(json)
    if (!parsed.success) throw new RegistryError('invalid', `the registry at ${base} answered ${what} in a shape that is not the v0 API's: ${parsed.error.issues.slice(0, 3).map(i => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
    return parsed.data
  }
  return {
    async search (words, limit, cursor) {
      const query = new URLSearchParams({ search: words, limit: String(limit), version: 'latest' })
      if (cursor !== undefined) query.set('cursor', cursor)
      const page = await get(`/v0/servers?${query.toString()}`, serverListSchema, `a list of servers matching "${words}"`)
      return { servers: page.servers.map(s => s.server), ...(page.metadata?.nextCursor === undefined ? {} : { nextCursor: page.metadata.nextCursor }) }
    },
    async latest (name) {
      const answer = await get(`/v0/servers/${encodeURIComponent(name)}/versions/latest`, serverResponseSchema, `server named ${name}`)
      const official = answer._meta?.['io.modelcontextprotocol.registry/official']
      const status = official?.status ?? (typeof answer.server.status === 'string' ? answer.server.status : undefined)
      return { server: answer.server, ...(status === undefined || status === 'active' ? {} : { status }), ...(official?.statusMessage === undefined ? {} : { statusMessage: official.statusMessage }) }
    }
  }
}

async function readCapped (body: AsyncIterable<Buffer | string> & { destroy?: () => unknown }): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    size += buf.length
    if (size > MAX_ANSWER_BYTES) {
      body.destroy?.()
      throw new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`)
    }
    chunks.push(buf)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function describe (err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const code = (err as { code?: unknown }).code
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : ''
  return `${typeof code === 'string' ? `${code} ` : ''}${err.message}${cause}`
}
