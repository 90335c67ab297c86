/**
 * Kubernetes Services as `kubectl get svc -A -o yaml` prints them (a `kind: List`), or as manifests
 * (one or more YAML documents, each a Service or a list of them): the fields cloud-provider-openstack
 * reads when it builds a Service's load balancer.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parseAllDocuments } from 'yaml';

const Port = Type.Object({
  name: Type.Optional(Type.String()),
  protocol: Type.Optional(Type.String()),
  port: Type.Integer(),
  nodePort: Type.Optional(Type.Integer()),
});

const ServiceSchema = Type.Object({
  kind: Type.Literal('Service'),
  metadata: Type.Object({
    name: Type.String(),
    namespace: Type.Optional(Type.String()),
    annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
  }),
  spec: Type.Object({
    type: Type.Optional(Type.String()),
    ports: Type.Optional(Type.Array(Port)),
    loadBalancerClass: Type.Optional(Type.String()),
    loadBalancerIP: Type.Optional(Type.String()),
    loadBalancerSourceRanges: Type.Optional(Type.Array(Type.String())),
    ipFamilies: Type.Optional(Type.Array(Type.String())),
    externalTrafficPolicy: Type.Optional(Type.String()),
    healthCheckNodePort: Type.Optional(Type.Integer()),
    sessionAffinity: Type.Optional(Type.String()),
  }),
});

export type KubeService = Static<typeof ServiceSchema>;
export type ServicePort = Static<typeof Port>;

/** `namespace/name`, as kubectl names a Service. */
export const serviceName = (s: KubeService): string => `${s.metadata.namespace ?? 'default'}/${s.metadata.name}`;

/** Every Service in `text` (other kinds are passed over); the error names `source`, the document and the field. */
export function readServices(text: string, source: string): KubeService[] {
  const services: KubeService[] = [];
  for (const [index, doc] of parseAllDocuments(text).entries()) {
    if (doc.errors.length) throw new Error(`${source}: document ${index + 1}: ${doc.errors[0]!.message.split('\n')[0]}`);
    const data: unknown = doc.toJS();
    const listed = isObject(data) && Array.isArray(data.items);
    const items: unknown[] = listed ? (data.items as unknown[]) : [data];
    for (const [i, item] of items.entries()) {
      if (!isObject(item) || item.kind !== 'Service') continue;
      const error = Value.Errors(ServiceSchema, item).First();
      if (error) throw new Error(`${source}: document ${index + 1}${listed ? `, item ${i + 1}` : ''}: ${error.path} ${error.message}`);
      services.push(item as KubeService);
    }
  }
  return services;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
