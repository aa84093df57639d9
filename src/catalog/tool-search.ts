// Ranked search over tool names and descriptions: BM25F with two fields (the name counts more than
// the description), over words split the way tool names are written (snake_case, kebab-case,
// dotted, camelCase) and reduced to a rough stem, so "entities" finds create_entities and
// "deleting" finds delete_relations. Pure and synchronous: built once per catalog version, then
// each query touches only the postings of its own words.

export interface SearchDocument {
  /** The exposed name. */
  readonly name: string
  /** Title and description, whatever the tool says about itself. */
  readonly text: string
}

export interface SearchHit {
  /** Position of the document in the list the index was built from. */
  readonly index: number
  readonly score: number
}

export interface SearchOptions {
  limit: number
  /** Only documents it accepts are ranked (what the caller may see); called for matching documents only. */
  accept?: (index: number) => boolean
}

const K1 = 1.2
const B = 0.75
const NAME_WEIGHT = 3
const TEXT_WEIGHT = 1
const STOPWORDS = new Set(['a', 'an', 'and', 'are', 'as', 'at', 'be', 'by', 'can', 'do', 'for', 'from', 'i', 'in', 'into', 'is', 'it', 'its', 'me', 'my', 'of', 'on', 'or', 'some', 'that', 'the', 'this', 'to', 'tool', 'tools', 'use', 'with'])

/** A rough stem: plurals, -ing, -ed, -ion and a final e go, so inflections of one word meet. */
export function stem (word: string): string {
  let w = word
  if (w.length > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`
  else if (w.length > 3 && w.endsWith('s') && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1)
  if (w.length > 5 && w.endsWith('ing')) w = w.slice(0, -3)
  else if (w.length > 4 && w.endsWith('ed')) w = w.slice(0, -2)
  // relation → relat (relate), compression → compress, deletion → delet (delete)
  else if (w.length > 6 && w.endsWith('ion')) w = w.slice(0, -3)
  // logging → logg → log, running → runn → run
  if (w.length > 3 && /([b-df-hj-np-tv-z])\1$/.test(w) && !w.endsWith('ss') && !w.endsWith('ll')) w = w.slice(0, -1)
  if (w.length > 4 && w.endsWith('e')) w = w.slice(0, -1)
  return w
}

/** Words of a name or a sentence: split on anything not a letter or digit and at camelCase humps, lower-cased, stemmed, stopwords out. */
export function tokenize (text: string): string[] {
  const spaced = text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
  const out: string[] = []
  for (const word of spaced.split(/[^a-z0-9]+/)) {
    if (word === '' || STOPWORDS.has(word)) continue
    out.push(stem(word))
  }
  return out
}

interface Posting {
  readonly docs: Int32Array
  /** Each document's score for the term: idf × its saturated, length-normalised BM25F term frequency. */
  readonly scores: Float64Array
}

function counts (tokens: readonly string[]): Map<string, number> {
  const m = new Map<string, number>()
  for (const t of tokens) m.set(t, (m.get(t) ?? 0) + 1)
  return m
}

/** An immutable index over a fixed list of documents. */
export class ToolIndex {
  readonly size: number
  private readonly postings: ReadonlyMap<string, Posting>
  // Scratch space for one search at a time (search is synchronous): no allocation per query.
  private readonly scratch: Float64Array
  private readonly touched: Int32Array

  constructor (documents: readonly SearchDocument[]) {
    this.size = documents.length
    const names = documents.map(d => counts(tokenize(d.name)))
    const texts = documents.map(d => counts(tokenize(d.text)))
    const avgName = average(names)
    const avgText = average(texts)
    const gathered = new Map<string, { docs: number[], tf: number[] }>()
    for (let i = 0; i < documents.length; i++) {
      const name = names[i] as Map<string, number>
      const text = texts[i] as Map<string, number>
      const nameNorm = 1 - B + B * (total(name) / avgName)
      const textNorm = 1 - B + B * (total(text) / avgText)
      for (const term of new Set([...name.keys(), ...text.keys()])) {
        const tf = NAME_WEIGHT * (name.get(term) ?? 0) / nameNorm + TEXT_WEIGHT * (text.get(term) ?? 0) / textNorm
        let p = gathered.get(term)
        if (p === undefined) {
          p = { docs: [], tf: [] }
          gathered.set(term, p)
        }
        p.docs.push(i)
        p.tf.push(tf / (K1 + tf))
      }
    }
    const n = documents.length
    const postings = new Map<string, Posting>()
    for (const [term, p] of gathered) {
      const df = p.docs.length
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5))
      postings.set(term, { docs: Int32Array.from(p.docs), scores: Float64Array.from(p.tf, tf => idf * tf) })
    }
    this.postings = postings
    this.scratch = new Float64Array(n)
    this.touched = new Int32Array(n)
  }

  /** The best `limit` accepted documents for the query, best first; ties in document order. Empty when no word matches. */
  search (query: string, options: SearchOptions): SearchHit[] {
    const limit = Math.max(0, Math.floor(options.limit))
    const terms = [...new Set(tokenize(query))].flatMap(t => {
      const p = this.postings.get(t)
      return p === undefined ? [] : [p]
    })
    if (terms.length === 0 || limit === 0) return []
    const { scratch, touched } = this
    let count = 0
    for (const p of terms) {
      const { docs, scores } = p
      for (let j = 0; j < docs.length; j++) {
        const doc = docs[j] as number
        if (scratch[doc] === 0) touched[count++] = doc
        scratch[doc] = (scratch[doc] as number) + (scores[j] as number)
      }
    }
    const top: SearchHit[] = []
    try {
      for (let k = 0; k < count; k++) {
        const index = touched[k] as number
        const score = scratch[index] as number
        const worst = top[top.length - 1]
        if (top.length === limit && worst !== undefined && !better(score, index, worst)) continue
        if (options.accept !== undefined && !options.accept(index)) continue
        let at = top.length
        while (at > 0 && better(score, index, top[at - 1] as SearchHit)) at--
        top.splice(at, 0, { index, score })
        if (top.length > limit) top.pop()
      }
    } finally {
      for (let k = 0; k < count; k++) scratch[touched[k] as number] = 0
    }
    return top
  }
}

function better (score: number, index: number, than: SearchHit): boolean {
  return score > than.score || (score === than.score && index < than.index)
}

function total (m: ReadonlyMap<string, number>): number {
  let n = 0
  for (const c of m.values()) n += c
  return n
}

function average (all: ReadonlyArray<ReadonlyMap<string, number>>): number {
  if (all.length === 0) return 1
  let sum = 0
  for (const m of all) sum += total(m)
  return Math.max(1, sum / all.length)
}
