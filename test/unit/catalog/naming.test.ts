import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  EXPOSED_NAME,
  assignNames,
  createMatcher,
  globToRegExp,
  joinName,
  sanitizeName,
  type NameAssignment,
  type NameRequest,
  type NamingOptions
} from '../../../src/catalog/naming.ts'

const OPTIONS: NamingOptions = { separator: '__', maxNameLength: 64 }
const VALID = /^[A-Za-z][A-Za-z0-9_-]*$/
const HASH_SUFFIX = /_[a-z0-9]{6}$/

function request (upstream: string, tool: string, overrides: Partial<NameRequest> = {}): NameRequest {
  return { upstream, tool, local: tool, prefix: upstream, priority: 0, ...overrides }
}

function byKey (assignments: readonly NameAssignment[]): Map<string, NameAssignment> {
  return new Map(assignments.map(a => [`${a.upstream}\0${a.tool}`, a]))
}

function find (assignments: readonly NameAssignment[], upstream: string, tool: string): NameAssignment {
  const found = assignments.find(a => a.upstream === upstream && a.tool === tool)
  assert.ok(found, `no assignment for ${upstream}/${tool}`)
  return found
}

function assertWellFormed (assignments: readonly NameAssignment[], options: NamingOptions): void {
  const seen = new Set<string>()
  for (const a of assignments) {
    assert.match(a.exposed, VALID, `${a.exposed} is not a valid exposed name`)
    assert.ok(a.exposed.length <= options.maxNameLength, `${a.exposed} is longer than ${options.maxNameLength}`)
    assert.ok(!seen.has(a.exposed), `${a.exposed} was assigned twice`)
    seen.add(a.exposed)
  }
}

/** mulberry32: a tiny seeded PRNG so the generated cases are the same on every run. */
function prng (seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function shuffle<T> (items: readonly T[], random: () => number): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const tmp = out[i] as T
    out[i] = out[j] as T
    out[j] = tmp
  }
  return out
}

describe('EXPOSED_NAME', () => {
  it('accepts names every major client accepts and nothing else', () => {
    for (const ok of ['a', 'Search', 'github__search_repos', 'a-b_c9']) assert.match(ok, EXPOSED_NAME)
    for (const bad of ['', '9a', '_a', '-a', 'a.b', 'a/b', 'a b', 'café']) assert.doesNotMatch(bad, EXPOSED_NAME)
  })
})

describe('joinName', () => {
  it('joins prefix and local name with the separator', () => {
    assert.equal(joinName('github', '__', 'search'), 'github__search')
    assert.equal(joinName('gh', '-', 'search'), 'gh-search')
  })

  it('returns the local name alone when the prefix is empty', () => {
    assert.equal(joinName('', '__', 'search'), 'search')
  })
})

describe('sanitizeName', () => {
  it('keeps a valid name unchanged', () => {
    assert.equal(sanitizeName('github__search-repos_2'), 'github__search-repos_2')
  })

  it('replaces dots, slashes and spaces with underscores', () => {
    assert.equal(sanitizeName('files.read'), 'files_read')
    assert.equal(sanitizeName('repo/issues/list'), 'repo_issues_list')
    assert.equal(sanitizeName('get weather now'), 'get_weather_now')
  })

  it('replaces non-ASCII characters', () => {
    assert.equal(sanitizeName('café'), 'caf_')
    assert.match(sanitizeName('検索'), VALID)
  })

  it('prefixes a name that starts with a digit so it starts with a letter', () => {
    const out = sanitizeName('2fa_verify')
    assert.match(out, VALID)
    assert.ok(out.endsWith('2fa_verify'))
  })

  it('prefixes a name that starts with an underscore or hyphen', () => {
    assert.match(sanitizeName('_private'), VALID)
    assert.match(sanitizeName('-dash'), VALID)
  })

  it('turns the empty string into a valid name', () => {
    assert.match(sanitizeName(''), VALID)
  })
})

