// Sizes for people: binary units, as the service's own "12.34 MB" (bytes / 1048576) counts them.
const UNITS = ['bytes', 'KB', 'MB', 'GB', 'TB']

export function bytes(n: number): string {
  let value = n
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${n} bytes` : `${value.toFixed(value < 10 ? 2 : 1)} ${UNITS[unit]}`
}
