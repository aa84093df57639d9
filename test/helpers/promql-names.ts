import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { parse } from 'yaml'

/** The metric names and label names one PromQL expression refers to. */
export interface PromqlRefs { metrics: Set<string>, labels: Set<string> }

/** A PromQL expression and where it comes from (a dashboard panel, a template variable, an alert). */
export interface SourcedExpr { where: string, expr: string, labels?: string[] }

// Case-insensitive in PromQL, like every keyword.
const AGGREGATIONS = new Set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio'])
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'and', 'or', 'unless', 'atan2', 'inf', 'nan'])
const LABEL_LISTS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right'])
// Case-sensitive. An identifier before "(" that is none of these is a typo, and fails the extraction.
const FUNCTIONS = new Set([
  'abs', 'absent', 'absent_over_time', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atanh', 'avg_over_time', 'ceil', 'changes',
  'clamp', 'clamp_max', 'clamp_min', 'cos', 'cosh', 'count_over_time', 'day_of_month', 'day_of_week', 'day_of_year',
  'days_in_month', 'deg', 'delta', 'deriv', 'double_exponential_smoothing', 'end', 'exp', 'floor', 'histogram_avg',
  'histogram_count', 'histogram_fraction', 'histogram_quantile', 'histogram_stddev', 'histogram_stdvar', 'histogram_sum',
  'holt_winters', 'hour', 'idelta', 'increase', 'info', 'irate', 'label_join', 'label_replace', 'last_over_time', 'ln',
  'log10', 'log2', 'mad_over_time', 'max_over_time', 'min_over_time', 'minute', 'month', 'pi', 'predict_linear',
  'present_over_time', 'quantile_over_time', 'rad', 'rate', 'resets', 'round', 'scalar', 'sgn', 'sin', 'sinh', 'sort',
  'sort_by_label', 'sort_by_label_desc', 'sort_desc', 'sqrt', 'start', 'stddev_over_time', 'stdvar_over_time',
  'sum_over_time', 'tan', 'tanh', 'time', 'timestamp', 'vector', 'year'
])
const IDENT = /[A-Za-z_:][\w:]*/y
const NUMBER = /(?:\d|\.\d)[\w.]*/y // 0.99, 1e3, 0x1f, and durations outside brackets (offset 5m)

/**
 * Metric and label names in a PromQL expression, as written in a dashboard (Grafana variables such as
 * `$instance`, `${job}` and `$__rate_interval` are ignored). String literals, durations, functions,
 * keywords and aggregation operators are dropped; names inside `{...}` and after by/without/on/
 * ignoring/group_left/group_right are labels. Labels that label_replace or label_join create are not
 * known to it.
 */
export function promqlRefs (expr: string): PromqlRefs {
  const metrics = new Set<string>()
  const labels = new Set<string>()
  const text = expr
    .replace(/#[^\n]*/g, ' ')
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]/g, ' ')
    .replace(/\{([^}]*)\}/g, (_all, inner: string) => {
      for (const m of inner.matchAll(/([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)/g)) labels.add(m[1] as string)
      return ' '
    })
    .replace(/\[[^\]]*\]/g, ' ')
  let i = 0
  let labelList = false // inside the (...) after by, without, on, ignoring, group_left, group_right
  while (i < text.length) {
    const c = text[i] as string
    if (/\s|[(),+\-*/%^=!<>@"]/.test(c)) {
      if (c === ')') labelList = false
      i++
      continue
    }
    NUMBER.lastIndex = i
    const number = NUMBER.exec(text)
    if (number !== null) { i += number[0].length; continue }
    IDENT.lastIndex = i
    const ident = IDENT.exec(text)
    if (ident === null) throw new Error(`unexpected ${JSON.stringify(c)} at ${i} in ${expr}`)
    const name = ident[0]
    i += name.length
    if (labelList) { labels.add(name); continue }
    const lower = name.toLowerCase()
    const call = /^\s*\(/.test(text.slice(i))
    if (LABEL_LISTS.has(lower)) { labelList = call; continue }
    if (KEYWORDS.has(lower) || AGGREGATIONS.has(lower)) continue
    if (call) {
      if (!FUNCTIONS.has(name)) throw new Error(`unknown PromQL function ${name}() in ${expr}`)
      continue
    }
    metrics.add(name)
  }
  return { metrics, labels }
}

interface GrafanaPanel { title?: string, targets?: Array<{ expr?: string }>, panels?: GrafanaPanel[] }
interface GrafanaVariable { name: string, type: string, query?: string | { query?: string } }
interface GrafanaDashboard { panels?: GrafanaPanel[], templating?: { list?: GrafanaVariable[] } }

/** Every query of a Grafana dashboard: panel targets (rows included) and query variables. */
export function dashboardExprs (file: string): SourcedExpr[] {
  const dashboard = JSON.parse(readFileSync(file, 'utf8')) as GrafanaDashboard
  const shown = relative(process.cwd(), file)
  const out: SourcedExpr[] = []
  const walk = (panels: GrafanaPanel[] = []): void => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        if (target.expr !== undefined) out.push({ where: `${shown}: panel "${panel.title ?? '?'}"`, expr: target.expr })
      }
      walk(panel.panels)
    }
  }
  walk(dashboard.panels)
  for (const variable of dashboard.templating?.list ?? []) {
    if (variable.type !== 'query') continue
    const query = typeof variable.query === 'string' ? variable.query : variable.query?.query ?? ''
    const where = `${shown}: variable $${variable.name}`
    // label_values(expr, label) and label_values(label) are Grafana's, not PromQL.
    const labelValues = /^\s*label_values\(\s*(?:(.*),\s*)?([A-Za-z_]\w*)\s*\)\s*$/s.exec(query)
    const queryResult = /^\s*query_result\((.*)\)\s*$/s.exec(query)
    if (labelValues !== null) out.push({ where, expr: labelValues[1] ?? '', labels: [labelValues[2] as string] })
    else if (queryResult !== null) out.push({ where, expr: queryResult[1] as string })
    else throw new Error(`${where}: a query this test cannot read: ${query}`)
  }
  return out
}

/** Every rule expression of a Prometheus rule file. */
export function ruleExprs (file: string): SourcedExpr[] {
  const doc = parse(readFileSync(file, 'utf8')) as { groups: Array<{ name: string, rules: Array<{ alert?: string, record?: string, expr: string }> }> }
  return doc.groups.flatMap(group => group.rules.map(rule => ({ where: `${relative(process.cwd(), file)}: ${rule.alert ?? rule.record ?? '?'}`, expr: String(rule.expr) })))
}
