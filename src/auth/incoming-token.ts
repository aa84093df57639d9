import { Secret } from './secret.ts'

/**
 * The bearer token a request came with, kept apart from `Principal` (which is written to Redis)
 * for a future token exchange. A Secret: it prints as "[redacted]" however it is printed (String,
 * JSON, util.inspect, pino); only `reveal()` gives the value.
 */
export class IncomingToken extends Secret {}
