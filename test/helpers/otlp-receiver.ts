import { createServer, type Server } from 'node:http'
import type { TestContext } from 'node:test'

export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  /** OTLP SpanKind: 2 SERVER, 3 CLIENT. */
  kind: number
  attributes: Record<string, string | number | boolean>
  status?: { code?: number, message?: string }
  /** service.name of the resource that sent it. */
  service?: string
}

interface OtlpValue { stringValue?: string, intValue?: string | number, boolValue?: boolean, doubleValue?: number }
interface OtlpAttribute { key: string, value: OtlpValue }
interface OtlpSpan { traceId: string, spanId: string, parentSpanId?: string, name: string, kind: number, attributes?: OtlpAttribute[], status?: { code?: number, message?: string } }
interface OtlpBody { resourceSpans?: Array<{ resource?: { attributes?: OtlpAttribute[] }, scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> }

/** OTLP/JSON carries ids as hex; some encoders use base64. Always hex here. */
function hex (id: string | undefined): string | undefined {
  if (id === undefined || id === '') return undefined
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex')
}

function valueOf (v: OtlpValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue
  if (v.intValue !== undefined) return Number(v.intValue)
  if (v.boolValue !== undefined) return v.boolValue
  return v.doubleValue ?? ''
}

function attributes (list: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map(a => [a.key, valueOf(a.value)]))
}

/** An OTLP/HTTP (JSON) traces endpoint on loopback that keeps every span it is sent, and the raw bodies. */
export async function startOtlpReceiver (t: TestContext): Promise<{ url: string, spans: ReceivedSpan[], bodies: string[], headers: Array<Record<string, string | string[] | undefined>> }> {
  const spans: ReceivedSpan[] = []
  const bodies: string[] = []
  const headers: Array<Record<string, string | string[] | undefined>> = []
  const server: Server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => { text += chunk })
    req.on('end', () => {
      bodies.push(text)
      headers.push(req.headers)
      try {
        const body = JSON.parse(text) as OtlpBody
        for (const rs of body.resourceSpans ?? []) {
          const service = attributes(rs.resource?.attributes)['service.name']
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: hex(s.traceId) ?? '',
                spanId: hex(s.spanId) ?? '',
                ...(hex(s.parentSpanId) === undefined ? {} : { parentSpanId: hex(s.parentSpanId) }),
                name: s.name,
                kind: s.kind,
                attributes: attributes(s.attributes),
                ...(s.status === undefined ? {} : { status: s.status }),
                ...(typeof service === 'string' ? { service } : {})
              })
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      } catch {
        res.writeHead(400).end()
      }
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => { await new Promise(resolve => server.close(resolve)) })
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}/v1/traces`, spans, bodies, headers }
}
