import { createConnection, createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'

export interface TcpGate {
  port: number
  /** Cuts every connection through it and refuses new ones until open() (they are accepted, then closed at once). */
  close: () => void
  open: () => void
}

/** A TCP hop to 127.0.0.1:`targetPort` that a test can shut: one client loses its server while others keep it. */
export async function startTcpGate (t: TestContext, targetPort: number): Promise<TcpGate> {
  const sockets = new Set<Socket>()
  let shut = false
  const server = createServer((client) => {
    if (shut) {
      client.destroy()
      return
    }
    const target = createConnection({ host: '127.0.0.1', port: targetPort })
    sockets.add(client)
    sockets.add(target)
    const end = (): void => {
      client.destroy()
      target.destroy()
      sockets.delete(client)
      sockets.delete(target)
    }
    client.on('error', end).on('close', end)
    target.on('error', end).on('close', end)
    client.pipe(target)
    target.pipe(client)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise(resolve => server.close(resolve))
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      shut = true
      for (const socket of sockets) socket.destroy()
      sockets.clear()
    },
    open: () => { shut = false }
  }
}
