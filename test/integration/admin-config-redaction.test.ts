import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway } from '../helpers/start-gateway.ts'

const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
const SECRETS = ['tok-value-1', 'auth-value-2', 'pat-value-3', 'access-key-4', 'private-key-5', 'sig-value-6', 'code-value-7', 'gh-pat-8']

test('GET /admin/config hides stdio args after credential flags and every URL query value not in admin.showQueryParams', async (t) => {
  const yaml = `
admin: { token: "\${ADMIN_TOKEN}", listen: { port: 0 }, showQueryParams: [region] }
upstreams:
  - name: cli
    transport: stdio
    command: /bin/sh
    args: [-c, "exec sleep 600", sh, -t, ${SECRETS[0]}, --auth, ${SECRETS[1]}, --pat, ${SECRETS[2]}, --access-key, ${SECRETS[3]},
      --private-key, ${SECRETS[4]}, "--gh-pat=${SECRETS[7]}", --path, /srv/data]
  - name: web
    transport: streamable-http
    url: "http://127.0.0.1:9/mcp?sig=${SECRETS[5]}&code=${SECRETS[6]}&region=eu"
`
  const gw = await startGateway(t, yaml, { ...process.env, ADMIN_TOKEN })
  const admin = gw.admin
  assert.ok(admin !== undefined)
  await admin.listen({ host: '127.0.0.1', port: 0 })
  const port = (admin.server.address() as { port: number }).port
  const res = await fetch(`http://127.0.0.1:${port}/admin/config`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  assert.equal(res.status, 200)
  const text = await res.text()
  for (const secret of [...SECRETS, ADMIN_TOKEN]) assert.ok(!text.includes(secret), `${secret} is shown by /admin/config`)
  const body = JSON.parse(text) as { upstreams: Array<{ args?: string[], url?: string }> }
  assert.deepEqual(body.upstreams[0]?.args?.slice(-2), ['--path', '/srv/data'], 'a --path stays visible')
  assert.equal(new URL(body.upstreams[1]?.url ?? '').searchParams.get('region'), 'eu', 'a listed query parameter is shown')
})
