/** The API version (spec §9: the interface is at 0.1.0). */
export const VERSION = '0.1.0'
