// The contract tier's files the arm64 tier runs under emulation (tests/arm64/run.ts), each with why: the
// ones that reach what the aarch64 build of Bun does in its own native code or with the kernel's
// arm64 ABI (SQLite, UDP and its errors, worker threads, child processes and signals, open() flags,
// statfs, zlib, hashing), and the byte packing the service does itself (MAVLink, RTP). The rest of the
// contract tier is TypeScript over the same HTTP server that these files use, so it runs natively only:
// the whole contract tier under emulation took ~5 minutes, this slice ~1 (docs/testing.md).
// tests/contract/runner.test.ts checks that every file named here exists, so a rename cannot shrink it.
export const ARM64_SLICE: { file: string; why: string }[] = [
  { file: 'tests/contract/persistence.test.ts', why: "bun:sqlite (SQLite built into Bun's aarch64 binary) across restarts and a kill -9 mid-write" },
  { file: 'tests/contract/stop.test.ts', why: 'the service started and stopped as a child process: signals, its stop deadline' },
  { file: 'tests/contract/recordings-symlink.test.ts', why: "open() flags: O_NOFOLLOW is 0x8000 on arm64, 0x20000 on x86-64; a wrong constant follows a swapped symlink" },
  { file: 'tests/contract/stills.test.ts', why: "statfs (its struct is the arm64 kernel's) for the free-space floor; 50 files written at once" },
  { file: 'tests/contract/whep-sockets.test.ts', why: "Bun's UDP sockets reporting an ICMP port-unreachable as an 'error' event, in a child process" },
  // Not media-relay.test.ts: the same thread, but judged by a gap in milliseconds, which emulation on a
  // loaded machine stretches past its bar (321 ms of 300 seen); its timing is proven natively.
  { file: 'tests/contract/segments.test.ts', why: "UDP forwarded from the relay's worker thread (media/relay.ts) and the main thread: each packet to exactly one port; RTP bytes of the pre-record ring" },
  { file: 'tests/contract/mavlink.test.ts', why: 'MAVLink frames packed and read byte by byte (little-endian fields, X.25 CRC, signing hashes) over TCP and UDP' },
  { file: 'tests/contract/telemetry-feed.test.ts', why: "RTP packets of the recorder's telemetry cues: 90 kHz timestamps packed into bytes, sent over UDP" },
  { file: 'tests/contract/sound-timeline.test.ts', why: 'RTP sequence numbers and timestamps rewritten in place: unsigned 16- and 32-bit wrap-around' },
  { file: 'tests/contract/media-hub.test.ts', why: "the hub's packet queues: key frames found in RTP bytes, readers bounded" },
  { file: 'tests/contract/console.test.ts', why: "the console's assets gzipped (zlib) and named by content hash" },
  { file: 'tests/contract/operations.test.ts', why: 'recordings on real files: list, rename, delete, a zip prepared (zlib, CRC-32)' },
  { file: 'tests/contract/holders.test.ts', why: "/proc read as fuser reads it, through qemu-user's view of it" },
]
