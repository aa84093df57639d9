// The floor: the least a Node proxy from Streamable HTTP to one stdio MCP server can do per call,
// measured beside the gateway and the peers to show what part of their cost is the platform's.
// node:http, a JSON body in, the request out on the child's stdin (writes coalesced per event-loop
// turn, as the gateway does), its answer back as a JSON response with the client's id. Nothing
// else: no validation, no auth, no sessions beyond echoing one id, no notifications, no errors
// beyond a 400. Not a product: a yardstick (bench/README.md, "The floor").
//   node bench/floor-proxy.mjs <upstream command> [args...]     (listens on 127.0.0.1, port 0)
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'

const [command, ...args] = process.argv.slice(2)
if (command === undefined) {
  console.error('usage: node bench/floor-proxy.mjs <upstream command> [args...]')
  process.exit(2)
}
const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] })
child.on('exit', () => process.exit(1))

/** Our id on the upstream → the client's id and the response to answer on. */
const pending = new Map()
let nextId = 1
let outbox = ''
let flushQueued = false
const flush = () => {
  flushQueued = false
  child.stdin.write(outbox)
  outbox = ''
}
function toUpstream (message) {
  outbox += JSON.stringify(message) + '\n'
  if (!flushQueued) {
    flushQueued = true
    setImmediate(flush)
  }
}

let buffered = ''
child.stdout.setEncoding('utf8')
child.stdout.on('data', (chunk) => {
  buffered += chunk
  let newline
  while ((newline = buffered.indexOf('\n')) !== -1) {
    const line = buffered.slice(0, newline)
    buffered = buffered.slice(newline + 1)
    if (line.trim() === '') continue
    const message = JSON.parse(line)
    const waiting = message.method === undefined ? pending.get(message.id) : undefined
    if (waiting === undefined) continue
    pending.delete(message.id)
    message.id = waiting.id
    waiting.res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'floor' }).end(JSON.stringify(message))
  }
})

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405).end()
    return
  }
  let body = ''
  req.setEncoding('utf8')
  req.on('data', (chunk) => { body += chunk })
  req.on('end', () => {
    let message
    try {
      message = JSON.parse(body)
    } catch {
      res.writeHead(400).end()
      return
    }
    if (message.id === undefined) {
      toUpstream(message)
      res.writeHead(202).end()
      return
    }
    const id = nextId++
    pending.set(id, { id: message.id, res })
    message.id = id
    toUpstream(message)
  })
})
server.listen(0, '127.0.0.1', () => {
  console.log(`floor-proxy listening on http://127.0.0.1:${server.address().port}/mcp`)
})
process.on('SIGTERM', () => {
  child.kill('SIGTERM')
  server.close()
  process.exit(0)
})
