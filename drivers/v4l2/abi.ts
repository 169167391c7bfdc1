// The kernel ABI we use, as data: struct sizes and field offsets for LP64 Linux (x86-64 and aarch64
// share them: Bun is 64-bit only), ioctl numbers computed with the kernel's _IOC rule, and constants.
// tests/kernel/host/layout.test.ts compiles C against <linux/videodev2.h> and <linux/uvcvideo.h> for
// x86-64 and for aarch64, and compares every number below with what the compiler computes.

/** sizeof and offsetof(field) per struct; field names are C member designators (so the test can compile them). */
export const STRUCTS = {
  v4l2_capability: {
    size: 104,
    fields: { driver: 0, card: 16, bus_info: 48, version: 80, capabilities: 84, device_caps: 88 },
  },
  v4l2_fmtdesc: {
    size: 64,
    fields: { index: 0, type: 4, flags: 8, description: 12, pixelformat: 44 },
  },
  v4l2_frmsizeenum: {
    size: 44,
    fields: {
      index: 0, pixel_format: 4, type: 8,
      'discrete.width': 12, 'discrete.height': 16,
      'stepwise.min_width': 12, 'stepwise.max_width': 16, 'stepwise.step_width': 20,
      'stepwise.min_height': 24, 'stepwise.max_height': 28, 'stepwise.step_height': 32,
    },
  },
  v4l2_frmivalenum: {
    size: 52,
    fields: {
      index: 0, pixel_format: 4, width: 8, height: 12, type: 16,
      'discrete.numerator': 20, 'discrete.denominator': 24,
      'stepwise.min.numerator': 20, 'stepwise.min.denominator': 24,
      'stepwise.max.numerator': 28, 'stepwise.max.denominator': 32,
      'stepwise.step.numerator': 36, 'stepwise.step.denominator': 40,
    },
  },
  v4l2_query_ext_ctrl: {
    size: 232,
    fields: {
      id: 0, type: 4, name: 8, minimum: 40, maximum: 48, step: 56, default_value: 64,
      flags: 72, elem_size: 76, elems: 80, nr_of_dims: 84,
    },
  },
  // packed in the header
  v4l2_querymenu: { size: 44, fields: { id: 0, index: 4, name: 8, value: 8 } },
  v4l2_ext_controls: { size: 32, fields: { which: 0, ctrl_class: 0, count: 4, error_idx: 8, request_fd: 12, controls: 24 } },
  // packed in the header
  v4l2_ext_control: { size: 20, fields: { id: 0, size: 4, value: 12, value64: 12, string: 12 } },
  v4l2_format: {
    size: 208,
    fields: {
      type: 0, 'fmt.pix.width': 8, 'fmt.pix.height': 12, 'fmt.pix.pixelformat': 16,
    },
  },
  v4l2_streamparm: {
    size: 204,
    fields: {
      type: 0, 'parm.capture.capability': 4,
      'parm.capture.timeperframe.numerator': 12, 'parm.capture.timeperframe.denominator': 16,
    },
  },
  uvc_xu_control_query: { size: 16, fields: { unit: 0, selector: 1, query: 2, size: 4, data: 8 } },
} as const

export type StructName = keyof typeof STRUCTS
export const sizeOf = (s: StructName): number => STRUCTS[s].size
export function offsetOf<S extends StructName>(s: S, field: keyof (typeof STRUCTS)[S]['fields']): number {
  return (STRUCTS[s].fields as Record<string, number>)[field as string]!
}

// _IOC(dir, type, nr, size) for the generic ioctl encoding (x86-64, arm64): nr 8 bits, type 8, size 14, dir 2.
const IOC_WRITE = 1
const IOC_READ = 2
const ioc = (dir: number, type: string, nr: number, size: number) =>
  ((dir << 30) | (size << 16) | (type.charCodeAt(0) << 8) | nr) >>> 0
const ior = (type: string, nr: number, s: StructName) => ioc(IOC_READ, type, nr, sizeOf(s))
const iowr = (type: string, nr: number, s: StructName) => ioc(IOC_READ | IOC_WRITE, type, nr, sizeOf(s))

