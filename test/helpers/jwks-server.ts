import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose'
import type { JwtConfig } from '../../src/auth/jwt-verifier.ts'

export const ISSUER = 'https://idp.example.com/realms/test'
export const AUDIENCE = 'https://gw.example.com/mcp'

/** rsa, ec and rsa-next are published; foreign is a key the identity provider never published. */
export type KeyName = 'rsa' | 'ec' | 'rsa-next' | 'foreign'

/** ok: the JWKS; error: 500; hang: never answers; garbage: 200 with a body that is not JSON. */
export type JwksMode = 'ok' | 'error' | 'hang' | 'garbage'

export interface SignOptions {
  /** jose time span ('5m', '-2m', '2 minutes ago'); null for a token without exp. Default '5m'. */
  expiresIn?: string | null
  /** jose time span for nbf, e.g. '10m' (in the future) */
  notBefore?: string
  issuer?: string
  audience?: string | string[]
  key?: KeyName
  /** the key's alg by default */
  alg?: string
  /** the key's kid by default; null leaves kid out of the header */
  kid?: string | null
}

export interface JwksServer {
  /** where the JWKS is served */
  readonly url: string
  /** how many times the JWKS was requested */
  readonly fetches: number
  respondWith: (mode: JwksMode) => void
  /** The keys the JWKS publishes from now on (rsa, ec and rsa-next by default): a key rotation at the identity provider. */
  publish: (names: readonly KeyName[]) => void
  /** A compact JWT; sub is 'user-1' unless claims say otherwise. */
  sign: (claims?: JWTPayload, options?: SignOptions) => Promise<string>
  /** A full jwt config for this server (the schema's defaults), with overrides. */
  config: (overrides?: Partial<JwtConfig>) => JwtConfig
  /** Stops listening (the test's end does it too), so later fetches are refused. */
  close: () => Promise<void>
  /** Listens again on the same port after close(): the identity provider is back. */
  reopen: () => Promise<void>
}

interface KeyEntry { privateKey: CryptoKey, publicJwk: JWK, alg: string, kid: string }

async function keyEntry (alg: 'RS256' | 'ES256', kid: string): Promise<KeyEntry> {
  const { publicKey, privateKey } = await generateKeyPair(alg)
  return { privateKey, publicJwk: { ...await exportJWK(publicKey), kid, alg, use: 'sig' }, alg, kid }
}

// Key generation is the slow part: done once per test file, shared by every server.
let keysOnce: Promise<Record<KeyName, KeyEntry>> | undefined
function keys (): Promise<Record<KeyName, KeyEntry>> {
  keysOnce ??= (async () => {
    const [rsa, ec, next, foreign] = await Promise.all([
      keyEntry('RS256', 'rsa-1'), keyEntry('ES256', 'ec-1'), keyEntry('RS256', 'rsa-2'), keyEntry('RS256', 'foreign-1')
    ])
    return { rsa, ec, 'rsa-next': next, foreign }
  })()
  return keysOnce
}

/** A JWKS endpoint on 127.0.0.1 (port 0) that counts its fetches and can fail on demand; closed in t.after. */
export async function startJwksServer (t: Pick<TestContext, 'after'>): Promise<JwksServer> {
  const all = await keys()
  let body = JSON.stringify({ keys: [all.rsa.publicJwk, all.ec.publicJwk, all['rsa-next'].publicJwk] })
  let mode: JwksMode = 'ok'
  let fetches = 0
  const hanging = new Set<ServerResponse>()
  const server = createServer((_request, response) => {
    fetches++
    if (mode === 'hang') { hanging.add(response); return }
    if (mode === 'error') { response.writeHead(500, { 'content-type': 'text/plain' }).end('down'); return }
    if (mode === 'garbage') { response.writeHead(200, { 'content-type': 'application/json' }).end('<html>'); return }
    response.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(body)
  })
  const listen = async (port: number): Promise<void> => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => { server.off('error', reject); resolve() })
    })
  }
  await listen(0)
  const port = (server.address() as AddressInfo).port
  const url = `http://127.0.0.1:${port}/jwks.json`
  let closed: Promise<void> | undefined
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      for (const response of hanging) response.destroy()
      server.close(() => { resolve() })
      server.closeAllConnections()
    })
    return closed
  }
  t.after(close)
  const reopen = async (): Promise<void> => {
    await closed
    closed = undefined
    await listen(port)
  }

  return {
    url,
    get fetches () { return fetches },
    respondWith (next) { mode = next },
    publish (names) { body = JSON.stringify({ keys: names.map(name => all[name].publicJwk) }) },
    async sign (claims = {}, options = {}) {
      const entry = all[options.key ?? 'rsa']
      const header: { alg: string, kid?: string, typ: string } = { alg: options.alg ?? entry.alg, typ: 'JWT' }
      const kid = options.kid === undefined ? entry.kid : options.kid
      if (kid !== null) header.kid = kid
      const jwt = new SignJWT({ sub: 'user-1', ...claims })
        .setProtectedHeader(header)
        .setIssuedAt()
        .setIssuer(options.issuer ?? ISSUER)
        .setAudience(options.audience ?? AUDIENCE)
      const expiresIn = options.expiresIn === undefined ? '5m' : options.expiresIn
      if (expiresIn !== null) jwt.setExpirationTime(expiresIn)
      if (options.notBefore !== undefined) jwt.setNotBefore(options.notBefore)
      return await jwt.sign(entry.privateKey)
    },
    config (overrides = {}) {
      return {
        issuer: ISSUER,
        audience: AUDIENCE,
        jwksUri: url,
        rolesClaim: 'roles',
        subjectClaim: 'sub',
        clockToleranceMs: 30_000,
        jwksTimeoutMs: 1000,
        jwksCacheMs: 600_000,
        ...overrides
      }
    },
    close,
    reopen
  }
}
