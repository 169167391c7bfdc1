// The bus_info values and the control id the stalling worker (stall-worker.ts) answers with; kept apart
// from the worker module, which installs a message handler when imported.
export const STALL_BUS = 'fake:stall'
export const WEDGED_BUS = 'fake:wedged'
/** Its one control (brightness's id): setting it to N blocks the worker thread for N ms. */
export const STALL_CONTROL = 0x00980900