describe('globToRegExp', () => {
  it('matches any run of characters with *, including none', () => {
    const re = globToRegExp('get_*')
    assert.ok(re.test('get_'))
    assert.ok(re.test('get_weather'))
    assert.ok(!re.test('set_weather'))
    assert.ok(globToRegExp('*').test(''))
  })

  it('matches exactly one character with ?', () => {
    const re = globToRegExp('v?')
    assert.ok(re.test('v1'))
    assert.ok(!re.test('v'))
    assert.ok(!re.test('v12'))
  })

  it('is anchored at both ends', () => {
    const re = globToRegExp('read')
    assert.ok(re.test('read'))
    assert.ok(!re.test('reader'))
    assert.ok(!re.test('unread'))
  })

  it('treats regular-expression metacharacters literally', () => {
    assert.ok(globToRegExp('files.read').test('files.read'))
    assert.ok(!globToRegExp('files.read').test('filesXread'))
    for (const literal of ['a+b', '(x)', '[x]', '^x$', 'a|b', 'a\\b', '{1}']) {
      const re = globToRegExp(literal)
      assert.ok(re.test(literal), `${literal} should match itself`)
    }
    assert.ok(!globToRegExp('a|b').test('a'))
    assert.ok(!globToRegExp('a+b').test('aab'))
  })
})

describe('createMatcher', () => {
  it('matches nothing when given no globs', () => {
    const match = createMatcher([])
    assert.equal(match('anything'), false)
    assert.equal(match(''), false)
  })

  it('matches when any glob matches', () => {
    const match = createMatcher(['get_*', 'list'])
    assert.equal(match('get_user'), true)
    assert.equal(match('list'), true)
    assert.equal(match('delete_user'), false)
  })

  it('matches everything with *', () => {
    const match = createMatcher(['*'])
    for (const name of ['a', 'files.read', '', 'x y']) assert.equal(match(name), true)
  })
})

