import { formatEventId, parseEventId, type EventStore, type StoredEvent } from '../../src/session/event-store.ts'

/** A small JSON-RPC message that tells which event it was. */
export function msg (n: number, extra = ''): unknown {
  return { jsonrpc: '2.0', method: 'notifications/progress', params: { n, extra } }
}

/** Appends seqs to one stream with msg(seq) and returns their ids. */
export function fill (store: EventStore, session: string, stream: string, seqs: number[]): string[] {
  return seqs.map(seq => {
    const id = formatEventId(stream, seq)
    store.append(session, stream, id, msg(seq))
    return id
  })
}

export function seqsOf (events: StoredEvent[] | undefined): number[] | undefined {
  return events?.map(e => parseEventId(e.id)?.seq ?? -1)
}

export const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i)
