// GStreamer streaming: pipelines built by a pure function, run as supervised gst-launch-1.0 children.
export { simulatedSource, framerate } from './simulated'
export { buildPipeline, memberEndpoints, RECORDING_EXT, shellCommand, softwareBitrateKbps } from './pipeline'
export { GstStreamer, type GstStreamerOptions } from './streamer'
export { FrameSync, findFrameSyncPort, frameSyncCommand } from './framesync'
export { sdp } from './sdp'
