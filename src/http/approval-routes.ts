import type { FastifyInstance } from 'fastify'
import { type OperatorApprovals, parseOperatorDecision } from '../approval/pending-approvals.ts'

/**
 * The operator's side of effect ask (approval.via: operator), registered inside the admin API's
 * context (its bearer hook and body parsing): the calls waiting here, and a decision on one.
 */
export async function approvalRoutes (app: FastifyInstance, { approvals }: { approvals: OperatorApprovals }): Promise<void> {
  app.get('/approvals', async () => ({ approvals: approvals.list() }))

  app.post<{ Params: { id: string } }>('/approvals/:id', async (request, reply) => {
    const decision = parseOperatorDecision(request.body)
    if ('error' in decision) return await reply.code(400).send({ error: 'bad_request', message: decision.error })
    const { id } = request.params
    const outcome = approvals.decide(id, decision)
    if (outcome === undefined) return await reply.code(404).send({ error: 'not_found', message: `no call waits for approval "${id}" (unknown, already decided, or expired)` })
    return await reply.code(200).send({ id, outcome })
  })
}
