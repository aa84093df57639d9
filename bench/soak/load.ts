// The soak's mixed load: a bounded number of sessions, each one operation at a time until the deadline:
// echo calls carrying a token, tools/list walked page by page with cursors, calls with progress,
// calls whose upstream asks the client for sampling (the client replies), cancels, new sessions, and
// streams dropped and resumed with Last-Event-ID. Each operation alternates between the stdio and the
// Streamable HTTP upstream.
import type { Checker } from './checker.ts'
import { SoakSession, type SessionEnv } from './session.ts'
import type { Exchange, SseEvent } from './wire.ts'

export const UPSTREAMS = ['local', 'web'] as const
const MAX_PAGES = 50
const MAX_ITERATIONS_PER_WORKER = 5_000_000
const REOPEN_BACKOFF_MS = 200

type OpName = 'echo' | 'list' | 'progress' | 'sampling' | 'cancel' | 'resume' | 'renew'
/**
 * Relative weights of the operations: plain calls dominate, as in real traffic. A resume holds its
 * session about 2.5 s and a cancel 1 s, so their weights stay low or they would set the pace.
 */
const MIX: Array<[OpName, number]> = [['echo', 170], ['list', 6], ['progress', 8], ['sampling', 8], ['cancel', 3], ['resume', 3], ['renew', 1]]
const MIX_TOTAL = MIX.reduce((n, [, w]) => n + w, 0)

function pick (): OpName {
  let r = Math.random() * MIX_TOTAL
  for (const [op, w] of MIX) {
    r -= w
    if (r < 0) return op
  }
  return 'echo'
}

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

function textOf (result: Record<string, unknown>): string {
  const content = result.content as Array<{ text?: unknown }> | undefined
  return typeof content?.[0]?.text === 'string' ? content[0].text : ''
}

/** Runs `sessions` workers until `until()` says stop; resolves when every one has finished its operation. */
export async function runLoad (env: SessionEnv, sessions: number, until: () => boolean): Promise<void> {
  await Promise.all(Array.from({ length: sessions }, async (_, i) => { await worker(env, i, until) }))
}

async function worker (env: SessionEnv, index: number, stop: () => boolean): Promise<void> {
  let session = new SoakSession(env)
  let n = index
  for (let i = 0; i < MAX_ITERATIONS_PER_WORKER && !stop(); i++) {
    if (session.lost) {
      if (session.sessionId !== undefined) env.checker.note('sessions replaced after a long 404')
      session = new SoakSession(env)
      if (!await session.open()) {
        await sleep(REOPEN_BACKOFF_MS)
        continue
      }
    }
    const upstream = UPSTREAMS[n++ % UPSTREAMS.length] as string
    const op = pick()
    switch (op) {
      case 'echo': await echo(session, upstream); break
      case 'list': await listAll(session, env.checker); break
      case 'progress': await progress(session, upstream, env.checker); break
      // The stdio upstream is shared by every session: its sampling requests cannot be routed while several
      // sessions' calls are in flight (README, "isolation"); the HTTP upstream sends them on the call's own stream.
      case 'sampling': await sampling(session, 'web'); break
      case 'cancel': await cancel(session, upstream, env.checker); break
      case 'resume': await resume(session, upstream, env.checker); break
      case 'renew':
        await session.close()
        session = new SoakSession(env)
        break
    }
  }
  await session.close()
}

async function echo (s: SoakSession, upstream: string): Promise<void> {
  const token = s.token()
  await s.request('echo', token, 'tools/call', { name: `${upstream}__echo`, arguments: { text: token } }, r => textOf(r) === token)
}

/** Every page of tools/list, following nextCursor (each page is its own request and its own token). */
async function listAll (s: SoakSession, checker: Checker): Promise<void> {
  let cursor: string | undefined
  let tools = 0
  for (let page = 0; page < MAX_PAGES; page++) {
    const token = s.token()
    const { result } = await s.request('list', token, 'tools/list', cursor === undefined ? {} : { cursor }, r => Array.isArray(r.tools))
    if (result === undefined) return
    tools += (result.tools as unknown[]).length
    cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined
    if (cursor === undefined) {
      checker.note('tools/list walks completed')
      checker.note('tools seen in completed walks', tools)
      return
    }
  }
  checker.note('tools/list walks cut at the page bound')
}

async function progress (s: SoakSession, upstream: string, checker: Checker): Promise<void> {
  const token = s.token()
  let seen = 0
  const { result } = await s.request('progress', token, 'tools/call', { name: `${upstream}__slow`, arguments: { ms: 150, steps: 3 }, _meta: { progressToken: token } },
    () => true, { onEvent: (e) => { if (e.message?.method === 'notifications/progress') seen++ } })
  if (result !== undefined) checker.note(seen === 3 ? 'progress calls with all 3 notifications' : `progress calls with ${seen} of 3 notifications`)
}

async function sampling (s: SoakSession, upstream: string): Promise<void> {
  const token = s.token()
  const replies: Array<Promise<void>> = []
  await s.request('sampling', token, 'tools/call', { name: `${upstream}__ask`, arguments: { prompt: token } },
    r => textOf(r) === `sampled: reply ${token}`,
    {
      onEvent: (e) => {
        const m = e.message
        if (m?.method !== 'sampling/createMessage') return
        // The reply is POSTed while the call's own POST stays open; it may land on any replica.
        replies.push(s.reply(m.id, { role: 'assistant', model: 'soak', content: { type: 'text', text: `reply ${token}` } }))
      }
    })
  await Promise.all(replies)
}

/** A slow call cancelled after 200 ms: a "Request cancelled" error, the stream's end or (a late cancel) the result are all right. */
async function cancel (s: SoakSession, upstream: string, checker: Checker): Promise<void> {
  const token = s.token()
  const cancelled = (x: Exchange): boolean => (x.kind === 'answer' && x.message.id === token && /cancel/i.test(String(x.message.error?.message))) || x.kind === 'ended'
  const call = s.request('cancel', token, 'tools/call', { name: `${upstream}__slow`, arguments: { ms: 1000 } }, () => true, { accept: cancelled })
  await sleep(200)
  await s.notify('notifications/cancelled', { requestId: token, reason: 'soak' })
  const { x, result } = await call
  if (result !== undefined) checker.note('cancels that came too late (the call finished)')
  else if (cancelled(x)) checker.note('cancels honoured')
}

/** A call with progress whose stream is dropped after its first progress and resumed on any replica. */
async function resume (s: SoakSession, upstream: string, checker: Checker): Promise<void> {
  const token = s.token()
  let lastId: string | undefined
  const sentAt = checker.now()
  const onEvent = (e: SseEvent): void => { if (e.id !== undefined) lastId = e.id }
  const { x } = await s.request('resume', token, 'tools/call', { name: `${upstream}__slow`, arguments: { ms: 1500, steps: 3 }, _meta: { progressToken: token } },
    () => true,
    { onEvent, dropWhen: events => events.some(e => e.message?.method === 'notifications/progress') })
  if (x.kind !== 'dropped') return
  if (lastId === undefined) {
    checker.error('resume', 'stream without event ids', JSON.stringify(x.events).slice(0, 200))
    return
  }
  checker.note('streams dropped and resumed')
  await s.resume(token, lastId, { servedBy: x.servedBy, sentAt, upstream }, () => true, onEvent)
}
