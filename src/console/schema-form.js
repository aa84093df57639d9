import { html, useState } from '/console/vendor/htm-preact.js'

// A form from a tool's inputSchema: the property kinds an operator meets most get a field of their
// own; anything else (objects, other arrays, unions) is a JSON field, and a schema with no usable
// properties is one raw JSON box for the whole arguments object.

function kindOf (schema) {
  if (schema === null || typeof schema !== 'object') return 'json'
  if (Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.every(v => typeof v === 'string' || typeof v === 'number')) return 'enum'
  const type = Array.isArray(schema.type) ? schema.type.filter(t => t !== 'null') : [schema.type]
  if (type.length !== 1) return 'json'
  if (type[0] === 'string' || type[0] === 'number' || type[0] === 'integer' || type[0] === 'boolean') return type[0]
  if (type[0] === 'array' && schema.items?.type === 'string' && schema.items.enum === undefined) return 'strings'
  return 'json'
}

/** The fields the form shows, or null when it is a raw JSON box. */
export function fieldsOf (inputSchema) {
  const props = inputSchema?.properties
  if (inputSchema?.type !== 'object' || props === null || typeof props !== 'object') return null
  const required = new Set(Array.isArray(inputSchema.required) ? inputSchema.required : [])
  return Object.entries(props).map(([name, schema]) => ({ name, schema, kind: kindOf(schema), required: required.has(name) }))
}

function initial (field) {
  const d = field.schema?.default
  if (field.kind === 'boolean') return d === true
  if (d === undefined) return ''
  if (field.kind === 'strings') return Array.isArray(d) ? d.join('\n') : ''
  if (field.kind === 'json') return JSON.stringify(d, null, 2)
  return String(d)
}

/** The arguments object from the field values, or throws naming the field that is wrong. */
function argumentsOf (fields, values) {
  const args = {}
  for (const f of fields) {
    const raw = values[f.name]
    if (f.kind === 'boolean') {
      if (raw || f.required) args[f.name] = Boolean(raw)
      continue
    }
    if (raw === '' || raw === undefined) {
      if (f.required) throw new Error(`${f.name} is required`)
      continue
    }
    if (f.kind === 'number' || f.kind === 'integer') {
      const n = Number(raw)
      if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n))) throw new Error(`${f.name} must be ${f.kind === 'integer' ? 'an integer' : 'a number'}`)
      args[f.name] = n
    } else if (f.kind === 'enum') {
      const match = f.schema.enum.find(v => String(v) === raw)
      args[f.name] = match ?? raw
    } else if (f.kind === 'strings') {
      args[f.name] = raw.split('\n').map(s => s.trim()).filter(s => s !== '')
    } else if (f.kind === 'json') {
      try { args[f.name] = JSON.parse(raw) } catch { throw new Error(`${f.name} is not valid JSON`) }
    } else {
      args[f.name] = raw
    }
  }
  return args
}

function Field ({ id, field, value, set }) {
  const { name, schema, kind, required } = field
  const help = schema?.description ? html`<span class="help" id=${`${id}-help`}>${schema.description}</span>` : null
  const described = schema?.description ? `${id}-help` : undefined
  const label = html`<label for=${id}>${name}${required ? html`<span class="req" aria-label="required"> *</span>` : null} <span class="muted small">${kind === 'strings' ? 'strings, one per line' : kind}</span></label>`
  const onInput = e => set(name, e.currentTarget.value)
  if (kind === 'boolean') {
    return html`<div class="field check"><input id=${id} type="checkbox" checked=${value} aria-describedby=${described}
      onChange=${e => set(name, e.currentTarget.checked)} />${label}${help}</div>`
  }
  let control
  if (kind === 'enum') {
    control = html`<select id=${id} value=${value} onChange=${onInput} aria-describedby=${described} required=${required}>
      <option value="">${required ? '— choose —' : '(not set)'}</option>
      ${schema.enum.map(v => html`<option value=${String(v)}>${String(v)}</option>`)}</select>`
  } else if (kind === 'number' || kind === 'integer') {
    control = html`<input id=${id} type="number" step=${kind === 'integer' ? '1' : 'any'} value=${value} onInput=${onInput} aria-describedby=${described} required=${required} />`
  } else if (kind === 'strings' || kind === 'json') {
    control = html`<textarea id=${id} rows=${kind === 'json' ? 4 : 3} value=${value} onInput=${onInput} aria-describedby=${described} spellcheck="false" class=${kind === 'json' ? 'code' : ''}></textarea>`
  } else {
    control = html`<input id=${id} type="text" value=${value} onInput=${onInput} aria-describedby=${described} required=${required} />`
  }
  return html`<div class="field">${label}${control}${help}</div>`
}

/** Calls `onSubmit(args)` with the arguments object the operator filled in. */
export function SchemaForm ({ idPrefix, inputSchema, onSubmit, busy }) {
  const fields = fieldsOf(inputSchema)
  const [raw, setRaw] = useState(fields === null)
  const [values, setValues] = useState(() => Object.fromEntries((fields ?? []).map(f => [f.name, initial(f)])))
  const [json, setJson] = useState('{}')
  const [problem, setProblem] = useState(null)
  const set = (name, value) => setValues(v => ({ ...v, [name]: value }))

  const submit = (event) => {
    event.preventDefault()
    setProblem(null)
    try {
      if (raw) {
        let args
        try { args = JSON.parse(json) } catch { throw new Error('the arguments are not valid JSON') }
        if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new Error('the arguments must be a JSON object')
        onSubmit(args)
      } else {
        onSubmit(argumentsOf(fields, values))
      }
    } catch (err) { setProblem(err.message) }
  }

  const toggle = () => {
    if (!raw && fields !== null) {
      try { setJson(JSON.stringify(argumentsOf(fields, values), null, 2)) } catch { /* keep what was typed */ }
    }
    setRaw(!raw)
  }

  return html`
    <form class="schema-form" onSubmit=${submit}>
      ${raw
        ? html`<div class="field"><label for=${`${idPrefix}-raw`}>Arguments (JSON object)</label>
            <textarea id=${`${idPrefix}-raw`} class="code" rows="6" spellcheck="false" value=${json} onInput=${e => setJson(e.currentTarget.value)}></textarea></div>`
        : fields.length === 0
          ? html`<p class="muted">This tool takes no arguments.</p>`
          : fields.map(f => html`<${Field} key=${f.name} id=${`${idPrefix}-${f.name}`} field=${f} value=${values[f.name]} set=${set} />`)}
      ${problem ? html`<p class="notice error" role="alert">${problem}</p>` : null}
      <div class="row">
        <button type="submit" class="primary" disabled=${busy}>${busy ? 'Calling…' : 'Call tool'}</button>
        ${fields !== null ? html`<button type="button" onClick=${toggle}>${raw ? 'Use the form' : 'Edit as JSON'}</button>` : null}
      </div>
    </form>`
}
