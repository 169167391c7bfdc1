// A JSON parser that fails the way Python's `json.loads` does (the C scanner of CPython ≤ 3.12), so a
// malformed body gets FastAPI's exact 422: {"type":"json_invalid","loc":["body",<pos>],"msg":"JSON decode
// error","input":{},"ctx":{"error":"Expecting value"}}. Like Python it accepts NaN, Infinity and -Infinity.

export class PyJsonError extends Error {
  constructor(
    readonly pyMessage: string,
    /** Position in code points, as Python counts characters. */
    readonly pos: number,
  ) {
    super(`${pyMessage} (char ${pos})`)
  }
}

const WS = new Set([' ', '\t', '\n', '\r'])
/** Python gives up near its recursion limit (RecursionError, a 500 in FastAPI); we answer a 422 instead. */
const MAX_DEPTH = 512
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?/y

export function parsePythonJson(text: string): unknown {
  let i = 0
  let depth = 0
  const fail = (msg: string, at: number): never => {
    throw new PyJsonError(msg, codePointIndex(text, at))
  }
  const skipWs = () => {
    while (i < text.length && WS.has(text[i]!)) i++
  }

  const parseString = (): string => {
    const start = i // at the opening quote
    i++
    let out = ''
    for (;;) {
      if (i >= text.length) fail('Unterminated string starting at', start)
      const c = text[i]!
      if (c === '"') {
        i++
        return out
      }
      if (c === '\\') {
        const esc = text[i + 1]
        if (esc === undefined) fail('Unterminated string starting at', start)
        const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }
        if (esc! in simple) {
          out += simple[esc!]
          i += 2
          continue
        }
        if (esc !== 'u') fail('Invalid \\escape', i)
        const hex = text.slice(i + 2, i + 6)
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('Invalid \\uXXXX escape', i + 1)
        out += String.fromCharCode(parseInt(hex, 16))
        i += 6
        continue
      }
      if (c.charCodeAt(0) < 0x20) fail('Invalid control character at', i)
      out += c
      i++
    }
  }

  const parseValue = (): unknown => {
    const c = text[i]
    if (c === '"') return parseString()
    if (c === '{') return parseObject()
    if (c === '[') return parseArray()
    if (c === 'n' && text.startsWith('null', i)) return (i += 4), null
    if (c === 't' && text.startsWith('true', i)) return (i += 4), true
    if (c === 'f' && text.startsWith('false', i)) return (i += 5), false
    if (c === 'N' && text.startsWith('NaN', i)) return (i += 3), NaN
    if (c === 'I' && text.startsWith('Infinity', i)) return (i += 8), Infinity
    if (c === '-' && text.startsWith('-Infinity', i)) return (i += 9), -Infinity
    NUMBER.lastIndex = i
    const m = NUMBER.exec(text)
    if (m) {
      i += m[0].length
      return Number(m[0])
    }
    return fail('Expecting value', i)
  }

  const enter = () => {
    if (++depth > MAX_DEPTH) fail(`Nested deeper than ${MAX_DEPTH} levels`, i)
  }

  const parseObject = (): Record<string, unknown> => {
    const obj: Record<string, unknown> = {}
    enter()
    i++
    skipWs()
    if (text[i] === '}') return i++, depth--, obj
    if (text[i] !== '"') fail('Expecting property name enclosed in double quotes', i)
    for (;;) {
      const key = parseString()
      skipWs()
      if (text[i] !== ':') fail("Expecting ':' delimiter", i)
      i++
      skipWs()
      const value = parseValue()
      // An own "__proto__" field, as Python and JSON.parse make it: assigning it would set the object's
      // prototype, and validation would then see fields that were never sent.
      if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true })
      else obj[key] = value
      skipWs()
      if (text[i] === '}') return i++, depth--, obj
      if (text[i] !== ',') fail("Expecting ',' delimiter", i)
      i++
      skipWs()
      if (text[i] !== '"') fail('Expecting property name enclosed in double quotes', i)
    }
  }

  const parseArray = (): unknown[] => {
    const arr: unknown[] = []
    enter()
    i++
    skipWs()
    if (text[i] === ']') return i++, depth--, arr
    for (;;) {
      arr.push(parseValue())
      skipWs()
      if (text[i] === ']') return i++, depth--, arr
      if (text[i] !== ',') fail("Expecting ',' delimiter", i)
      i++
      skipWs()
    }
  }

  skipWs()
  const value = parseValue()
  skipWs()
  if (i < text.length) fail('Extra data', i)
  return value
}

function codePointIndex(text: string, utf16Index: number): number {
  let n = 0
  for (let k = 0; k < utf16Index && k < text.length; k++, n++) {
    const code = text.charCodeAt(k)
    if (code >= 0xd800 && code <= 0xdbff && k + 1 < text.length) k++
  }
  return n
}
