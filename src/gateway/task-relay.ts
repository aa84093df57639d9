import { randomBytes } from 'node:crypto'
import { type Principal, isSamePrincipal } from '../auth/principal.ts'
import { isRecord } from '../protocol/json-rpc.ts'

/** 2025-11-25 (experimental): the `_meta` key that ties a message to a task. */
export const META_RELATED_TASK = 'io.modelcontextprotocol/related-task'

export interface TaskRelayOptions {
  /** Tasks remembered at once; past that the oldest is forgotten. */
  maxTasks: number
  /** The longest a task is remembered after its last news, whatever ttl the upstream gave it. */
  maxTtlMs: number
  /** How many are remembered, after each change. */
  onSize?: (size: number) => void
  /** This replica's tag, in each id: a request about the task that lands elsewhere finds its way here. */
  replica?: string
}

/** One upstream task as the gateway knows it: under its own id, for the principal that created it. */
export interface TaskEntry {
  readonly id: string
  readonly upstream: string
  readonly upstreamId: string
  readonly principal: Principal
  /** The exposed name of the tool whose call created it, when known (the result side of the call chain names it). */
  readonly tool?: string | undefined
  /** The session that created it: its status notifications go there. */
  readonly sessionId: string
  /** The task as last heard of, under the gateway's id. */
  task: Record<string, unknown>
  expires: number
}

/**
 * The tasks (2025-11-25 experimental: `task` on tools/call, tasks/get, tasks/result, tasks/list,
 * tasks/cancel, notifications/tasks/status) that clients created on upstreams through this gateway.
 * Each gets an id of the gateway's, so ids of different upstreams never collide, and belongs to the
 * principal that created it: another principal is told it does not exist. Bounded in number and
 * time; in memory, so a task is known to the replica where it was created.
 */
export class TaskRelay {
  private readonly options: TaskRelayOptions
  private readonly byId = new Map<string, TaskEntry>()
  private readonly byUpstream = new Map<string, TaskEntry>()

  constructor (options: TaskRelayOptions) {
    this.options = options
  }

  /** The replica a task id names (unchecked: only that replica knows whether the task is the caller's). */
  static ownerOf (id: unknown): string | undefined {
    const match = typeof id === 'string' ? /^task-([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+$/.exec(id) : null
    return match?.[1] ?? undefined
  }

  get replica (): string { return this.options.replica ?? 'local' }

  /**
   * A CreateTaskResult from `upstream` (2025-11-25: the task under `task`; the 2026-07-28 extension:
   * flat, with `resultType: "task"`): the task is remembered and handed on under the gateway's id.
   */
  created (upstream: string, principal: Principal, sessionId: string, result: Record<string, unknown>, tool?: string): Record<string, unknown> {
    const flat = result.resultType === 'task'
    const task = flat ? result : result.task
    if (!isRecord(task) || typeof task.taskId !== 'string') return result
    this.sweep()
    while (this.byId.size >= this.options.maxTasks) this.forget(this.byId.values().next().value as TaskEntry)
    const entry: TaskEntry = { id: `task-${this.replica}.${randomBytes(12).toString('base64url')}`, upstream, upstreamId: task.taskId, principal, tool, sessionId, task: {}, expires: 0 }
    this.byId.set(entry.id, entry)
    this.byUpstream.set(key(upstream, task.taskId), entry)
    this.options.onSize?.(this.byId.size)
    return flat ? this.heard(entry, task) : { ...result, task: this.heard(entry, task) }
  }

  /** The caller's task of that id; undefined when it is unknown, expired, or someone else's. */
  find (id: unknown, principal: Principal): TaskEntry | undefined {
    const entry = typeof id === 'string' ? this.byId.get(id) : undefined
    if (entry === undefined || !isSamePrincipal(entry.principal, principal)) return undefined
    if (entry.expires < Date.now()) {
      this.forget(entry)
      return undefined
    }
    return entry
  }

  /** A task of `upstream` by the upstream's id (its status notifications). */
  fromUpstream (upstream: string, upstreamId: unknown): TaskEntry | undefined {
    return typeof upstreamId === 'string' ? this.byUpstream.get(key(upstream, upstreamId)) : undefined
  }

  /** News of a task from its upstream (a Task object): kept, and answered under the gateway's id. */
  heard (entry: TaskEntry, task: Record<string, unknown>): Record<string, unknown> {
    const outward = { ...task, taskId: entry.id }
    entry.task = outward
    const ttl = typeof task.ttl === 'number' && task.ttl > 0 ? Math.min(task.ttl, this.options.maxTtlMs) : this.options.maxTtlMs
    entry.expires = Date.now() + ttl
    return outward
  }

  /** A result that names its task in `_meta` (tasks/result), with the gateway's id there. */
  related (entry: TaskEntry, result: Record<string, unknown>): Record<string, unknown> {
    const meta = isRecord(result._meta) ? result._meta : undefined
    if (meta === undefined || !isRecord(meta[META_RELATED_TASK])) return result
    return { ...result, _meta: { ...meta, [META_RELATED_TASK]: { ...meta[META_RELATED_TASK], taskId: entry.id } } }
  }

  /** The principal's tasks as last heard of, oldest first. */
  list (principal: Principal): Array<Record<string, unknown>> {
    this.sweep()
    return [...this.byId.values()].filter(e => isSamePrincipal(e.principal, principal)).map(e => e.task)
  }

  private sweep (): void {
    const now = Date.now()
    for (const entry of this.byId.values()) if (entry.expires < now) this.forget(entry)
  }

  private forget (entry: TaskEntry): void {
    this.byId.delete(entry.id)
    this.byUpstream.delete(key(entry.upstream, entry.upstreamId))
    this.options.onSize?.(this.byId.size)
  }
}

const key = (upstream: string, id: string): string => `${upstream}\u0000${id}`
