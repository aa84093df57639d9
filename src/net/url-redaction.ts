// URLs as they may be shown (logs, the admin API): password, query values and fragment hidden.

export const REDACTED = '[redacted]'
/** Has no character the URL serializer escapes, so it survives into href and is swapped afterwards. */
const SENTINEL = 'SWITCHBOARDREDACTED'
const NONE: ReadonlySet<string> = new Set()

/** URLs inside a longer string (`--header=X: https://…`, `url=https://…?sig=…`); the whole string is tried first. */
const EMBEDDED_URL = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>`]+/g

/** Every URL in `text` redacted as by {@link redactUrl}; text that holds none comes back as it was. */
export function redactUrls (text: string, show: ReadonlySet<string> = NONE): string {
  if (!text.includes('://')) return redactUrl(text, show)
  const whole = redactUrl(text, show)
  if (whole !== text || isUrl(text)) return whole
  return text.replace(EMBEDDED_URL, url => redactUrl(url, show))
}

function isUrl (text: string): boolean {
  try {
    return new URL(text).href !== ''
  } catch {
    return false
  }
}

/**
 * Replaces the password of a URL, the value of every query parameter not named in `show`
 * (lower-case names) and a fragment. A string that is not a URL, or a URL with nothing to hide,
 * comes back exactly as it was.
 */
export function redactUrl (text: string, show: ReadonlySet<string> = NONE): string {
  if (!text.includes(':')) return text
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return text
  }
  let changed = false
  if (url.password !== '') {
    url.password = SENTINEL
    changed = true
  }
  const params = [...url.searchParams]
  // Any parameter may be a signature, a SAS token or a key (sig=, X-Amz-Signature=, code=): only
  // the ones the operator listed are shown. Empty values hide nothing and stay.
  if (params.some(([name, value]) => value !== '' && !show.has(name.toLowerCase()))) {
    url.search = new URLSearchParams(params.map(([name, value]): [string, string] => [name, value === '' || show.has(name.toLowerCase()) ? value : SENTINEL])).toString()
    changed = true
  }
  // A fragment can carry an implicit-flow access_token.
  if (url.hash.length > 1) {
    url.hash = SENTINEL
    changed = true
  }
  return changed ? url.href.replaceAll(SENTINEL, REDACTED) : text
}
