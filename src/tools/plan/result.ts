/**
 * What a capacity plan is made of, as `ostia plan --json` prints it and `GET /v2/ostia/plan` answers it: types
 * alone (the dashboard reads them too, without the planner's database and machine code).
 */
import type { CapacityPlan } from './capacity.js';

/** What one load balancer of a class holds: its amphorae, its ports, and what its flavor reserves on a cloud. */
export interface ClassFootprint {
  amphorae: number;
  /** On its VIP subnet: the VIP, and each amphora's base port where the network driver makes one. */
  vipAddresses: number;
  managementAddresses: number;
  vcpus: number;
  ramMiB: number;
  diskGiB: number;
}

export type MeasuredOperation = 'create' | 'failover';

export interface MeasuredTime {
  provider: string;
  /** null: the provider builds no amphorae. */
  topology: string | null;
  operation: MeasuredOperation;
  /** Jobs measured. */
  count: number;
  medianSeconds: number;
  maxSeconds: number;
}

export interface AmphoraFootprint {
  /** Running amphorae measured. */
  count: number;
  /** Median over them, MiB: the proportional set size of each one's processes (agent and HAProxy). */
  memoryMiB: number | null;
  /** Median size of each one's directory, MiB. */
  diskMiB: number | null;
}

/** The memory and disk an amphora is counted with on this machine, and where the figure comes from. */
export interface AmphoraMeasure {
  memoryMiB: number;
  diskMiB: number;
  source: string;
  measured: AmphoraFootprint;
}

export interface PlanClassResult {
  name: string;
  provider: string;
  topology: string | null;
  flavor: string | null;
  compute_flavor: string | null;
  count: number;
  listeners: number;
  vip_subnet: string;
  project_id: string | null;
  per_load_balancer: ClassFootprint;
  total: ClassFootprint;
  max_count: number | null;
  limited_by: string | null;
  measured: Record<MeasuredOperation, MeasuredTime | null>;
}

export interface AntiAffinity {
  verdict: 'impossible' | 'not-needed';
  sentence: string;
}

export interface PlanResult {
  source: 'file' | 'live';
  file: string | null;
  drivers: { compute: string; network: string };
  classes: PlanClassResult[];
  totals: ClassFootprint & { load_balancers: number; listeners: number };
  resources: Array<CapacityPlan['resources'][number] & { free_percent: number }>;
  amphora: AmphoraMeasure | null;
  measured_times: MeasuredTime[];
  hosts: string;
  anti_affinity: AntiAffinity;
  notes: string[];
  verdict: CapacityPlan['verdict'];
}
