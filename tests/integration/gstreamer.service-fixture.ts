// A stand-in service for the orphan test: starts two streams, prints their pids, then idles until killed.
import { simulatedJob, testStreamer, waitFor } from './gstreamer.helpers'

const { streamer } = testStreamer()
const jobs = [simulatedJob({ encode_type: 'H264', stream_type: 'UDP' }), simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP' })]
for (const job of jobs) await streamer.start(job)
await waitFor('both running', () => jobs.every((j) => streamer.status(j.bus_info).state === 'running'))
console.log(JSON.stringify(jobs.map((j) => streamer.pid(j.bus_info))))
setInterval(() => {}, 1000)
