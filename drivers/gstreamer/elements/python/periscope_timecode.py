# periscopetimecode: paints each I420 frame's capture time (ms since the Unix epoch, this machine's real-time
# clock, read as the frame passes) as 48 cells across the top 1/16 of the picture, equal widths (to the pixel),
# most significant bit at the left, white (Y 235) for 1 and black (Y 16) for 0, chroma neutral. Simulated
# cameras run it before their encoder so that any viewer's delay can be read from the picture itself
# (docs/latency.md). Loaded by GStreamer's Python plugin loader from GST_PLUGIN_PATH/python.
import time

import gi

gi.require_version('Gst', '1.0')
gi.require_version('GstBase', '1.0')
gi.require_version('GstVideo', '1.0')
from gi.repository import GObject, Gst, GstBase, GstVideo  # noqa: E402

BITS = 48
WHITE, BLACK, NEUTRAL = 235, 16, 128
CAPS = Gst.Caps.from_string('video/x-raw,format=I420')


class PeriscopeTimecode(GstBase.BaseTransform):
    __gstmetadata__ = ('Periscope time code', 'Filter/Video', 'Paints the capture time as 48 cells across the top of the picture', 'Periscope')
    __gsttemplates__ = (
        Gst.PadTemplate.new('sink', Gst.PadDirection.SINK, Gst.PadPresence.ALWAYS, CAPS),
        Gst.PadTemplate.new('src', Gst.PadDirection.SRC, Gst.PadPresence.ALWAYS, CAPS),
    )

    def __init__(self):
        super().__init__()
        self.set_in_place(True)
        self.info = None

    def do_set_caps(self, incaps, outcaps):
        self.info = GstVideo.VideoInfo.new_from_caps(incaps)
        w = self.info.width
        # Cell i spans [i*w//48, (i+1)*w//48): equal to the pixel, the whole width covered.
        self.edges = [i * w // BITS for i in range(BITS + 1)]
        self.rows = max(1, self.info.height // 16)
        self.chroma = bytes([NEUTRAL]) * ((w + 1) // 2)
        return True

    def do_transform_ip(self, buf):
        ms = time.time_ns() // 1_000_000
        info = self.info
        cells = bytearray(info.width)
        for i in range(BITS):
            if (ms >> (BITS - 1 - i)) & 1:
                cells[self.edges[i]:self.edges[i + 1]] = b'\xeb' * (self.edges[i + 1] - self.edges[i])
            else:
                cells[self.edges[i]:self.edges[i + 1]] = b'\x10' * (self.edges[i + 1] - self.edges[i])
        ok, mapped = buf.map(Gst.MapFlags.READ | Gst.MapFlags.WRITE)
        if not ok:
            return Gst.FlowReturn.ERROR
        try:
            data = mapped.data
            stride, offset = info.stride, info.offset
            row = bytes(cells)
            for y in range(self.rows):
                start = offset[0] + y * stride[0]
                data[start:start + info.width] = row
            for plane in (1, 2):
                for y in range((self.rows + 1) // 2):
                    start = offset[plane] + y * stride[plane]
                    data[start:start + len(self.chroma)] = self.chroma
        finally:
            buf.unmap(mapped)
        return Gst.FlowReturn.OK


GObject.type_register(PeriscopeTimecode)
__gstelementfactory__ = ('periscopetimecode', Gst.Rank.NONE, PeriscopeTimecode)
