import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/client'
import type { ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { metricValue, scrapeMetrics, waitFor, type RunningGateway } from './start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean }

/** Answers what the controllable server asks during a call as a host would: sampling echoes, elicitation accepts, roots lists one. */
export function answerAsHost (client: Client): void {
  client.setRequestHandler('sampling/createMessage', (request) => {
    const first = request.params.messages[0]?.content
    const prompt = first !== undefined && !Array.isArray(first) && first.type === 'text' ? first.text : ''
    return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `echo ${prompt}` } }
  })
  client.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: { answer: 'forty-two' } }))
  client.setRequestHandler('roots/list', () => ({ roots: [{ uri: 'file:///across', name: 'across' }] }))
}

/**
 * With a client whose requests alternate between two replicas (and `answerAsHost`): a sampling, an
 * elicitation and a roots reply land on the replica that does not run the call and reach the one
 * that does, and so does a cancellation. Returns each replica's metrics text as scraped after.
 */
export async function repliesAndCancelAcross (client: Client, ready: { gateways: RunningGateway[], upstream: ControllableServerHandle }): Promise<string[]> {
  const sampled = await client.callTool({ name: 'web__ask', arguments: { prompt: 'across' } }) as ToolResult
  assert.equal(sampled.content[0]?.text, 'sampled: echo across')
  const elicited = await client.callTool({ name: 'web__elicit', arguments: {} }) as ToolResult
  assert.equal(elicited.content[0]?.text, 'elicited: accept {"answer":"forty-two"}')
  const roots = await client.callTool({ name: 'web__roots', arguments: {} }) as ToolResult
  assert.equal(roots.content[0]?.text, '[{"uri":"file:///across","name":"across"}]')

  const controller = new AbortController()
  const stalled = client.callTool({ name: 'web__stall', arguments: {} }, { signal: controller.signal })
  await waitFor(() => ready.gateways.some(gw => gw.gateway.sessions.inFlightCount() === 1), 'the stalled call to run')
  const before = ready.upstream.state.stats.cancelled
  controller.abort()
  await assert.rejects(stalled)
  await waitFor(() => ready.upstream.state.stats.cancelled > before, 'the upstream to be told the call was cancelled')
  await waitFor(() => ready.gateways.every(gw => gw.gateway.sessions.inFlightCount() === 0), 'no call left running')
  const published = await Promise.all(ready.gateways.map(async gw => await scrapeMetrics(gw.baseUrl)))
  const count = (kind: string, outcome: string): number => published.reduce((n, text) => n + (metricValue(text, 'switchboard_cross_replica_messages_total', { kind, outcome }) ?? 0), 0)
  assert.equal(count('response', 'published'), 3)
  assert.equal(count('response', 'delivered'), 3)
  assert.ok(count('cancel', 'delivered') >= 1)
  return published
}
