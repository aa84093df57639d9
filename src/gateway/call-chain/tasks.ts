import type { TaskRelay } from '../task-relay.ts'
import { isCreatedTask } from './results.ts'
import type { CallStep } from './tool-call.ts'

/**
 * A task-augmented call (or, in 2026-07-28, one the server chose to run as a task) answers with
 * the task it created upstream: the client gets it under the gateway's id, and the task is
 * remembered for its principal and session.
 */
export function taskStep (tasks: Pick<TaskRelay, 'created'>): CallStep {
  return (call, next) => next(call).then((result) => isCreatedTask(call.params, result)
    ? tasks.created(call.upstream, call.ctx.principal, call.ctx.session.id, result, call.tool)
    : result)
}
