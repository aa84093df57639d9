/** What one credential lookup came to, as switchboard_upstream_auth_total{upstream,type,outcome} counts it. */
export type AuthOutcome = 'ok' | 'refreshed' | 'connect_required' | 'exchanged' | 'exchange_failed' | 'refresh_failed' | 'revoked'

/** Told each outcome; `type` is the upstream's auth type. Must not throw. */
export type OnAuthOutcome = (upstream: string, type: string, outcome: AuthOutcome) => void
