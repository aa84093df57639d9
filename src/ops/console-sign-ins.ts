import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { Secret } from '../auth/secret.ts'

// The console's sign-ins: the admin token is entered once and exchanged for a random cookie value.
// Only the cookie's SHA-256 is kept, so a heap dump or a debug print of this map gives nobody a
// working cookie; the csrf value is kept as a Secret, which prints as "[redacted]".

const COOKIE_BYTES = 32

export interface ConsoleSignIn {
  /** The hex SHA-256 of the cookie value: the key it is found by, never the value itself. */
  readonly id: string
  readonly csrf: Secret
  readonly createdAt: number
  readonly expiresAt: number
}

export interface NewSignIn {
  /** The value of the cookie to set: shown once, to the browser, never kept. */
  readonly cookie: Secret
  readonly signIn: ConsoleSignIn
}

export interface ConsoleSignInsOptions {
  /** Read on each sign-in, so a reload changes the next ones. */
  ttlMs: () => number
  maxSessions: () => number
  now?: () => number
  /** Told the count after each change (the sign-ins gauge). */
  onCount?: (count: number) => void
}

export interface ConsoleSignIns {
  create: () => NewSignIn
  /** The live sign-in of this cookie value; an expired one is forgotten on the way. */
  find: (cookie: string) => ConsoleSignIn | undefined
  /** Ends the sign-in of this cookie value. false: there was none. */
  end: (cookie: string) => boolean
  /** Ends every sign-in (the listener closes). */
  clear: () => void
  readonly size: number
}

function sha256 (value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}

/**
 * Whether `presented` equals `expected`. Both are hashed first, so the comparison has one length and
 * takes the same time however much of a wrong value matched. Neither may be empty.
 */
export function secretEquals (presented: string | undefined, expected: string): boolean {
  if (presented === undefined || presented === '' || expected === '') return false
  return timingSafeEqual(sha256(presented), sha256(expected))
}

/** Whether `presented` (the x-switchboard-csrf header) is the sign-in's csrf value. */
export function csrfMatches (signIn: ConsoleSignIn, presented: string | undefined): boolean {
  return secretEquals(presented, signIn.csrf.reveal())
}

export function createConsoleSignIns (options: ConsoleSignInsOptions): ConsoleSignIns {
  const now = options.now ?? Date.now
  // Insertion order is creation order: the first entry is the oldest.
  const byId = new Map<string, ConsoleSignIn>()
  const counted = (): void => { options.onCount?.(byId.size) }

  function sweep (at: number): void {
    for (const [id, signIn] of byId) if (signIn.expiresAt <= at) byId.delete(id)
  }

  return {
    create () {
      const at = now()
      sweep(at)
      const max = Math.max(1, options.maxSessions())
      for (const id of byId.keys()) {
        if (byId.size < max) break
        byId.delete(id)
      }
      const cookie = randomBytes(COOKIE_BYTES).toString('base64url')
      const signIn: ConsoleSignIn = Object.freeze({
        id: sha256(cookie).toString('hex'),
        csrf: new Secret(randomBytes(COOKIE_BYTES).toString('base64url')),
        createdAt: at,
        expiresAt: at + options.ttlMs()
      })
      byId.set(signIn.id, signIn)
      counted()
      return { cookie: new Secret(cookie), signIn }
    },
    find (cookie) {
      if (cookie === '') return undefined
      const id = sha256(cookie).toString('hex')
      const signIn = byId.get(id)
      if (signIn === undefined) return undefined
      if (signIn.expiresAt > now()) return signIn
      byId.delete(id)
      counted()
      return undefined
    },
    end (cookie) {
      const ended = byId.delete(sha256(cookie).toString('hex'))
      if (ended) counted()
      return ended
    },
    clear () {
      byId.clear()
      counted()
    },
    get size () {
      sweep(now())
      return byId.size
    }
  }
}
