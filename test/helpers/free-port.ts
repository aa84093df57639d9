import { once } from 'node:events'
import { createServer } from 'node:net'

/** A loopback port nobody listens on right now (a child process binds it a moment later: callers retry). */
export async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

/**
 * A loopback port held by a listener that drops every connection, as a down server would, so no
 * other test can take it meanwhile; `release` frees it for the server that is to appear there.
 */
export async function holdPort (): Promise<{ port: number, release: () => Promise<void> }> {
  const server = createServer((socket) => { socket.destroy() })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  return {
    port,
    release: async () => {
      server.close()
      await once(server, 'close')
    }
  }
}
