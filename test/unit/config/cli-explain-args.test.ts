import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { runCli, tempConfig } from '../../helpers/cli.ts'

const CONFIG = `
upstreams:
  - name: files
    transport: stdio
    command: node
policies:
  default: deny
  rules:
    - { tools: ["files__write*"], effect: ask, approval: { via: operator, timeoutMs: 60000 }, description: writes need a human }
    - { tools: ["files__*"], annotations: { readOnlyHint: false }, effect: deny, description: no writers }
    - { tools: ["files__read"], when: "args.path.startsWith('/srv/public/')", effect: allow, description: public reads }
    - { tools: ["files__pay"], when: "args.amount > 100000", effect: deny }
    - { tools: ["files__pay"], when: "args.amount <= 1000", effect: allow }
`

async function explain (file: string, ...args: string[]): Promise<{ code: number | null, stdout: string }> {
  return await runCli(['explain', '--config', file, '--principal', 'alice', ...args])
}

describe('switchboard explain --args', () => {
  it('without --args, says which rules are decided at call time and that the tool is listed (exit 0)', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const { code, stdout } = await explain(file, '--tool', 'files__read')
    assert.equal(code, 0, stdout)
    assert.match(stdout, /^rules with when or annotations are decided at call time: pass --args '<json>' to evaluate when$/m)
    assert.match(stdout, /rule 2 \(public reads\): ALLOW if its conditions hold — \* matches everyone; files__read matches tool files__read/)
    assert.match(stdout, /when: args\.path\.startsWith\('\/srv\/public\/'\) — decided at call time/)
    assert.match(stdout, /annotations: \{ readOnlyHint: false \} — unknown here \(explain reads only the config/)
    assert.match(stdout, /^=> ALLOWED IN LISTS: alice sees tool files__read; whether a call goes through is decided at call time/m)
  })

  it('evaluates when on the given arguments: true, false, and an error that fails a deny rule closed', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const inside = await explain(file, '--tool', 'files__read', '--args', '{"path": "/srv/public/a.txt"}')
    assert.match(inside.stdout, /^arguments: \{"path":"\/srv\/public\/a\.txt"\}$/m)
    assert.match(inside.stdout, /when: args\.path\.startsWith\('\/srv\/public\/'\) => true$/m)
    const outside = await explain(file, '--tool', 'files__read', '--args', '{"path": "/etc/passwd"}')
    assert.match(outside.stdout, /=> false$/m)
    assert.match(outside.stdout, /does not apply to these arguments: the next rules decide/)
    assert.match(outside.stdout, /decision: deny, whichever of these rules decides/)
    assert.equal(outside.code, 3, 'the annotations rule would deny too')

    const small = await explain(file, '--tool', 'files__pay', '--args', '{"amount": 500}')
    assert.match(small.stdout, /when: args\.amount > 100000 => false/)
    assert.match(small.stdout, /when: args\.amount <= 1000 => true/)
    const big = await explain(file, '--tool', 'files__pay', '--args', '{"amount": 500000}')
    assert.equal(big.code, 3, big.stdout)
    assert.match(big.stdout, /^=> DENIED: alice sees tool files__pay in its lists, but a call with these arguments is refused \(SB_ERR_POLICY_DENIED\)$/m)
    const wrong = await explain(file, '--tool', 'files__pay', '--args', '{"amount": "lots"}')
    assert.equal(wrong.code, 3, wrong.stdout)
    assert.match(wrong.stdout, /when: args\.amount > 100000 => error: .+ \(a deny rule fails closed and matches\)/)
  })

  it('shows an ask rule with its approval and exits 5; refuses --args that is not a JSON object (exit 2)', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const ask = await explain(file, '--tool', 'files__write_file', '--args', '{}')
    assert.equal(ask.code, 5, ask.stdout)
    assert.match(ask.stdout, /rule 0 \(writes need a human\): ASK — /)
    assert.match(ask.stdout, /approval: via operator, timeoutMs 60000 — an operator decides in the admin API/)
    assert.match(ask.stdout, /^=> ASK: alice sees tool files__write_file in its lists; a call is held until it is approved$/m)
    const bad = await runCli(['explain', '--config', file, '--principal', 'alice', '--tool', 'files__read', '--args', '[1]'])
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /--args must be a JSON object/)
    const prompt = await runCli(['explain', '--config', file, '--principal', 'alice', '--prompt', 'files__p', '--args', '{}'])
    assert.equal(prompt.code, 2)
    assert.match(prompt.stderr, /--args goes with --tool/)
  })
})
