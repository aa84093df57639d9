import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { runCli, tempConfig } from '../../helpers/cli.ts'

const CONFIG = `
auth:
  apiKeys:
    - { id: alice, key: "\${ALICE_KEY}", roles: [dev] }
policies:
  default: deny
  rules:
    - { principals: ["*"], tools: ["*__delete_*"], effect: deny, description: nobody deletes }
    - { principals: ["role:dev"], tools: ["files__*"], effect: allow }
    - { principals: ["role:ops"], prompts: ["*"], effect: allow }
rateLimits:
  rules:
    - { principals: ["*"], tools: ["*"], key: principal+tool, limit: 60, windowMs: 60000 }
    - { principals: ["role:ops"], tools: ["*"], key: principal, limit: 5, windowMs: 1000 }
`
const ENV = { ALICE_KEY: 'alice-key-0123456789abcdef' }

describe('switchboard explain', () => {
  it('prints the rule that allowed a tool, why, and the rate limits that will count the call (exit 0)', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const { code, stdout } = await runCli(['explain', '--config', file, '--principal', 'alice', '--tool', 'files__read'], ENV)
    assert.equal(code, 0, stdout)
    assert.match(stdout, /^principal: alice \(roles: dev; from auth\.apiKeys\)$/m)
    assert.match(stdout, /rule 0 \(nobody deletes\): skipped, tools \[\*__delete_\*\] do not match files__read/)
    assert.match(stdout, /rule 1: ALLOW — role:dev matches role dev; files__\* matches tool files__read/)
    assert.match(stdout, /=> ALLOWED/)
    assert.match(stdout, /rateLimits\.rules\[0\]: 60 call\(s\) per 60 s, counted per principal\+tool/)
    assert.doesNotMatch(stdout, /rules\[1\]/)
    assert.ok(!stdout.includes(ENV.ALICE_KEY), 'the key is never printed')
  })

  it('prints the deciding deny rule and exits 3', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const { code, stdout } = await runCli(['explain', '--config', file, '--principal', 'alice', '--tool', 'files__delete_all'], ENV)
    assert.equal(code, 3)
    assert.match(stdout, /rule 0 \(nobody deletes\): DENY — \* matches everyone; \*__delete_\* matches tool files__delete_all/)
    assert.match(stdout, /=> DENIED: tool files__delete_all is hidden from alice/)
  })

  it('takes roles from --role for principals that come from JWTs, and falls to the default', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const ops = await runCli(['explain', '--config', file, '--principal', 'svc-1', '--role', 'ops', '--prompt', 'files__summary'], ENV)
    assert.equal(ops.code, 0)
    assert.match(ops.stdout, /principal: svc-1 \(roles: ops; given with --role\)/)
    assert.match(ops.stdout, /rule 2: ALLOW — role:ops matches role ops/)
    const nobody = await runCli(['explain', '--config', file, '--principal', 'svc-2', '--tool', 'files__read'], ENV)
    assert.equal(nobody.code, 3)
    assert.match(nobody.stdout, /no rule matched: default deny/)
  })

  it('refuses a query without a principal or with two targets (exit 2)', async (t) => {
    const file = await tempConfig(t, CONFIG)
    assert.equal((await runCli(['explain', '--config', file, '--tool', 'x'], ENV)).code, 2)
    const both = await runCli(['explain', '--config', file, '--principal', 'a', '--tool', 'x', '--prompt', 'y'], ENV)
    assert.equal(both.code, 2)
    assert.match(both.stderr, /exactly one of --tool, --prompt, --resource/)
  })
})
