import type { Socket } from 'node:net'

/** How long a refused connection has to take its answer before the gateway drops it anyway. */
export const SOCKET_LINGER_MS = 1_000

/**
 * Sends `answer` with a half-close, then resets the connection after `lingerMs` unless it closed
 * first. A half-close alone leaves the socket to the client: one that never reads never sees the
 * answer or the FIN, never closes its side, and the gateway holds the socket (FIN-WAIT-2) for as
 * long as the client likes. The linger lets a client that does read get the answer first.
 */
export function endThenDestroy (socket: Socket, answer: string | undefined, lingerMs = SOCKET_LINGER_MS): void {
  if (socket.destroyed) return
  if (answer === undefined || !socket.writable) {
    drop(socket)
    return
  }
  const timer = setTimeout(() => { drop(socket) }, lingerMs)
  // The socket keeps the process alive until it closes, and it closes within lingerMs: the timer need not.
  timer.unref()
  socket.once('close', () => { clearTimeout(timer) })
  socket.end(answer)
}

/**
 * A reset rather than a close: a FIN already went out with the answer, and a client that ignores it
 * would leave the kernel holding the connection (FIN-WAIT-2) after the gateway let go of it.
 */
function drop (socket: Socket): void {
  if (socket.destroyed) return
  try {
    socket.resetAndDestroy()
  } catch {
    // Not a TCP socket (a pipe): a plain close is all there is.
    socket.destroy()
  }
}
