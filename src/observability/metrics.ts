import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { registerRuntimeMetrics } from './runtime-metrics.ts'

export type CallOutcome = 'ok' | 'tool_error' | 'upstream_error' | 'timeout' | 'unavailable' | 'cancelled' | 'unknown_tool' | 'invalid' | 'denied' | 'rate_limited' | 'busy' | 'quarantined' | 'circuit_open' | 'connect_required' | 'approval_denied' | 'approval_timeout' | 'approval_unavailable' | 'guardrail'

/** The gateway's own registry (never prom-client's global one), so two apps in one process never clash. */
export function createMetrics () {
  const registry = new Registry()
  registerRuntimeMetrics(registry)
  const calls = new Counter({ name: 'switchboard_tool_calls_total', help: 'tools/call requests by upstream, tool, outcome and endpoint (the /mcp/<endpoint> path segment, "" for /mcp)', labelNames: ['upstream', 'tool', 'outcome', 'endpoint'] as const, registers: [registry] })
  const callDuration = new Histogram({
    name: 'switchboard_tool_call_duration_seconds',
    help: 'tools/call duration through the gateway, by upstream, tool and outcome',
    labelNames: ['upstream', 'tool', 'outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry]
  })
  const upstreamUp = new Gauge({ name: 'switchboard_upstream_up', help: '1 when the upstream is connected and initialized, or a stdio upstream stopped on purpose (lazy, idle; started on its next call)', labelNames: ['upstream'] as const, registers: [registry] })
  const upstreamProcesses = new Gauge({ name: 'switchboard_upstream_processes', help: 'stdio upstreams\' own processes by state: running, starting, stopped (lazy, idle, or restarting)', labelNames: ['state'] as const, registers: [registry] })
  for (const state of ['running', 'starting', 'stopped']) upstreamProcesses.set({ state }, 0)
  const upstreamSpawns = new Counter({ name: 'switchboard_upstream_spawns_total', help: 'stdio upstream processes started after the gateway\'s start, by reason: first_call (lazy), restart (after an idle stop), crash, limit (after a resource limit stopped it)', labelNames: ['upstream', 'reason'] as const, registers: [registry] })
  const upstreamLazyStart = new Histogram({ name: 'switchboard_upstream_lazy_start_seconds', help: 'from a call finding a stdio upstream stopped (lazy or idle) to that call\'s answer', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [registry] })
  const upstreamReconnects = new Counter({ name: 'switchboard_upstream_reconnects_total', help: 'reconnection attempts after a lost or failed connection', labelNames: ['upstream'] as const, registers: [registry] })
  const upstreamTools = new Gauge({ name: 'switchboard_upstream_tools', help: 'tools the upstream lists, before filters', labelNames: ['upstream'] as const, registers: [registry] })
  const sessions = new Gauge({ name: 'switchboard_sessions_active', help: 'open downstream sessions, by transport and endpoint (the /mcp/<endpoint> path segment, "" for /mcp)', labelNames: ['transport', 'endpoint'] as const, registers: [registry] })
  const toolSearches = new Counter({ name: 'switchboard_tool_searches_total', help: 'search_tools calls on endpoints with discovery: search, by endpoint', labelNames: ['endpoint'] as const, registers: [registry] })
  const catalogTools = new Gauge({ name: 'switchboard_catalog_tools', help: 'tools in the merged catalog', registers: [registry] })
  const catalogRenamed = new Gauge({ name: 'switchboard_catalog_renamed_tools', help: 'tools exposed under a shortened or disambiguated name', registers: [registry] })
  const notifications = new Counter({ name: 'switchboard_notifications_relayed_total', help: 'notifications sent to downstream sessions', labelNames: ['method'] as const, registers: [registry] })
  const forwarded = new Counter({ name: 'switchboard_forwarded_requests_total', help: 'requests other than tools/call routed to an upstream (prompts/get, resources/read, completion/complete, ...), by outcome and endpoint', labelNames: ['upstream', 'method', 'outcome', 'endpoint'] as const, registers: [registry] })
  const serverRequests = new Counter({ name: 'switchboard_upstream_requests_total', help: 'requests upstreams sent to clients (sampling, elicitation, roots), by outcome', labelNames: ['upstream', 'method', 'outcome'] as const, registers: [registry] })
  const catalogItems = new Gauge({ name: 'switchboard_catalog_items', help: 'entries in the merged catalogs, by kind (tools, prompts, resources, resource_templates)', labelNames: ['kind'] as const, registers: [registry] })
  const resourceCollisions = new Gauge({ name: 'switchboard_catalog_resource_collisions', help: 'resource URIs or templates offered by more than one upstream (the first in config order serves them)', registers: [registry] })
  const httpRejections = new Counter({ name: 'switchboard_http_rejections_total', help: 'HTTP requests refused at the edge, by reason', labelNames: ['reason'] as const, registers: [registry] })
  // Not a reason of httpRejections: those are requests read and answered; these are connections dropped unread.
  const httpTimeouts = new Counter({ name: 'switchboard_http_timeouts_total', help: 'connections dropped because a request did not arrive in time, by kind: idle (nothing sent), headers (http.headersTimeoutMs), request (the body, http.requestTimeoutMs); answered 408 when possible, destroyed within a second whatever the client does', labelNames: ['kind'] as const, registers: [registry] })
  for (const kind of ['idle', 'headers', 'request']) httpTimeouts.inc({ kind }, 0)
  const authFailures = new Counter({ name: 'switchboard_auth_failures_total', help: 'requests refused by authentication, by reason: 401 (missing, malformed, unknown_key, invalid_token, expired), 503 (unavailable: identity provider keys unreachable), 404 (session_principal: a session of another principal)', labelNames: ['reason'] as const, registers: [registry] })
  const policyDenials = new Counter({ name: 'switchboard_policy_denials_total', help: 'calls and reads refused by the access policy, by kind (tools, prompts, resources), upstream and exposed name ("" for resources)', labelNames: ['kind', 'upstream', 'name'] as const, registers: [registry] })
  const rateLimited = new Counter({ name: 'switchboard_rate_limit_rejections_total', help: 'tools/call refused by a rate limit (key: the rule\'s key) or a full upstream (key: concurrency)', labelNames: ['upstream', 'tool', 'key'] as const, registers: [registry] })
  const rateLimitStoreErrors = new Counter({ name: 'switchboard_rate_limit_store_errors_total', help: 'rate-limit store operations that failed or timed out; the in-memory insurance limiter answered instead', labelNames: ['store'] as const, registers: [registry] })
  const rateLimitFallback = new Gauge({ name: 'switchboard_rate_limit_store_fallback', help: '1 while the rate-limit store is failing and limits are counted in memory, per replica', registers: [registry] })
  const upstreamInFlight = new Gauge({ name: 'switchboard_upstream_calls_in_flight', help: 'tools/call running on an upstream with a concurrency cap', labelNames: ['upstream'] as const, registers: [registry] })
  const principalConnections = new Gauge({ name: 'switchboard_principal_connections', help: 'connections an upstream with isolation: principal holds open, one per principal (closed after idleCloseMs, at most maxPrincipalConnections)', labelNames: ['upstream'] as const, registers: [registry] })
  const upstreamQueued = new Gauge({ name: 'switchboard_upstream_calls_queued', help: 'tools/call waiting for a free slot on an upstream with a concurrency cap', labelNames: ['upstream'] as const, registers: [registry] })
  // Tool pinning (rug-pull defence)
  const toolQuarantined = new Gauge({ name: 'switchboard_tool_quarantined', help: 'tools whose listed definition differs from their approved pin (changed) or was never approved (held), per upstream; hidden and refused in pinning.mode quarantine, served in warn', labelNames: ['upstream'] as const, registers: [registry] })
  const toolDefinitionChanges = new Counter({ name: 'switchboard_tool_definition_changes_total', help: 'tool definitions seen that differ from their pin, or new tools held, counted once per tool and new definition', labelNames: ['upstream'] as const, registers: [registry] })

  // Circuit breakers and retries.
  const circuitState = new Gauge({ name: 'switchboard_circuit_breaker_state', help: '1 for the circuit\'s current state (closed, open, half_open), 0 for the others', labelNames: ['upstream', 'state'] as const, registers: [registry] })
  const circuitTransitions = new Counter({ name: 'switchboard_circuit_breaker_transitions_total', help: 'circuit breaker state changes, by the state entered', labelNames: ['upstream', 'to'] as const, registers: [registry] })
  const circuitRejections = new Counter({ name: 'switchboard_circuit_breaker_rejections_total', help: 'requests failed fast, without reaching the upstream, because its circuit was open', labelNames: ['upstream'] as const, registers: [registry] })
  const toolRetries = new Counter({ name: 'switchboard_tool_call_retries_total', help: 'retries of read-only or idempotent tools after a connection failure, by the retry\'s outcome (ok, failed)', labelNames: ['upstream', 'tool', 'outcome'] as const, registers: [registry] })

  // 2026-07-28 clients (http.modernClients)
  const inputRequired = new Counter({ name: 'switchboard_input_required_total', help: '2026-07-28 calls whose upstream asked the client something, by outcome: asked (answered input_required), resumed (a retry went on with the answers), expired (no retry within http.inputRequired.ttlMs; the call was cancelled), refused (a retry with an altered, unknown or mismatched requestState), full (a question failed at http.inputRequired.maxPending)', labelNames: ['outcome'] as const, registers: [registry] })
  for (const outcome of ['asked', 'resumed', 'expired', 'refused', 'full']) inputRequired.inc({ outcome }, 0)
  const inputRequiredPending = new Gauge({ name: 'switchboard_input_required_pending', help: '2026-07-28 calls waiting for their client to retry with its answers', registers: [registry] })
  const listensActive = new Gauge({ name: 'switchboard_listens_active', help: 'open 2026-07-28 subscriptions/listen streams', registers: [registry] })
  // Caps per principal (limits)
  const limitRefusals = new Counter({ name: 'switchboard_limit_refusals_total', help: 'sessions, streams and requests refused by a cap of the limits section, by limit (sessionsPerPrincipal, streamsPerSession, listenStreamsPerPrincipal, inFlightPerPrincipal, sessionConnectionsPerPrincipal), and sessions refused their own upstream connection by maxSessionConnections or their own process by upstreamDefaults.maxRunning', labelNames: ['limit'] as const, registers: [registry] })
  for (const limit of ['sessionsPerPrincipal', 'streamsPerSession', 'listenStreamsPerPrincipal', 'inFlightPerPrincipal', 'sessionConnectionsPerPrincipal', 'maxSessionConnections', 'maxRunning']) limitRefusals.inc({ limit }, 0)
  const tasksRemembered = new Gauge({ name: 'switchboard_tasks_remembered', help: 'upstream tasks (2025-11-25 experimental) created through this replica and not yet expired', registers: [registry] })

  // Children cached per label set: prom-client would otherwise hash the labels on every call.
  // The histogram has no endpoint label: its buckets times every endpoint would be too many series.
  const callChildren = new Map<string, { count: ReturnType<typeof calls.labels>, time: ReturnType<typeof callDuration.labels> }>()
  function observeCall (upstream: string, tool: string, outcome: CallOutcome, seconds: number, endpoint = ''): void {
    const key = `${upstream}\0${tool}\0${outcome}\0${endpoint}`
    let child = callChildren.get(key)
    if (child === undefined) {
      const labels = { upstream, tool, outcome }
      child = { count: calls.labels({ ...labels, endpoint }), time: callDuration.labels(labels) }
      callChildren.set(key, child)
    }
    child.count.inc()
    child.time.observe(seconds)
  }

  // Several replicas (sessions.store: redis)
  const crossReplica = new Counter({ name: 'switchboard_cross_replica_messages_total', help: 'messages between replicas (kind: response, cancel, removed, updated, log, retry: a 2026-07-28 retry sent to the replica whose call it resumes, task: a task request sent to the replica holding the task, resume: a resumed POST stream followed on the replica running its call, listing: a per-user upstream\'s listing a user taught one replica), by outcome: published here, delivered here, ignored here (not held here)', labelNames: ['kind', 'outcome'] as const, registers: [registry] })
  const upstreamAuth = new Counter({ name: 'switchboard_upstream_auth_total', help: 'credentials obtained for upstream requests, by auth type and outcome (ok, refreshed, connect_required, exchanged, exchange_failed, refresh_failed, revoked)', labelNames: ['upstream', 'type', 'outcome'] as const, registers: [registry] })
  const connectFlows = new Counter({ name: 'switchboard_connect_flows_total', help: 'steps of the per-user connect flow, by upstream and outcome (started, proven, identity_mismatch, link_reused, link_expired, completed, denied)', labelNames: ['upstream', 'outcome'] as const, registers: [registry] })
  const tokenStoreErrors = new Counter({ name: 'switchboard_token_store_errors_total', help: 'token vault operations that failed (the store could not be reached); cached tokens keep working', labelNames: ['op'] as const, registers: [registry] })
  const sessionStoreErrors = new Counter({ name: 'switchboard_session_store_errors_total', help: 'session store operations that failed (op: save, load, touch, remove, publish, subscribe)', labelNames: ['op'] as const, registers: [registry] })
  const unheldEvents = new Counter({ name: 'switchboard_unheld_stream_events_total', help: 'list_changed notifications for a session whose standalone stream no replica here carries, by outcome: stored (appended to that stream in Redis, for a resume on any replica), duplicate (another replica stored it), held (a live replica carries the stream), no_stream, failed', labelNames: ['outcome'] as const, registers: [registry] })
  const sessionStoreDuration = new Histogram({ name: 'switchboard_session_store_duration_seconds', help: 'session store operations that completed, by op', labelNames: ['op'] as const, buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5], registers: [registry] })

  // Guardrails and approval (issue 27).
  const approvals = new Counter({ name: 'switchboard_approvals_total', help: 'tools/call held by a policy rule with effect ask, by who was asked (via: client, operator) and outcome (approved, approved_session: approved for the rest of the session, denied, timeout, unavailable: the client cannot be asked, cancelled)', labelNames: ['upstream', 'via', 'outcome'] as const, registers: [registry] })
  const approvalsPending = new Gauge({ name: 'switchboard_approvals_pending', help: 'calls waiting for an approval now, by who is asked', labelNames: ['via'] as const, registers: [registry] })
  for (const via of ['client', 'operator']) approvalsPending.set({ via }, 0)
  const toolScanFindings = new Counter({ name: 'switchboard_tool_scan_findings_total', help: 'findings of the tool-definition scan (scanning), by upstream and rule, counted once per tool definition', labelNames: ['upstream', 'rule'] as const, registers: [registry] })
  const secretsFound = new Counter({ name: 'switchboard_guardrail_secrets_total', help: 'secrets found by guardrails, by upstream, kind (aws_access_key, github_token, slack_token, private_key, jwt, password, ...) and where (result, arguments)', labelNames: ['upstream', 'kind', 'where'] as const, registers: [registry] })
  const oversizeResults = new Counter({ name: 'switchboard_guardrail_oversize_results_total', help: 'tool results refused for being larger than guardrails.results.maxBytes', labelNames: ['upstream'] as const, registers: [registry] })
  const guardrailWebhook = new Counter({ name: 'switchboard_guardrail_webhook_total', help: 'calls of the external guardrail hook, by side (on: request, result) and outcome (allow, deny, replace, timeout, error, invalid: an answer the gateway cannot read); timeout, error and invalid follow failMode', labelNames: ['on', 'outcome'] as const, registers: [registry] })

  // The operator console (issue 28) on the admin listener.
  const consoleLogins = new Counter({ name: 'switchboard_console_logins_total', help: 'console sign-ins (POST /admin/login) by outcome: ok, refused (a wrong token), throttled (a wrong token from an address held back for too many wrong tokens; the right one always signs in)', labelNames: ['outcome'] as const, registers: [registry] })
  for (const outcome of ['ok', 'refused', 'throttled']) consoleLogins.inc({ outcome }, 0)
  const adminThrottled = new Counter({ name: 'switchboard_admin_throttled_total', help: 'wrong admin tokens answered 429 because their address is held back (too many wrong tokens from it), by where they were sent (via: login for POST /admin/login, bearer for Authorization on any admin route); the right token is never held back', labelNames: ['via'] as const, registers: [registry] })
  for (const via of ['login', 'bearer']) adminThrottled.inc({ via }, 0)
  // Read at scrape time: a sign-in that expires unseen leaves the count then, not at the next login.
  let signInsNow = (): number => 0
  const consoleSignIns = new Gauge({ name: 'switchboard_console_sign_ins', help: 'console sign-ins held now (not expired, not signed out)', registers: [registry], collect () { this.set(signInsNow()) } })
  /** Where switchboard_console_sign_ins is read from (the admin listener's sign-ins). */
  const countConsoleSignIns = (count: () => number): void => { signInsNow = count }
  const consoleEventStreams = new Gauge({ name: 'switchboard_console_event_streams', help: 'open GET /admin/events streams', registers: [registry] })

  // Reloads, named after Prometheus' own prometheus_config_* series.
  const configReloads = new Counter({ name: 'switchboard_config_reloads_total', help: 'config reloads (SIGHUP, POST /admin/reload, --watch) by outcome: ok, invalid (nothing applied), error (applying failed)', labelNames: ['outcome'] as const, registers: [registry] })
  for (const outcome of ['ok', 'invalid', 'error']) configReloads.inc({ outcome }, 0)
  const configLastReloadSuccessful = new Gauge({ name: 'switchboard_config_last_reload_successful', help: '1 when the last reload (or the start) applied its config, 0 when it was refused or failed', registers: [registry] })
  configLastReloadSuccessful.set(1)
  const configLastReloadSuccessTimestamp = new Gauge({ name: 'switchboard_config_last_reload_success_timestamp_seconds', help: 'when a config was last applied (start or reload), Unix seconds', registers: [registry] })
  configLastReloadSuccessTimestamp.set(Date.now() / 1000)

  return {
    registry,
    consoleLogins,
    adminThrottled,
    consoleSignIns,
    countConsoleSignIns,
    consoleEventStreams,
    approvals,
    approvalsPending,
    toolScanFindings,
    secretsFound,
    oversizeResults,
    guardrailWebhook,
    configReloads,
    configLastReloadSuccessful,
    configLastReloadSuccessTimestamp,
    crossReplica,
    sessionStoreErrors,
    upstreamAuth,
    connectFlows,
    tokenStoreErrors,
    sessionStoreDuration,
    unheldEvents,
    observeCall,
    inputRequired,
    inputRequiredPending,
    listensActive,
    limitRefusals,
    tasksRemembered,
    upstreamUp,
    upstreamProcesses,
    upstreamSpawns,
    upstreamLazyStart,
    upstreamReconnects,
    upstreamTools,
    sessions,
    toolSearches,
    catalogTools,
    catalogRenamed,
    catalogItems,
    resourceCollisions,
    notifications,
    forwarded,
    serverRequests,
    httpRejections,
    httpTimeouts,
    authFailures,
    policyDenials,
    rateLimited,
    rateLimitStoreErrors,
    rateLimitFallback,
    upstreamInFlight,
    upstreamQueued,
    principalConnections,
    toolQuarantined,
    toolDefinitionChanges,
    circuitState,
    circuitTransitions,
    circuitRejections,
    toolRetries
  }
}

export type Metrics = ReturnType<typeof createMetrics>
