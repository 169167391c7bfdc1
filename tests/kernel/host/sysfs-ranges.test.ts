// Two pieces that need no kernel: reading USB identity from a sysfs tree (here a look-alike of a UVC
// camera's), and reducing stepwise/continuous ranges to the discrete lists the wire model carries.
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { reduceIntervals, reduceSizes } from '../../../drivers/v4l2/ranges'
import { nodeNames, scanGroups } from '../../../drivers/v4l2/sysfs'

const sys = mkdtempSync(join(tmpdir(), 'sysfs-'))
afterAll(() => rmSync(sys, { recursive: true, force: true }))

test('a UVC camera: nodes grouped by USB interface, ids and strings from the USB device directory', () => {
  const usb = join(sys, 'devices/pci0000:00/0000:00:14.0/usb1/1-2')
  const iface = join(usb, '1-2:1.0')
  mkdirSync(iface, { recursive: true })
  for (const [k, v] of Object.entries({ idVendor: '3961\n', idProduct: '2100\n', manufacturer: 'DeepWater Exploration Inc.\n', product: 'exploreHD USB Camera\n', serial: 'DWE-0042\n' }))
    writeFileSync(join(usb, k), v)
  const platform = join(sys, 'devices/platform/vivid.0')
  mkdirSync(platform, { recursive: true })
  for (const [node, dev] of [['video0', iface], ['video1', iface], ['video2', iface], ['video10', platform], ['v4l-subdev0', platform]] as const) {
    mkdirSync(join(sys, 'class/video4linux', node), { recursive: true })
    symlinkSync(dev, join(sys, 'class/video4linux', node, 'device'))
  }
  const root = join(sys, 'class/video4linux')
  expect(nodeNames(root)).toEqual(['video0', 'video1', 'video2', 'video10']) // natural order, no sub-devices
  expect(scanGroups(root)).toEqual([
    {
      key: iface,
      nodes: ['/dev/video0', '/dev/video1', '/dev/video2'],
      usb: { vid: 0x3961, pid: 0x2100, manufacturer: 'DeepWater Exploration Inc.', product: 'exploreHD USB Camera', serial: 'DWE-0042' },
    },
    { key: platform, nodes: ['/dev/video10'], usb: null },
  ])
})

test('a stepwise size range becomes its ends plus the common sizes on its grid', () => {
  expect(reduceSizes({ minW: 16, maxW: 1920, stepW: 16, minH: 16, maxH: 1080, stepH: 8 }).map((s) => `${s.width}x${s.height}`)).toEqual([
    '16x16', '160x120', '176x144', '320x240', '352x288', '640x360', '640x480', '720x480', '720x576', '800x600', '1024x576', '1024x768',
    '1280x720', '1280x960', '1280x1024', '1920x1080',
  ])
  // 1080 is not on a grid of 16 from 16: 1920x1080 is left out, 1920x1088 (the max) is kept.
  expect(reduceSizes({ minW: 16, maxW: 1920, stepW: 16, minH: 16, maxH: 1088, stepH: 16 }).map((s) => `${s.width}x${s.height}`)).not.toContain('1920x1080')
})

test('a continuous interval range becomes its ends plus the common frame rates inside it, fastest first', () => {
  const r = reduceIntervals({ min: { numerator: 1, denominator: 60 }, max: { numerator: 1, denominator: 1 }, step: null })
  expect(r.map((i) => `${i.numerator}/${i.denominator}`)).toEqual(['1/60', '1/50', '1/30', '1/25', '1/24', '1/20', '1/15', '1/10', '1/5', '1/2', '1/1'])
  // A stepwise range keeps only rates on its step: 1/30 s .. 1 s in steps of 1/30 s → 1/15, 1/10, 1/5, 1/2 fit; 1/25 does not.
  const s = reduceIntervals({ min: { numerator: 1, denominator: 30 }, max: { numerator: 1, denominator: 1 }, step: { numerator: 1, denominator: 30 } })
  expect(s.map((i) => `${i.numerator}/${i.denominator}`)).toEqual(['1/30', '1/15', '1/10', '1/5', '1/2', '1/1'])
})
