import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ConfigDiff } from '../../../src/config/config-diff.ts'
import { parseConfig } from '../../../src/config/load-config.ts'
import { applyReload, touches, type ReloadRegistration, type ReloadSection } from '../../../src/config/reload-registration.ts'

const NEXT = parseConfig('upstreams: []', {})

function diff (applied: string[], upstreams: Partial<ConfigDiff['upstreams']> = {}): ConfigDiff {
  return { upstreams: { added: [], removed: [], changed: [], unchanged: [], ...upstreams }, applied, restartRequired: [] }
}

/** Registrations that note, in order, which of them ran. */
function recording (sections: Array<ReloadSection | ReloadSection[]>): { registrations: ReloadRegistration[], ran: string[] } {
  const ran: string[] = []
  const registrations = sections.map((section, i) => ({ section, apply: () => { ran.push(`${i}:${String(section)}`) } }))
  return { registrations, ran }
}

describe('touches', () => {
  it('"*" every reload, "upstreams" when one was added, removed or changed, a section when applied names it', () => {
    assert.equal(touches('*', diff([])), true)
    assert.equal(touches('upstreams', diff([], { unchanged: ['fs'] })), false)
    for (const kind of ['added', 'removed', 'changed'] as const) assert.equal(touches('upstreams', diff([], { [kind]: ['fs'] })), true, kind)
    assert.equal(touches('rateLimits', diff(['policies'])), false)
    assert.equal(touches('rateLimits', diff(['policies', 'rateLimits'])), true)
    assert.equal(touches('admin.token', diff(['admin.token'])), true)
  })
})

describe('applyReload', () => {
  it('runs, in list order, exactly the registrations whose section the diff touches', () => {
    const { registrations, ran } = recording(['*', 'logLevel', 'upstreams', 'rateLimits', ['audit', 'logLevel'], 'policies', '*'])
    applyReload(registrations, NEXT, diff(['logLevel', 'policies']))
    assert.deepEqual(ran, ['0:*', '1:logLevel', '4:audit,logLevel', '5:policies', '6:*'])
  })

  it('gives each registration the config and the diff', () => {
    const seen: Array<[unknown, unknown]> = []
    const change = diff([], { added: ['web'] })
    applyReload([{ section: 'upstreams', apply: (next, d) => { seen.push([next, d]) } }], NEXT, change)
    assert.deepEqual(seen, [[NEXT, change]])
  })

  it('stops at the first registration that throws: those before it stay applied, those after it do not run', () => {
    const ran: string[] = []
    const registrations: ReloadRegistration[] = [
      { section: '*', apply: () => { ran.push('config') } },
      { section: 'rateLimits', apply: () => { throw new Error('redis refused the limiter') } },
      { section: 'policies', apply: () => { ran.push('policies') } },
      { section: '*', apply: () => { ran.push('sessions') } }
    ]
    assert.throws(() => { applyReload(registrations, NEXT, diff(['rateLimits', 'policies'])) }, /redis refused the limiter/)
    assert.deepEqual(ran, ['config'])
  })
})
