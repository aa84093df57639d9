// Kept in step with package.json by a unit test; read at build time rather than from disk at run time.
export const VERSION = '0.1.0'
