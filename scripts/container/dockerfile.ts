// Reads the Dockerfile as a builder does, for the tests: instructions (line continuations joined,
// comments dropped), ARG defaults, ENV, and the LABELs with their quoting and ${ARG} substitution undone.
// The container tier checks this reading against the labels podman's builder wrote into the image.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const DOCKERFILE = join(import.meta.dir, '..', '..', 'Dockerfile')

export interface Instruction {
  keyword: string
  /** Everything after the keyword, continuations joined. */
  args: string
}

export interface Dockerfile {
  instructions: Instruction[]
  /** Every ARG's default, by name (later ones win). */
  args: Record<string, string>
  /** ENV of the last stage, by name. */
  env: Record<string, string>
  /** LABELs of the last stage, as the image carries them. */
  labels: Record<string, string>
}

export function instructions(text: string): Instruction[] {
  const out: Instruction[] = []
  let pending = ''
  for (const line of text.split('\n')) {
    // Comment lines are dropped, also between the lines of one instruction (as BuildKit does).
    if (/^\s*#/.test(line)) continue
    if (!pending && !line.trim()) continue
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1)
      continue
    }
    const whole = (pending + line).trim()
    pending = ''
    if (!whole) continue
    const [, keyword, args] = whole.match(/^(\S+)\s*(.*)$/s)!
    out.push({ keyword: keyword!.toUpperCase(), args: args! })
  }
  if (pending.trim()) throw new Error('the Dockerfile ends inside a line continuation')
  return out
}

/**
 * Splits shell-like words as the builder does for LABEL and ENV: 'single quotes' literal, "double
 * quotes" with \" \\ \$ escapes and ${VAR} substitution, bare text with substitution, adjacent parts joined.
 */
export function words(text: string, vars: Record<string, string>): string[] {
  const out: string[] = []
  let word: string | null = null
  const substitute = (at: number): [string, number] => {
    const braced = text.slice(at).match(/^\$\{([A-Za-z_][A-Za-z0-9_]*)\}/) ?? text.slice(at).match(/^\$([A-Za-z_][A-Za-z0-9_]*)/)
    if (!braced) return ['$', at + 1]
    const name = braced[1]!
    if (!(name in vars)) throw new Error(`\$${name} is not an ARG or ENV declared before its use`)
    return [vars[name]!, at + braced[0].length]
  }
  for (let i = 0; i < text.length; ) {
    const c = text[i]!
    if (/\s/.test(c)) {
      if (word !== null) out.push(word)
      word = null
      i++
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1)
      if (end < 0) throw new Error(`unterminated ' in: ${text}`)
      word = (word ?? '') + text.slice(i + 1, end)
      i = end + 1
    } else if (c === '"') {
      word ??= ''
      for (i++; ; ) {
        if (i >= text.length) throw new Error(`unterminated " in: ${text}`)
        const d = text[i]!
        if (d === '"') {
          i++
          break
        }
        if (d === '\\' && /["\\$]/.test(text[i + 1] ?? '')) {
          word += text[i + 1]
          i += 2
        } else if (d === '$') {
          const [value, next] = substitute(i)
          word += value
          i = next
        } else {
          word += d
          i++
        }
      }
    } else if (c === '\\' && i + 1 < text.length) {
      word = (word ?? '') + text[i + 1]
      i += 2
    } else if (c === '$') {
      const [value, next] = substitute(i)
      word = (word ?? '') + value
      i = next
    } else {
      word = (word ?? '') + c
      i++
    }
  }
  if (word !== null) out.push(word)
  return out
}

/** key=value pairs of a LABEL or ENV instruction. */
function pairs(args: string, vars: Record<string, string>): [string, string][] {
  return words(args, vars).map((w) => {
    const at = w.indexOf('=')
    if (at <= 0) throw new Error(`expected key=value, got '${w}' in: ${args}`)
    return [w.slice(0, at), w.slice(at + 1)]
  })
}

export function readDockerfile(text = readFileSync(DOCKERFILE, 'utf8')): Dockerfile {
  const list = instructions(text)
  const args: Record<string, string> = {}
  let env: Record<string, string> = {}
  let labels: Record<string, string> = {}
  for (const { keyword, args: rest } of list) {
    if (keyword === 'FROM') {
      env = {}
      labels = {}
    } else if (keyword === 'ARG') {
      const [name, value] = rest.split(/=(.*)/s)
      args[name!.trim()] = words(value ?? '', { ...args }).join(' ')
    } else if (keyword === 'ENV') {
      for (const [k, v] of pairs(rest, { ...args, ...env })) env[k] = v
    } else if (keyword === 'LABEL') {
      for (const [k, v] of pairs(rest, { ...args, ...env })) labels[k] = v
    }
  }
  return { instructions: list, args, env, labels }
}
