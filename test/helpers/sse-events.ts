export interface SseEvent { id?: string, data: string }

/** Reads SSE events from a response until `enough` says so; returns them with their ids. */
export async function readEvents (res: Response, enough: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
  const events: SseEvent[] = []
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const deadline = Date.now() + 15_000
  while (!enough(events) && Date.now() < deadline) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true })
    let end: number
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const id = /^id: ?(.*)$/m.exec(block)?.[1]
      const data = block.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n')
      events.push(id === undefined ? { data } : { id, data })
    }
  }
  await reader.cancel().catch(() => {})
  return events
}
