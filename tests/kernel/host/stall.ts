// The bus_info values the stalling worker (stall-worker.ts) answers with; kept apart from the worker
// module, which installs a message handler when imported.
export const STALL_BUS = 'fake:stall'
export const WEDGED_BUS = 'fake:wedged'
