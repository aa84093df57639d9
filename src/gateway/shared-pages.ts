import { withOwnJson } from '../protocol/wire.ts'

/** Pages kept per catalog version; the first pages are the ones asked for again and again. */
const MAX_PAGES_PER_CATALOG = 16

type Page = Readonly<Record<string, unknown>>

/**
 * The pages of one list that every unrestricted session sees alike, each built and serialized once
 * per catalog version (a catalog object is never changed: a new version is a new object, and the
 * old one's pages go with it). Restricted views build their pages each time: one session's view
 * is not worth the memory.
 */
export class SharedPages {
  private readonly byCatalog = new WeakMap<object, Map<string, Page>>()

  page (catalog: object, pageSize: number, cursor: string | undefined, build: () => Record<string, unknown>): Page {
    let pages = this.byCatalog.get(catalog)
    if (pages === undefined) {
      pages = new Map()
      this.byCatalog.set(catalog, pages)
    }
    const key = `${pageSize}\0${cursor ?? ''}`
    const known = pages.get(key)
    if (known !== undefined) return known
    const page = withOwnJson(build())
    if (pages.size >= MAX_PAGES_PER_CATALOG) pages.delete(pages.keys().next().value as string)
    pages.set(key, page)
    return page
  }
}
