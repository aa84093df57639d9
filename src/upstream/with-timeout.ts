import { SwitchboardError } from '../errors.ts'

/** `promise`, or SB_ERR_UPSTREAM_TIMEOUT after `ms` (a connect or initialize that hangs must not hold the connection forever). */
export async function withTimeout<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => { reject(new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT', `${what} timed out after ${ms} ms`)) }, ms)
    })])
  } finally {
    clearTimeout(timer)
  }
}
