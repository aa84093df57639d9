import type { CallStep, CallToolResult, ResultStep } from './tool-call.ts'

/** The result steps as one, in order; undefined when there are none (nothing to run, not even a frame). */
export function resultPhase (steps: readonly ResultStep[]): ResultStep | undefined {
  if (steps.length <= 1) return steps[0]
  return async (result, source) => {
    let current = result
    for (const step of steps) current = await step(current, source)
    return current
  }
}

/** Whether a result is the task a call created rather than the tool's result (which tasks/result brings later). */
export function isCreatedTask (params: Record<string, unknown>, result: CallToolResult): boolean {
  return params.task !== undefined || result.resultType === 'task'
}

/**
 * The result phase in the tools/call chain, for what the upstream answered: not the gateway's own
 * refusals (answered by steps further out), and not a created task, whose result comes through
 * tasks/result and passes the same phase there.
 */
export function resultStep (phase: ResultStep): CallStep {
  return (call, next) => next(call).then((result) => isCreatedTask(call.params, result) ? result : phase(result, call))
}
