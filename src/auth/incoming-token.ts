import { Secret } from './secret.ts'

const NO_CLAIMS: Readonly<Record<string, unknown>> = Object.freeze({})

/**
 * The bearer token a request came with, kept apart from `Principal` (which is written to Redis)
 * for a future token exchange. A Secret: it prints as "[redacted]" however it is printed (String,
 * JSON, util.inspect, pino); only `reveal()` gives the value. It carries the claims the edge
 * verified in it, so policy conditions read them without decoding the token a second time.
 */
export class IncomingToken extends Secret {
  readonly #claims: Readonly<Record<string, unknown>>

  constructor (value: string, claims: Readonly<Record<string, unknown>> = NO_CLAIMS) {
    super(value)
    this.#claims = claims
  }

  /** The verified token's claims (its payload); empty when the edge handed none on. */
  get claims (): Readonly<Record<string, unknown>> {
    return this.#claims
  }
}
