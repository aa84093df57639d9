// RFC 6570 URI templates, matched rather than expanded: which template could have produced a URI?

const VARIABLE = /\{([+#./;?&]?)([^{}]*)\}/g

// What each operator's expansion may look like. Level-1 `{var}` cannot contain a reserved
// character, so it never spans a `/`; `{+var}` and `{#var}` may contain anything.
const FRAGMENT: Readonly<Record<string, string>> = {
  '': '[^/?#]*',
  '+': '.*',
  '#': '(?:#.*)?',
  '.': '(?:\\.[^/?#.]*)*',
  '/': '(?:/[^/?#]*)*',
  ';': '(?:;[^/?#]*)*',
  '?': '(?:\\?[^#]*)?',
  '&': '(?:&[^#]*)?'
}

function escapeLiteral (text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** A matcher for the URIs a template can expand to; undefined when the template is malformed. */
export function templateMatcher (template: string): RegExp | undefined {
  let pattern = ''
  let last = 0
  for (const match of template.matchAll(VARIABLE)) {
    const literal = template.slice(last, match.index)
    if (literal.includes('{') || literal.includes('}')) return undefined
    const operator = match[1] ?? ''
    if ((match[2] ?? '') === '') return undefined
    pattern += escapeLiteral(literal) + (FRAGMENT[operator] ?? '')
    last = match.index + match[0].length
  }
  const tail = template.slice(last)
  if (tail.includes('{') || tail.includes('}')) return undefined
  return new RegExp(`^${pattern}${escapeLiteral(tail)}$`)
}
