// A line diff of two texts (longest common subsequence), as side-by-side rows. Tool definitions
// pretty-printed are tens to a few hundred lines, so the quadratic table is small; past the cap
// every line is shown as changed rather than stalling the page.

const MAX_CELLS = 2_000_000

/** Rows of { left, right, kind: 'same' | 'del' | 'add' | 'mod', leftNo, rightNo }. */
export function diffLines (before, after) {
  const a = before.split('\n')
  const b = after.split('\n')
  if (a.length * b.length > MAX_CELLS) return pairUp(a.map(text => ({ op: 'del', text })).concat(b.map(text => ({ op: 'add', text }))))
  const n = a.length
  const m = b.length
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1))
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1])
    }
  }
  const ops = []
  let i = 0
  let j = 0
  while (i < n && j < m) {
    if (a[i] === b[j]) { ops.push({ op: 'same', text: a[i] }); i++; j++ } else if (lcs[i + 1][j] >= lcs[i][j + 1]) { ops.push({ op: 'del', text: a[i++] }) } else { ops.push({ op: 'add', text: b[j++] }) }
  }
  while (i < n) ops.push({ op: 'del', text: a[i++] })
  while (j < m) ops.push({ op: 'add', text: b[j++] })
  return pairUp(ops)
}

/** Runs of deletions and additions side by side (a changed line sits beside its new self). */
function pairUp (ops) {
  const rows = []
  let leftNo = 0
  let rightNo = 0
  for (let k = 0; k < ops.length;) {
    if (ops[k].op === 'same') {
      rows.push({ kind: 'same', left: ops[k].text, right: ops[k].text, leftNo: ++leftNo, rightNo: ++rightNo })
      k++
      continue
    }
    const dels = []
    const adds = []
    while (k < ops.length && ops[k].op !== 'same') {
      (ops[k].op === 'del' ? dels : adds).push(ops[k].text)
      k++
    }
    for (let r = 0; r < Math.max(dels.length, adds.length); r++) {
      const left = dels[r]
      const right = adds[r]
      rows.push({
        kind: left !== undefined && right !== undefined ? 'mod' : left !== undefined ? 'del' : 'add',
        left: left ?? null,
        right: right ?? null,
        leftNo: left !== undefined ? ++leftNo : null,
        rightNo: right !== undefined ? ++rightNo : null
      })
    }
  }
  return rows
}
