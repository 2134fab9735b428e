// Kubernetes probes from consumer.status(): what /healthz and /readyz answer, as pure functions
// (examples/health.ts serves them; test/unit/examples/health-probes.test.ts checks every state).
import type { KinsumerStatus } from 'kinsumer';

/** An HTTP answer: 200 or 503, and a small JSON body saying why. */
export interface ProbeAnswer {
  readonly code: 200 | 503;
  readonly body: Record<string, unknown>;
}

/**
 * Liveness: is the process worth keeping? Only a client that failed (a fault of the whole group,
 * StartTimeoutError) or stopped is dead: restarting the process is then the cure. Starting,
 * paused and stopping (draining its leases) are alive: a restart would only lose work.
 */
export function liveness(status: KinsumerStatus): ProbeAnswer {
  const dead = status.state === 'failed' || status.state === 'stopped';
  return { code: dead ? 503 : 200, body: { status: dead ? status.state : 'ok', state: status.state } };
}

/**
 * Readiness: is it doing its job? Running, and its first shard check went through (`members` > 0):
 * it takes part in the assignment, and holds shards or stands by for them (a group with more
 * members than shards). Paused is not ready: it holds its leases but deliberately reads nothing (a
 * downstream is down), so a rolling update waits for it, while liveness keeps it from being restarted.
 */
export function readiness(status: KinsumerStatus): ProbeAnswer {
  const base = { state: status.state, shards: status.shards.length, members: status.members };
  if (status.state === 'running' && status.members > 0) return { code: 200, body: { ready: true, ...base } };
  const reason = status.state === 'running' ? 'joining: registered, waiting for its first shard check' : REASONS[status.state];
  return { code: 503, body: { ready: false, reason, ...base } };
}

const REASONS: Readonly<Record<Exclude<KinsumerStatus['state'], 'running'>, string>> = {
  starting: 'starting: checking its tables and stream, joining the group',
  paused: 'paused: holding its leases, reading nothing until resume()',
  draining: 'draining: handing its leases over, taking none (drain() or kinsumer drain)',
  unreachable: 'unreachable: no heartbeat accepted for two thirds of leaseTtlMs (see lastError); reading nothing',
  stopping: 'stopping: giving its leases back',
  stopped: 'stopped',
  failed: 'failed: a fault of the whole group or the start timeout (see the logs)',
};
