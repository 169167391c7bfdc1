// The service as `npm start` runs it, plus a SIGUSR2 handler that runs a full garbage collection, so the
// soak in network.bench.ts compares resident memory after collection rather than wherever the
// collector's sawtooth happens to be.
process.on('SIGUSR2', () => Bun.gc(true))
await import('../core/main.ts')
export {}