export const IOCTLS = {
  VIDIOC_QUERYCAP: ior('V', 0, 'v4l2_capability'),
  VIDIOC_ENUM_FMT: iowr('V', 2, 'v4l2_fmtdesc'),
  VIDIOC_G_FMT: iowr('V', 4, 'v4l2_format'),
  VIDIOC_G_PARM: iowr('V', 21, 'v4l2_streamparm'),
  VIDIOC_QUERYMENU: iowr('V', 37, 'v4l2_querymenu'),
  VIDIOC_G_EXT_CTRLS: iowr('V', 71, 'v4l2_ext_controls'),
  VIDIOC_S_EXT_CTRLS: iowr('V', 72, 'v4l2_ext_controls'),
  VIDIOC_ENUM_FRAMESIZES: iowr('V', 74, 'v4l2_frmsizeenum'),
  VIDIOC_ENUM_FRAMEINTERVALS: iowr('V', 75, 'v4l2_frmivalenum'),
  VIDIOC_QUERY_EXT_CTRL: iowr('V', 103, 'v4l2_query_ext_ctrl'),
  UVCIOC_CTRL_QUERY: iowr('u', 0x21, 'uvc_xu_control_query'),
} as const

/** Constants from the headers (names as there, so the layout test checks them too). */
export const CONSTANTS = {
  V4L2_CAP_VIDEO_CAPTURE: 0x00000001,
  V4L2_CAP_DEVICE_CAPS: 0x80000000,
  V4L2_BUF_TYPE_VIDEO_CAPTURE: 1,
  V4L2_FRMSIZE_TYPE_DISCRETE: 1,
  V4L2_FRMSIZE_TYPE_CONTINUOUS: 2,
  V4L2_FRMSIZE_TYPE_STEPWISE: 3,
  V4L2_FRMIVAL_TYPE_DISCRETE: 1,
  V4L2_FRMIVAL_TYPE_CONTINUOUS: 2,
  V4L2_FRMIVAL_TYPE_STEPWISE: 3,
  V4L2_CTRL_FLAG_NEXT_CTRL: 0x80000000,
  V4L2_CTRL_FLAG_NEXT_COMPOUND: 0x40000000,
  V4L2_CTRL_FLAG_DISABLED: 0x0001,
  V4L2_CTRL_FLAG_GRABBED: 0x0002,
  V4L2_CTRL_FLAG_READ_ONLY: 0x0004,
  V4L2_CTRL_FLAG_INACTIVE: 0x0010,
  V4L2_CTRL_FLAG_WRITE_ONLY: 0x0040,
  V4L2_CTRL_WHICH_CUR_VAL: 0,
  V4L2_CTRL_TYPE_INTEGER: 1,
  V4L2_CTRL_TYPE_BOOLEAN: 2,
  V4L2_CTRL_TYPE_MENU: 3,
  V4L2_CTRL_TYPE_BUTTON: 4,
  V4L2_CTRL_TYPE_INTEGER64: 5,
  V4L2_CTRL_TYPE_CTRL_CLASS: 6,
  V4L2_CTRL_TYPE_STRING: 7,
  V4L2_CTRL_TYPE_BITMASK: 8,
  V4L2_CTRL_TYPE_INTEGER_MENU: 9,
  V4L2_CTRL_COMPOUND_TYPES: 0x0100,
  UVC_SET_CUR: 0x01,
  UVC_GET_CUR: 0x81,
} as const

export const C = CONSTANTS

/** The control types the wire model (spec ControlType) can carry, by kernel type number. */
export const CONTROL_TYPES: Record<number, import('../../core/types').ControlType> = {
  1: 'INTEGER', 2: 'BOOLEAN', 3: 'MENU', 4: 'BUTTON', 5: 'INTEGER64', 6: 'CTRL_CLASS', 7: 'STRING', 8: 'BITMASK', 9: 'INTEGER_MENU',
}
