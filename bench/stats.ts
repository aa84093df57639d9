// Order statistics and rounding for the measured numbers.

/** The q-quantile of an ascending array (nearest rank); NaN when empty. */
export function percentile (sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)))
  return sorted[rank - 1] as number
}

/** The median of the finite values; NaN when there are none. */
export function median (values: number[]): number {
  const v = values.filter(x => Number.isFinite(x)).sort((a, b) => a - b)
  if (v.length === 0) return Number.NaN
  const mid = v.length >> 1
  return v.length % 2 === 1 ? v[mid] as number : ((v[mid - 1] as number) + (v[mid] as number)) / 2
}

export function round (x: number, digits: number): number {
  if (!Number.isFinite(x)) return x
  const f = 10 ** digits
  return Math.round(x * f) / f
}
