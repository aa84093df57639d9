import { createHash, timingSafeEqual } from 'node:crypto'

// A static bearer token of the operator's (the admin token, the metrics token): not a principal,
// just "may this caller see the operations endpoints".

const BEARER = /^Bearer[ \t]+(.+)$/i

function sha256 (value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}

/**
 * Whether `Authorization` carries `token`. Both sides are hashed first, so the comparison has one
 * fixed length and timingSafeEqual tells nothing about how much of a wrong token matched.
 */
export function hasBearerToken (header: string | undefined, token: string): boolean {
  if (header === undefined || token === '') return false
  const presented = BEARER.exec(header)?.[1]?.trim()
  if (presented === undefined || presented === '') return false
  return timingSafeEqual(sha256(presented), sha256(token))
}
