// Preloaded by the arm64 tier into every `bun test` it runs: a run that is not on arm64 proves nothing
// about arm64, so it stops here instead of passing.
if (process.arch !== 'arm64') throw new Error(`the arm64 tier runs on ${process.arch}: it must run under tests/arm64/bun (qemu-aarch64-static and the aarch64 Bun)`)
