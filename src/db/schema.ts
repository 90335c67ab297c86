/**
 * The tables, each as its rows are stored. A table's typed record, its row type and the one
 * conversion between them live in `records/`; this is Kysely's map of them.
 */
import type { Row } from './records/codec.js';
import type { AcmeCertificateRecord } from './records/acme-certificate.js';
import type { AmphoraRecord, ListenerStatisticsRecord } from './records/amphora.js';
import type { AvailabilityZoneProfileRecord, AvailabilityZoneRecord, FlavorProfileRecord, FlavorRecord } from './records/catalog.js';
import type { CertificateInUseRecord } from './records/certificate-in-use.js';
import type { FailoverMemoryRecord } from './records/failover-memory.js';
import type { FreeAddressRecord, SubnetAllocationRecord } from './records/free-address.js';
import type { HealthMonitorRecord } from './records/health-monitor.js';
import type { JobRecord, JobStepRecord } from './records/job.js';
import type {
  KeyManagerAclRecord, KeyManagerConsumerRecord, KeyManagerContainerRecord, KeyManagerContainerSecretRecord, KeyManagerSecretRecord,
} from './records/key-manager.js';
import type { L7PolicyRecord } from './records/l7policy.js';
import type { L7RuleRecord } from './records/l7rule.js';
import type { ListenerRecord } from './records/listener.js';
import type { LoadBalancerRecord } from './records/load-balancer.js';
import type { MemberRecord } from './records/member.js';
import type { PoolRecord } from './records/pool.js';
import type { PortRecord } from './records/port.js';
import type { QuotaRecord } from './records/quota.js';
import type { TagRecord } from './records/tag.js';
import type { WorkerSessionRecord } from './records/worker-session.js';

export interface Database {
  load_balancer: Row<LoadBalancerRecord>;
  listener: Row<ListenerRecord>;
  pool: Row<PoolRecord>;
  member: Row<MemberRecord>;
  health_monitor: Row<HealthMonitorRecord>;
  l7policy: Row<L7PolicyRecord>;
  l7rule: Row<L7RuleRecord>;
  tag: TagRecord;
  quota: QuotaRecord;
  flavor_profile: FlavorProfileRecord;
  flavor: Row<FlavorRecord>;
  availability_zone_profile: AvailabilityZoneProfileRecord;
  availability_zone: Row<AvailabilityZoneRecord>;
  amphora: Row<AmphoraRecord>;
  listener_statistics: ListenerStatisticsRecord;
  port: PortRecord;
  subnet_allocation: SubnetAllocationRecord;
  free_address: FreeAddressRecord;
  job: Row<JobRecord>;
  job_step: JobStepRecord;
  key_manager_secret: KeyManagerSecretRecord;
  key_manager_container: KeyManagerContainerRecord;
  key_manager_container_secret: KeyManagerContainerSecretRecord;
  key_manager_acl: Row<KeyManagerAclRecord>;
  key_manager_consumer: KeyManagerConsumerRecord;
  certificate_in_use: CertificateInUseRecord;
  failover_memory: FailoverMemoryRecord;
  worker_session: WorkerSessionRecord;
  acme_certificate: Row<AcmeCertificateRecord>;
}

export type TableName = keyof Database;

