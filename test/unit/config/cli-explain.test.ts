import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { runCli, tempConfig } from '../../helpers/cli.ts'

const CONFIG = `
upstreams:
  - name: files
    transport: stdio
    command: node
    tools: { exclude: ["*_secret"], rename: { read_file: read } }
    resources: { include: ["file://*"] }
  - name: git
    transport: streamable-http
    url: http://127.0.0.1:1/mcp
    tools: { include: [log, status] }
    resources: { include: ["git://*"] }
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

  it('says no configured upstream exposes a name outside every upstream\'s prefix, and exits 4 rather than 0', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const { code, stdout } = await runCli(['explain', '--config', file, '--principal', 'alice', '--tool', 'wiki__search'], ENV)
    assert.equal(code, 4, stdout)
    assert.doesNotMatch(stdout, /ALLOWED/)
    assert.match(stdout, /^=> UNKNOWN: no configured upstream exposes a tool named wiki__search \(upstreams: files → files__\*, git → git__\*\)$/m)
    assert.match(stdout, /^ {2}\(the policy alone would deny it\)$/m)
  })

  it('names the filter that hides a tool an upstream would otherwise expose (exit 4)', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const excluded = await runCli(['explain', '--config', file, '--principal', 'alice', '--tool', 'files__db_secret'], ENV)
    assert.equal(excluded.code, 4, excluded.stdout)
    assert.match(excluded.stdout, /=> UNKNOWN: no configured upstream exposes a tool named files__db_secret: upstream files would, but tools\.exclude "\*_secret" matches db_secret$/m)
    assert.match(excluded.stdout, /\(the policy alone would allow it\)/)
    const notIncluded = await runCli(['explain', '--config', file, '--principal', 'alice', '--tool', 'git__push'], ENV)
    assert.equal(notIncluded.code, 4)
    assert.match(notIncluded.stdout, /upstream git would, but tools\.include \[log, status\] does not match push/)
    const resource = await runCli(['explain', '--config', file, '--principal', 'svc', '--role', 'ops', '--resource', 'https://example.com/x'], ENV)
    assert.equal(resource.code, 4)
    assert.match(resource.stdout, /upstream files would, but resources\.include \[file:\/\/\*\] does not match https:\/\/example\.com\/x; upstream git would, but resources\.include \[git:\/\/\*\] does not match https:\/\/example\.com\/x/)
  })

  it('traces renamed tools: the new name to the upstream\'s own, the old name to the new one', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const renamed = await runCli(['explain', '--config', file, '--principal', 'alice', '--tool', 'files__read'], ENV)
    assert.equal(renamed.code, 0)
    assert.match(renamed.stdout, /^exposed by: files \(its tool read_file or read\)$/m)
    const old = await runCli(['explain', '--config', file, '--principal', 'alice', '--tool', 'files__read_file'], ENV)
    assert.equal(old.code, 4)
    assert.match(old.stdout, /upstream files renames its tool read_file to files__read/)
  })

  it('treats every name as unknown when no upstream is configured', async (t) => {
    const file = await tempConfig(t, 'policies: { default: allow }\n')
    const { code, stdout } = await runCli(['explain', '--config', file, '--principal', 'bob', '--prompt', 'files__summary'])
    assert.equal(code, 4)
    assert.match(stdout, /=> UNKNOWN: no configured upstream exposes a prompt named files__summary \(no upstreams are configured\)/)
  })

  it('refuses a query without a principal or with two targets (exit 2)', async (t) => {
    const file = await tempConfig(t, CONFIG)
    assert.equal((await runCli(['explain', '--config', file, '--tool', 'x'], ENV)).code, 2)
    const both = await runCli(['explain', '--config', file, '--principal', 'a', '--tool', 'x', '--prompt', 'y'], ENV)
    assert.equal(both.code, 2)
    assert.match(both.stderr, /exactly one of --tool, --prompt, --resource/)
  })

  it('shows a principal, a name and arguments with bidirectional or invisible characters escaped, never raw', async (t) => {
    const file = await tempConfig(t, CONFIG)
    const { code, stdout } = await runCli(['explain', '--config', file, '--principal', 'mallory\u202Elive', '--role', 'dev', '--tool', 'files__re\u200Bad', '--args', '{"path":"a\u2066b"}'], ENV)
    assert.equal(code, 4, stdout)
    assert.match(stdout, /^principal: mallory\\u\{202E\}live \(roles: dev; given with --role\)$/m)
    assert.match(stdout, /files__re\\u\{200B\}ad/)
    assert.match(stdout, /a\\u\{2066\}b/)
    assert.doesNotMatch(stdout, /[\u202E\u200B\u2066]/u)
  })
})
