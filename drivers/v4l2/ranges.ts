// Stepwise and continuous ranges reduced to lists the wire model can carry (it has only discrete sizes
// and intervals). A range becomes its two ends plus the common video sizes / frame rates that lie on
// the range's grid, so a UI can offer "1280x720 @ 30 fps" from a camera that says "16x16–4096x2160 step 2".
import type { Interval } from '../../core/types'

export interface SizeRange { minW: number; maxW: number; stepW: number; minH: number; maxH: number; stepH: number }
export interface IntervalRange { min: Interval; max: Interval; step: Interval | null }

const COMMON_SIZES: [number, number][] = [
  [160, 120], [176, 144], [320, 180], [320, 240], [352, 288], [640, 360], [640, 480], [720, 480], [720, 576], [800, 600],
  [1024, 576], [1024, 768], [1280, 720], [1280, 960], [1280, 1024], [1600, 1200], [1920, 1080], [2560, 1440], [3840, 2160], [4096, 2160],
]
const COMMON_FPS = [240, 120, 90, 60, 50, 30, 25, 24, 20, 15, 10, 5, 2, 1]

const onGrid = (v: number, min: number, max: number, step: number) => v >= min && v <= max && (step <= 1 || (v - min) % step === 0)

export function reduceSizes(r: SizeRange): { width: number; height: number }[] {
  const out = new Map<string, { width: number; height: number }>()
  const add = (width: number, height: number) => out.set(`${width}x${height}`, { width, height })
  add(r.minW, r.minH)
  for (const [w, h] of COMMON_SIZES) if (onGrid(w, r.minW, r.maxW, r.stepW) && onGrid(h, r.minH, r.maxH, r.stepH)) add(w, h)
  add(r.maxW, r.maxH)
  return [...out.values()].sort((a, b) => a.width - b.width || a.height - b.height)
}

/** a/b compared to c/d without floating point. */
const cmp = (a: Interval, b: Interval) => a.numerator * b.denominator - b.numerator * a.denominator

/** Shortest interval (fastest rate) first, like a discrete enumeration usually is. */
export function reduceIntervals(r: IntervalRange): Interval[] {
  const out: Interval[] = [r.min]
  const onStep = (i: Interval) => {
    if (!r.step || r.step.numerator === 0) return true
    // (i - min) / step must be an integer: (i.n*min.d - min.n*i.d) * step.d  divisible by  i.d*min.d*step.n
    const num = (i.numerator * r.min.denominator - r.min.numerator * i.denominator) * r.step.denominator
    const den = i.denominator * r.min.denominator * r.step.numerator
    return den !== 0 && num % den === 0
  }
  for (const fps of COMMON_FPS) {
    const i = { numerator: 1, denominator: fps }
    if (cmp(i, r.min) > 0 && cmp(i, r.max) < 0 && onStep(i)) out.push(i)
  }
  if (cmp(r.max, r.min) !== 0) out.push(r.max)
  return out
}
