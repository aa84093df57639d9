import type { CallStep, Next } from './tool-call.ts'

/**
 * The steps as one function, outermost first, ending in `last`. Built once per config: a call
 * runs through closures made here and allocates none for the chain itself.
 */
export function compose (steps: readonly CallStep[], last: Next): Next {
  let next = last
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i] as CallStep
    const inner = next
    next = (call) => step(call, inner)
  }
  return next
}
