// The HTTP floor: the least a Node proxy from Streamable HTTP to one Streamable HTTP MCP server can do
// per call, the yardstick of path h (the gateway with a Streamable HTTP upstream) as floor-proxy.mjs
// is the stdio paths'. node:http in; each request's body read whole and sent on to the upstream
// through one keep-alive undici Pool (as the gateway's HTTP upstreams use); the Content-Type,
// Accept, Mcp-Session-Id and MCP-Protocol-Version headers copied both ways; the answer's status and
// body (JSON or SSE) piped back unchanged. Nothing is parsed or checked: no JSON-RPC, no sessions of
// its own (the upstream's session id passes through), no auth, no logs. Not a product: a yardstick
// (bench/README.md, "The floor").
//   node bench/floor-http-proxy.mjs <upstream url>     (listens on 127.0.0.1, port 0)
import { createServer } from 'node:http'
import { Pool } from 'undici'

const upstream = process.argv[2]
if (upstream === undefined) {
  console.error('usage: node bench/floor-http-proxy.mjs <upstream url>')
  process.exit(2)
}
const target = new URL(upstream)
const upstreamPath = target.pathname + target.search
// Like the gateway's pool per upstream origin: no undici timeouts, connections as many as needed.
const pool = new Pool(target.origin, { headersTimeout: 0, bodyTimeout: 0 })

const REQUEST_HEADERS = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version']
const RESPONSE_HEADERS = ['content-type', 'mcp-session-id', 'mcp-protocol-version']

function pick (from, names) {
  const out = {}
  for (const name of names) {
    const value = from[name]
    if (value !== undefined) out[name] = value
  }
  return out
}

function forward (req, res, body) {
  pool.stream(
    { path: upstreamPath, method: req.method, headers: pick(req.headers, REQUEST_HEADERS), body },
    ({ statusCode, headers }) => {
      res.writeHead(statusCode, pick(headers, RESPONSE_HEADERS))
      return res
    },
    (err) => {
      if (err === null || err === undefined) return
      if (res.headersSent) res.destroy()
      else res.writeHead(502).end()
    }
  )
}

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    // DELETE (the end of a session) and GET pass through without a body.
    forward(req, res, undefined)
    return
  }
  const chunks = []
  req.on('data', (chunk) => { chunks.push(chunk) })
  req.on('end', () => { forward(req, res, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)) })
})
server.listen(0, '127.0.0.1', () => {
  console.log(`floor-http-proxy listening on http://127.0.0.1:${server.address().port}/mcp → ${target.href}`)
})
process.on('SIGTERM', () => {
  server.close()
  process.exit(0)
})
