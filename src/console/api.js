// The console's one way to reach the admin API: same origin, the sign-in cookie, and the CSRF
// value (held in memory only, never in storage) on every state-changing request.

let csrf = null
let onSignedOut = () => {}

export class ApiError extends Error {
  constructor (status, body) {
    super(body?.message ?? body?.error ?? `HTTP ${status}`)
    this.status = status
    this.body = body
  }
}

export function setCsrf (value) { csrf = value }

/** Called when any request answers 401: the sign-in expired or was ended elsewhere. */
export function whenSignedOut (callback) { onSignedOut = callback }

async function bodyOf (res) {
  if (res.status === 204) return null
  const text = await res.text()
  if (text === '') return null
  try { return JSON.parse(text) } catch { return { message: text } }
}

export async function request (method, path, body) {
  const headers = { accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (method !== 'GET' && method !== 'HEAD' && csrf !== null) headers['x-switchboard-csrf'] = csrf
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store'
  })
  const data = await bodyOf(res)
  if (!res.ok) {
    if (res.status === 401 && path !== '/admin/login' && path !== '/admin/session') onSignedOut()
    throw new ApiError(res.status, data)
  }
  return data
}

export const get = (path) => request('GET', path)
export const post = (path, body) => request('POST', path, body)
export const del = (path) => request('DELETE', path)

/** A path segment, escaped: names come from the config and principals from tokens. */
export const seg = (value) => encodeURIComponent(value)

export function query (params) {
  const q = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') q.set(key, String(value))
  }
  const text = q.toString()
  return text === '' ? '' : `?${text}`
}