describe('assignNames', () => {
  it('keeps valid names as-is, joined with the prefix, and reports no reason', () => {
    const out = assignNames([
      request('github', 'search'),
      request('memory', 'create_entities', { priority: 1 })
    ], OPTIONS)
    assert.equal(out.length, 2)
    assert.equal(find(out, 'github', 'search').exposed, 'github__search')
    assert.equal(find(out, 'github', 'search').reason, undefined)
    assert.equal(find(out, 'memory', 'create_entities').exposed, 'memory__create_entities')
    assert.equal(find(out, 'memory', 'create_entities').reason, undefined)
  })

  it('uses the configured separator', () => {
    const out = assignNames([request('gh', 'search')], { separator: '-', maxNameLength: 64 })
    assert.equal(out[0]?.exposed, 'gh-search')
  })

  it('uses the local (renamed) name rather than the upstream tool name', () => {
    const out = assignNames([request('gh', 'search_repositories', { local: 'find' })], OPTIONS)
    assert.equal(out[0]?.exposed, 'gh__find')
    assert.equal(out[0]?.tool, 'search_repositories')
  })

  it('carries every field of the request into the assignment', () => {
    const req = request('gh', 'search_repositories', { local: 'find', prefix: 'code', priority: 3 })
    const [out] = assignNames([req], OPTIONS)
    assert.deepEqual(out, { ...req, exposed: 'code__find' })
  })

  it('returns an empty list for no requests', () => {
    assert.deepEqual(assignNames([], OPTIONS), [])
  })

  it('keeps a name exactly maxNameLength long as-is', () => {
    const tool = 'a'.repeat(64)
    const [out] = assignNames([request('u', tool, { prefix: '' })], OPTIONS)
    assert.equal(out?.exposed, tool)
    assert.equal(out?.reason, undefined)
  })

  it('shortens a too-long name with a hash suffix and reports too-long', () => {
    const tool = 'summarize_' + 'x'.repeat(70)
    const [out] = assignNames([request('docs', tool)], OPTIONS)
    assert.ok(out)
    assert.equal(out.reason, 'too-long')
    assert.equal(out.exposed.length, 64)
    assert.match(out.exposed, VALID)
    assert.match(out.exposed, HASH_SUFFIX)
    assert.ok(out.exposed.startsWith('docs__summarize_x'), 'keeps as much of the readable name as fits')
  })

  it('honours a smaller maxNameLength', () => {
    const options = { separator: '__', maxNameLength: 16 }
    const out = assignNames([request('github', 'search_repositories')], options)
    assertWellFormed(out, options)
    assert.equal(out[0]?.reason, 'too-long')
  })

  it('gives different too-long tools sharing a long common start different names', () => {
    const stem = 'x'.repeat(80)
    const out = assignNames([request('u', `${stem}_one`), request('u', `${stem}_two`)], OPTIONS)
    assertWellFormed(out, OPTIONS)
    assert.notEqual(out[0]?.exposed, out[1]?.exposed)
  })

  it('shortens names deterministically across runs', () => {
    const make = (): NameRequest[] => [
      request('docs', 'y'.repeat(90)),
      request('other', 'y'.repeat(90), { priority: 1 }),
      request('a', 'search', { prefix: '' }),
      request('b', 'search', { prefix: '', priority: 1 })
    ]
    assert.deepEqual(assignNames(make(), OPTIONS), assignNames(make(), OPTIONS))
  })

  it('produces the same shortened and disambiguated names in every process (pinned values)', () => {
    // Changing these renames tools under every client that cached the old names: do it on purpose only.
    const out = assignNames([
      request('docs', 'summarize_' + 'x'.repeat(70)),
      request('a', 'search', { prefix: '' }),
      request('b', 'search', { prefix: '', priority: 1 })
    ], OPTIONS)
    assert.deepEqual(out.map(a => a.exposed).sort(), [
      'docs__summarize_' + 'x'.repeat(41) + '_3lcnou',
      'search',
      'search_h8j1sf'
    ])
  })

  it('derives the shortened name only from upstream and tool, not from the other tools present', () => {
    const tool = 'summarize_' + 'x'.repeat(70)
    const [alone] = assignNames([request('docs', tool)], OPTIONS)
    const withOthers = assignNames([
      request('aaa', 'first', { priority: 0 }),
      request('docs', tool, { priority: 5 }),
      request('zzz', 'last', { priority: 9 })
    ], OPTIONS)
    assert.equal(find(withOthers, 'docs', tool).exposed, alone?.exposed)
  })

  it('assigns the same names whatever the order of the input', () => {
    const requests = [
      request('a', 'search', { prefix: '', priority: 0 }),
      request('b', 'search', { prefix: '', priority: 1 }),
      request('c', 'search', { prefix: '', priority: 2 }),
      request('a', 'files.read', { prefix: '', priority: 0 }),
      request('b', 'files_read', { prefix: '', priority: 1 }),
      request('c', 'z'.repeat(100), { priority: 2 }),
      request('b', 'z'.repeat(100), { priority: 1 })
    ]
    const expected = byKey(assignNames(requests, OPTIONS))
    const random = prng(42)
    for (let i = 0; i < 20; i++) {
      const actual = byKey(assignNames(shuffle(requests, random), OPTIONS))
      assert.deepEqual(actual, expected)
    }
    assert.deepEqual(byKey(assignNames([...requests].reverse(), OPTIONS)), expected)
  })

  it('keeps a contested name for the lower priority number and disambiguates the other', () => {
    // Listed in reverse, and with the winning upstream sorting last by name, to show priority decides.
    const out = assignNames([
      request('alpha', 'search', { prefix: '', priority: 1 }),
      request('zulu', 'search', { prefix: '', priority: 0 })
    ], OPTIONS)
    assert.equal(out.length, 2, 'neither tool is dropped')
    const winner = find(out, 'zulu', 'search')
    const loser = find(out, 'alpha', 'search')
    assert.equal(winner.exposed, 'search')
    assert.equal(winner.reason, undefined)
    assert.equal(loser.reason, 'collision')
    assert.notEqual(loser.exposed, 'search')
    assert.ok(loser.exposed.startsWith('search'), 'the disambiguated name stays recognisable')
    assert.match(loser.exposed, HASH_SUFFIX)
    assertWellFormed(out, OPTIONS)
  })

  it('disambiguates every loser when three upstreams want the same name', () => {
    const out = assignNames([
      request('a', 'search', { prefix: '', priority: 2 }),
      request('b', 'search', { prefix: '', priority: 0 }),
      request('c', 'search', { prefix: '', priority: 1 })
    ], OPTIONS)
    assert.equal(out.length, 3)
    assertWellFormed(out, OPTIONS)
    assert.equal(find(out, 'b', 'search').exposed, 'search')
    assert.equal(find(out, 'a', 'search').reason, 'collision')
    assert.equal(find(out, 'c', 'search').reason, 'collision')
  })

  it('detects a collision created by a rename', () => {
    const out = assignNames([
      request('a', 'find_repos', { prefix: '', local: 'search', priority: 0 }),
      request('b', 'search', { prefix: '', priority: 1 })
    ], OPTIONS)
    assert.equal(find(out, 'a', 'find_repos').exposed, 'search')
    assert.equal(find(out, 'b', 'search').reason, 'collision')
    assertWellFormed(out, OPTIONS)
  })

  it('detects a collision between a prefixed name and an unprefixed one', () => {
    const out = assignNames([
      request('gh', 'search', { priority: 0 }),
      request('flat', 'gh__search', { prefix: '', priority: 1 })
    ], OPTIONS)
    assert.equal(find(out, 'gh', 'search').exposed, 'gh__search')
    assert.equal(find(out, 'flat', 'gh__search').reason, 'collision')
    assertWellFormed(out, OPTIONS)
  })

  it('sanitizes names with dots, slashes and spaces and reports invalid-characters', () => {
    const out = assignNames([
      request('fs', 'read.file'),
      request('fs', 'dir/list'),
      request('fs', 'get weather')
    ], OPTIONS)
    assert.equal(find(out, 'fs', 'read.file').exposed, 'fs__read_file')
    assert.equal(find(out, 'fs', 'dir/list').exposed, 'fs__dir_list')
    assert.equal(find(out, 'fs', 'get weather').exposed, 'fs__get_weather')
    for (const a of out) assert.equal(a.reason, 'invalid-characters')
  })

  it('makes a name with a leading digit valid when there is no prefix', () => {
    const [out] = assignNames([request('auth', '2fa_verify', { prefix: '' })], OPTIONS)
    assert.ok(out)
    assert.match(out.exposed, VALID)
    assert.equal(out.reason, 'invalid-characters')
  })

  it('reports invalid-characters for a name that is both invalid and too long, and still fits', () => {
    const [out] = assignNames([request('docs', 'a.b/'.repeat(30))], OPTIONS)
    assert.ok(out)
    assert.equal(out.reason, 'invalid-characters')
    assert.match(out.exposed, VALID)
    assert.ok(out.exposed.length <= 64)
  })

  it('gives two tools that sanitize to the same name distinct names', () => {
    const out = assignNames([
      request('u', 'a.b', { prefix: '' }),
      request('u', 'a/b', { prefix: '' }),
      request('u', 'a b', { prefix: '' })
    ], OPTIONS)
    assert.equal(out.length, 3)
    assertWellFormed(out, OPTIONS)
    assert.ok(out.some(a => a.exposed === 'a_b'))
  })

  it('never lets a sanitized name displace a valid one, even from a higher-priority upstream', () => {
    const out = assignNames([
      request('first', 'files.read', { prefix: '', priority: 0 }),
      request('second', 'files_read', { prefix: '', priority: 1 })
    ], OPTIONS)
    assert.equal(find(out, 'second', 'files_read').exposed, 'files_read')
    assert.equal(find(out, 'second', 'files_read').reason, undefined)
    const renamed = find(out, 'first', 'files.read')
    assert.notEqual(renamed.exposed, 'files_read')
    assert.equal(renamed.reason, 'invalid-characters')
    assertWellFormed(out, OPTIONS)
  })

  it('never lets a shortened name displace a valid one that happens to equal it', () => {
    const long = 'q'.repeat(100)
    const [alone] = assignNames([request('big', long, { priority: 0 })], OPTIONS)
    assert.ok(alone)
    const out = assignNames([
      request('big', long, { priority: 0 }),
      request('plain', alone.exposed, { prefix: '', priority: 1 })
    ], OPTIONS)
    assert.equal(find(out, 'plain', alone.exposed).exposed, alone.exposed)
    assert.equal(find(out, 'plain', alone.exposed).reason, undefined)
    assert.notEqual(find(out, 'big', long).exposed, alone.exposed)
    assertWellFormed(out, OPTIONS)
  })

  it('never lets a disambiguated name displace a valid one that happens to equal it', () => {
    const contested = [
      request('a', 'search', { prefix: '', priority: 0 }),
      request('b', 'search', { prefix: '', priority: 1 })
    ]
    const loserName = find(assignNames(contested, OPTIONS), 'b', 'search').exposed
    const out = assignNames([...contested, request('c', loserName, { prefix: '', priority: 2 })], OPTIONS)
    assert.equal(find(out, 'c', loserName).exposed, loserName)
    assert.equal(find(out, 'a', 'search').exposed, 'search')
    assert.notEqual(find(out, 'b', 'search').exposed, loserName)
    assertWellFormed(out, OPTIONS)
  })

  it('reports a reason only for names that were changed', () => {
    const out = assignNames([
      request('a', 'ok', { prefix: '' }),
      request('a', 'not.ok', { prefix: '' }),
      request('a', 'l'.repeat(70), { prefix: '' }),
      request('b', 'ok', { prefix: '', priority: 1 })
    ], OPTIONS)
    const reasons = new Map(out.map(a => [a.tool + '@' + a.upstream, a.reason]))
    assert.deepEqual(Object.fromEntries(reasons), {
      'ok@a': undefined,
      'not.ok@a': 'invalid-characters',
      [`${'l'.repeat(70)}@a`]: 'too-long',
      'ok@b': 'collision'
    })
    for (const a of out) assert.equal(a.reason === undefined, a.exposed === joinName(a.prefix, '__', a.local))
  })

  it('assigns valid, short, unique names to a few hundred random tool names', () => {
    const random = prng(0x5eed)
    const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./ :@é検'
    const pick = (): string => alphabet[Math.floor(random() * alphabet.length)] as string
    const shared = ['search', 'read', 'files.read', 'files_read', '1st', 'x'.repeat(70)]
    const upstreams = [
      { upstream: 'alpha', prefix: '' },
      { upstream: 'beta', prefix: '' },
      { upstream: 'gamma', prefix: 'gamma' },
      { upstream: 'delta', prefix: 'a-very-long-prefix-for-delta' }
    ]
    const requests: NameRequest[] = []
    upstreams.forEach(({ upstream, prefix }, priority) => {
      const tools = new Set<string>(shared)
      while (tools.size < 80) {
        const length = Math.floor(random() * 90)
        let name = ''
        for (let i = 0; i < length; i++) name += pick()
        // Bias towards names other upstreams also generate, to force collisions.
        tools.add(random() < 0.2 ? name.slice(0, 3) : name)
      }
      for (const tool of tools) requests.push({ upstream, tool, local: tool, prefix, priority })
    })
    assert.ok(requests.length >= 300)

    for (const options of [OPTIONS, { separator: '__', maxNameLength: 16 }, { separator: '-', maxNameLength: 128 }]) {
      const out = assignNames(requests, options)
      assert.equal(out.length, requests.length, 'no tool is dropped')
      assertWellFormed(out, options)

      // A valid name that fits is kept by the highest-precedence upstream that wants it.
      const claimed = new Map<string, NameAssignment>()
      for (const a of [...out].sort((x, y) => x.priority - y.priority)) {
        const full = joinName(a.prefix, options.separator, a.local)
        if (VALID.test(full) && full.length <= options.maxNameLength && !claimed.has(full)) claimed.set(full, a)
      }
      for (const [full, a] of claimed) {
        assert.equal(a.exposed, full)
        assert.equal(a.reason, undefined)
      }

      assert.deepEqual(byKey(assignNames(shuffle(requests, random), options)), byKey(out), 'independent of input order')
    }
  })
})
