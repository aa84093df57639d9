import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { parseConfig } from '../../../src/config/load-config.ts'
import { createMetrics } from '../../../src/observability/metrics.ts'
import { createReloader } from '../../../src/ops/reloader.ts'
import { configIssues } from '../../helpers/config-issues.ts'
import { runCli, tempConfig } from '../../helpers/cli.ts'

function withRules (...rules: string[]): string {
  return `policies:\n  default: deny\n  rules:\n${rules.map(r => `    - ${r}\n`).join('')}`
}

const GOOD = '{ tools: ["files__read"], effect: allow, when: "args.path.startsWith(\'/srv/public/\')" }'

describe('policy rule conditions in the config', () => {
  it('accepts the documented expressions, annotations and ask approvals', () => {
    assert.deepEqual(configIssues(withRules(
      GOOD,
      '{ tools: ["pay"], effect: allow, when: "args.amount <= 1000 && principal.claims.department == \'finance\'" }',
      '{ principals: ["role:admin"], tools: ["*"], effect: allow, when: "\'admin\' in principal.roles" }',
      '{ tools: ["*"], effect: deny, annotations: { readOnlyHint: false } }',
      '{ tools: ["*"], effect: ask, approval: { via: operator, timeoutMs: 60000 }, when: "tool.annotations.readOnlyHint == true" }'
    )), [])
  })

  it('refuses a bad when at its rule\'s path, with the reason', () => {
    assert.deepEqual(configIssues(withRules(
      GOOD,
      GOOD,
      '{ tools: ["x"], effect: allow, when: "args.path.startsWith(\'/srv\'" }',
      '{ tools: ["x"], effect: deny, when: "user.id == \'x\'" }',
      '{ tools: ["x"], effect: deny, when: "principal.email == \'x\'" }',
      '{ tools: ["x"], effect: deny, when: "exec(args)" }'
    )).map(line => line.replace(/found .*$/, 'found …')), [
      'policies.rules[2].when: syntax error at 1:10: found …',
      'policies.rules[3].when: unknown variable user (known: principal, tool, args)',
      'policies.rules[4].when: principal has no field email (it has id, roles, claims)',
      'policies.rules[5].when: unknown function exec'
    ])
  })

  it('makes switchboard validate fail with the path and the reason (exit 1)', async (t) => {
    const file = await tempConfig(t, withRules('{ tools: ["x"], effect: allow, when: "args.amount <= " }'))
    const { code, stderr } = await runCli(['validate', '--config', file])
    assert.equal(code, 1)
    assert.match(stderr, /policies\.rules\[0\]\.when: syntax error at 1:\d+/)
  })

  it('makes a reload that brings a bad when refuse, applying nothing', async (t) => {
    const file = await tempConfig(t, withRules('{ tools: ["x"], effect: deny, when: "args.n > limit" }'))
    let applied = 0
    const reload = createReloader({ file, env: {}, current: () => parseConfig('upstreams: []', {}), registrations: [{ section: '*', apply: () => { applied++ } }], metrics: createMetrics(), log: pino({ level: 'silent' }) })
    const result = await reload('test')
    assert.equal(result.outcome, 'invalid')
    assert.deepEqual(result.outcome === 'invalid' ? result.errors : [], [{ path: 'policies.rules[0].when', message: 'unknown variable limit (known: principal, tool, args)' }])
    assert.equal(applied, 0)
  })
})
