import type { FastifyReply } from 'fastify'
import { visibleText } from '../protocol/visible-text.ts'

// The plain pages of the connect flow, seen in a browser: no script, no style, no external
// resource, everything escaped, and a policy that lets the page load nothing at all.

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

// Bidirectional controls would let a principal or upstream name reorder the sentence around it
// ("evil" shown as "live"): shown escaped as \u{202E} (visibleText), as everywhere else.
export function escapeHtml (text: string): string {
  return visibleText(text).replace(/[&<>"']/g, c => HTML_ESCAPES[c] ?? c)
}

/** A form that POSTs `fields` (hidden) to `action`, with an optional password input and one button; everything escaped. */
export function formHtml (action: string, fields: Readonly<Record<string, string | undefined>>, button: string, secretInput?: { name: string, label: string }): string {
  const hidden = Object.entries(fields).filter((e): e is [string, string] => e[1] !== undefined)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`).join('\n')
  const input = secretInput === undefined
    ? ''
    : `<p><label>${escapeHtml(secretInput.label)} <input type="password" name="${escapeHtml(secretInput.name)}" autocomplete="off" required></label></p>\n`
  return `<form method="post" action="${escapeHtml(action)}">\n${hidden}\n${input}<p><button type="submit">${escapeHtml(button)}</button></p>\n</form>\n`
}

/**
 * Headers of every answer of these routes: nothing cached, and no Referer to carry a code or link to
 * another origin. `same-origin`, not `no-referrer`: under no-referrer a browser sends `Origin: null`
 * with the pages' own form POSTs, which the Origin check refuses (Chromium did).
 */
export function privateHeaders (reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('referrer-policy', 'same-origin')
}

/** A whole page of text: `title` and paragraphs, each escaped here. */
export function pageHtml (title: string, paragraphs: readonly string[], body = ''): string {
  const text = paragraphs.map(p => `<p>${escapeHtml(p)}</p>`).join('\n')
  return `<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n<body>\n<h1>${escapeHtml(title)}</h1>\n${text}\n${body}</body>\n</html>\n`
}

/** Sends a page with `status`, under a Content-Security-Policy that allows nothing to load. */
export async function sendPage (reply: FastifyReply, status: number, title: string, paragraphs: readonly string[], body = ''): Promise<FastifyReply> {
  return await privateHeaders(reply).code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', "default-src 'none'; frame-ancestors 'none'")
    .header('x-content-type-options', 'nosniff')
    .send(pageHtml(title, paragraphs, body))
}

/** A table of rows (cells escaped here). */
export function tableHtml (head: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const cells = (tag: string, row: readonly string[]): string => `<tr>${row.map(c => `<${tag}>${escapeHtml(c)}</${tag}>`).join('')}</tr>`
  return `<table>\n<thead>${cells('th', head)}</thead>\n<tbody>\n${rows.map(r => cells('td', r)).join('\n')}\n</tbody>\n</table>\n`
}

/** Quality of `type` in an Accept header: its own entry, else `<major>/*`, else `*\/*`; 0 when none matches. */
function quality (accept: string, type: string): number {
  const major = `${type.split('/')[0] ?? ''}/*`
  let best = -1
  let specificity = -1
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.trim().toLowerCase().split(';')
    const rank = range === type ? 2 : range === major ? 1 : range === '*/*' ? 0 : -1
    if (rank < specificity || rank < 0) continue
    const q = params.map(p => p.trim()).find(p => p.startsWith('q='))
    const value = q === undefined ? 1 : Number(q.slice(2))
    specificity = rank
    best = Number.isFinite(value) ? value : 0
  }
  return Math.max(best, 0)
}

/** Whether a browser asked: text/html preferred over application/json (curl's `*\/*` gets JSON). */
export function prefersHtml (accept: string | undefined): boolean {
  if (accept === undefined || accept === '') return false
  return quality(accept, 'text/html') > quality(accept, 'application/json')
}
