/**
 * The health manager's counters as Prometheus metrics, in the registry of the process it runs
 * in (served by `GET /metrics` under `ostia up`). Refusals by reason are what a flood looks
 * like (alert on their rate); dropped reports and write failures are heartbeats lost on our
 * side, during which no amphora is failed over.
 */
import { Counter, type Registry } from 'prom-client';
import { REFUSALS } from '../../../amphora-agent/heartbeat.js';
import type { ReceiverCounters } from './receiver.js';

/** What the health manager counts (HealthManager.counters()): the receiver's counters and its own. */
export interface HealthCounters extends ReceiverCounters {
  /** Reports that lacked an enabled listener, so did not count as a sign of life. */
  incompleteReports: number;
  failoversTriggered: number;
}

export function registerHealthMetrics(registry: Registry, counters: () => HealthCounters): void {
  const counter = (name: string, help: string, values: (c: HealthCounters) => Array<[Record<string, string>, number]>, labelNames: string[] = []) =>
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const [labels, value] of values(counters())) this.inc(labels, value);
      },
    });
  counter('ostia_heartbeats_received_total', 'Heartbeat datagrams received.', (c) => [[{}, c.received]]);
  counter('ostia_heartbeats_accepted_total', 'Heartbeats accepted: signed by their amphora, fresh, new and well-formed.', (c) => [[{}, c.accepted]]);
  counter(
    'ostia_heartbeats_refused_total',
    'Heartbeat datagrams refused, by reason (malformed, bad_mac, oversize, replay, stale, unknown_amphora). A high rate is a flood or a misconfigured sender.',
    (c) => REFUSALS.map((reason) => [{ reason: snakeCase(reason) }, c.refused[reason]]),
    ['reason'],
  );
  counter(
    'ostia_heartbeats_dropped_total',
    'Heartbeats lost on our side: where=queue, dropped because the database fell behind; where=socket, dropped by the kernel with the receive buffer full. Failovers wait while this grows.',
    (c) => [
      [{ where: 'queue' }, c.overflowDropped],
      [{ where: 'socket' }, c.socketDropped],
    ],
    ['where'],
  );
  counter('ostia_heartbeat_write_failures_total', 'Batches of heartbeats the database refused; their reports are lost.', (c) => [[{}, c.writeFailures]]);
  counter('ostia_amphora_failovers_triggered_total', 'Failovers the health manager triggered for silent or ERROR amphorae.', (c) => [[{}, c.failoversTriggered]]);
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
