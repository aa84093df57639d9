import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { inspect } from 'node:util'
import { createConsoleSignIns, csrfMatches, secretEquals } from '../../../src/ops/console-sign-ins.ts'

const HOUR_MS = 60 * 60_000

function clock (start = 1_000_000): { now: () => number, advance: (ms: number) => void } {
  let at = start
  return { now: () => at, advance: (ms) => { at += ms } }
}

describe('console sign-ins', () => {
  it('a new sign-in is found by its cookie value until it expires, then forgotten', () => {
    const time = clock()
    const counts: number[] = []
    const signIns = createConsoleSignIns({ ttlMs: () => HOUR_MS, maxSessions: () => 4, now: time.now, onCount: (n) => { counts.push(n) } })
    const { cookie, signIn } = signIns.create()
    assert.match(cookie.reveal(), /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url')
    assert.equal(signIn.expiresAt, 1_000_000 + HOUR_MS)
    assert.equal(signIns.find(cookie.reveal()), signIn)
    time.advance(HOUR_MS - 1)
    assert.equal(signIns.find(cookie.reveal()), signIn)
    time.advance(1)
    assert.equal(signIns.find(cookie.reveal()), undefined)
    assert.equal(signIns.size, 0)
    assert.deepEqual(counts, [1, 0])
  })

  it('keeps only the SHA-256 of the cookie, and prints no secret', () => {
    const signIns = createConsoleSignIns({ ttlMs: () => HOUR_MS, maxSessions: () => 4 })
    const { cookie, signIn } = signIns.create()
    assert.notEqual(signIn.id, cookie.reveal())
    assert.match(signIn.id, /^[0-9a-f]{64}$/)
    for (const printed of [JSON.stringify(signIn), inspect(signIn, { depth: 5 }), String(cookie), `${signIn.csrf}`, JSON.stringify({ cookie })]) {
      assert.ok(!printed.includes(cookie.reveal()), printed)
      assert.ok(!printed.includes(signIn.csrf.reveal()), printed)
    }
    assert.match(inspect(signIn), /\[redacted\]/)
  })

  it('an unknown or empty cookie value finds nothing', () => {
    const signIns = createConsoleSignIns({ ttlMs: () => HOUR_MS, maxSessions: () => 4 })
    signIns.create()
    assert.equal(signIns.find(''), undefined)
    assert.equal(signIns.find('not-a-cookie-of-ours'), undefined)
  })

  it('ends a sign-in once: then its cookie finds nothing', () => {
    const signIns = createConsoleSignIns({ ttlMs: () => HOUR_MS, maxSessions: () => 4 })
    const a = signIns.create()
    const b = signIns.create()
    assert.equal(signIns.end(a.cookie.reveal()), true)
    assert.equal(signIns.end(a.cookie.reveal()), false)
    assert.equal(signIns.find(a.cookie.reveal()), undefined)
    assert.equal(signIns.find(b.cookie.reveal()), b.signIn)
  })

  it('holds at most maxSessions: the oldest ends first', () => {
    const time = clock()
    const signIns = createConsoleSignIns({ ttlMs: () => HOUR_MS, maxSessions: () => 2, now: time.now })
    const first = signIns.create()
    time.advance(1)
    const second = signIns.create()
    time.advance(1)
    const third = signIns.create()
    assert.equal(signIns.size, 2)
    assert.equal(signIns.find(first.cookie.reveal()), undefined)
    assert.equal(signIns.find(second.cookie.reveal()), second.signIn)
    assert.equal(signIns.find(third.cookie.reveal()), third.signIn)
  })

  it('expired sign-ins go before a live one is pushed out by the cap', () => {
    const time = clock()
    let ttl = 1_000
    const signIns = createConsoleSignIns({ ttlMs: () => ttl, maxSessions: () => 2, now: time.now })
    const shortLived = signIns.create()
    ttl = HOUR_MS
    const kept = signIns.create()
    time.advance(1_000)
    const next = signIns.create()
    assert.equal(signIns.find(shortLived.cookie.reveal()), undefined)
    assert.equal(signIns.find(kept.cookie.reveal()), kept.signIn)
    assert.equal(signIns.find(next.cookie.reveal()), next.signIn)
    assert.equal(next.signIn.expiresAt - next.signIn.createdAt, HOUR_MS, 'the lifetime is read per sign-in')
  })

  it('checks csrf values: the sign-in\'s own only, never an empty or missing one', () => {
    const signIns = createConsoleSignIns({ ttlMs: () => HOUR_MS, maxSessions: () => 4 })
    const a = signIns.create().signIn
    const b = signIns.create().signIn
    assert.notEqual(a.csrf.reveal(), b.csrf.reveal())
    assert.equal(csrfMatches(a, a.csrf.reveal()), true)
    assert.equal(csrfMatches(a, b.csrf.reveal()), false)
    assert.equal(csrfMatches(a, a.csrf.reveal().slice(1)), false)
    assert.equal(csrfMatches(a, ''), false)
    assert.equal(csrfMatches(a, undefined), false)
    assert.equal(secretEquals('x', ''), false, 'an empty expected value (no token configured) matches nothing')
  })

  it('clear ends every sign-in', () => {
    const signIns = createConsoleSignIns({ ttlMs: () => HOUR_MS, maxSessions: () => 4 })
    const { cookie } = signIns.create()
    signIns.clear()
    assert.equal(signIns.find(cookie.reveal()), undefined)
    assert.equal(signIns.size, 0)
  })
})
